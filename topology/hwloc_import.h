/* hwloc_import.h: one node of a cluster read from an hwloc XML export of a real machine
 * (`lstopo --of xml`): its GPUs, NVLink, PCIe tree and NICs as a node_model (rules: hwloc_import.c). */
#ifndef PROTOSIM_HWLOC_IMPORT_H
#define PROTOSIM_HWLOC_IMPORT_H

#include <stddef.h>

#include "../sim/base/error.h"
#include "node_model.h"

/* What the file cannot say, from the command line (`protosim cluster --from-hwloc`). */
typedef struct hwloc_import_opts {
    const char *gpu; /* --gpu: device-table name of every GPU, instead of hwloc's name; or NULL */
    int nics;        /* --nics: NICs to place when the file has none; 0: not given */
    double nic_gbps; /* --nic-gbps: Gb/s per NIC per direction (exports carry none); 0: not given */
} hwloc_import_opts;

/* Build *out from the hwloc XML file at path (format v2, as hwloc 2.x writes it), loaded with
 * libhwloc keeping every I/O object. data_dir locates topology/devices/devices.yaml (NULL or "":
 * ps_data_dir()). When summary is not NULL it receives one line saying what was found and how it
 * was modelled (GPU name mapping, NVLink kind, NICs), for the user. Errors are PS_EINPUT naming the
 * file: unreadable or malformed file, no GPU, GPUs of different models, a GPU name not in the
 * device table (the message suggests --gpu), NICs without --nic-gbps, no NIC without --nics, a
 * PCIe link without speed, an asymmetric NVLink matrix. On error *out is empty (node_model_free
 * is safe on it). */
int hwloc_import_node(const char *path, const char *data_dir, const hwloc_import_opts *opts,
                      node_model *out, char *summary, size_t summary_cap, ps_error *err);

#endif
