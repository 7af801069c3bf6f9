/* trace_profile.h: the profile database (measured GPU kernel times by op, input shapes, dtype
 * and device): its JSON file, and how `protosim profile` builds it from Kineto traces. */
#ifndef PROTOSIM_TRACE_PROFILE_H
#define PROTOSIM_TRACE_PROFILE_H

#include <stddef.h>

#include "../../sim/base/error.h"

/* One measured op: a PyTorch op (aten::addmm) on inputs of these shapes and this dtype took
 * `seconds` of GPU kernel time (the median of `count` occurrences). */
typedef struct profile_entry {
    char op[96];
    char dtype[24]; /* fp32, fp16, bf16, fp8, or the trace's type name when none of those */
    int n_inputs;
    int *ndim;    /* [n_inputs]: dimensions of each input, -1 for one that is not a tensor's
                     shape (a tensor list) */
    int *first;   /* [n_inputs]: offset of its dimensions in dims */
    double *dims; /* all inputs' dimensions, in order */
    double seconds;
    int count;
} profile_entry;

typedef struct profile_db {
    char file[512];  /* where it was read from, "" when built in memory */
    char device[48]; /* a devices.yaml name */
    profile_entry *e;
    int n;
    size_t cap;
} profile_db;

/* Read a table written by profile_db_write. Not JSON (file, line, column), a missing or
 * mistyped field, a negative or non-finite time, a count below 1 are PS_EINPUT errors naming
 * the file and the field ("entries[3].seconds"). */
int profile_db_load(const char *path, profile_db *out, ps_error *err);
/* Write db as JSON ({"protosim_profile": 1, "device", "entries": [...]}, docs/design-notes.md
 * "Profile database"), entries in db order. */
int profile_db_write(const char *path, const profile_db *db, ps_error *err);
/* Append an entry (copies op, dtype and the shapes); the db owns it. */
void profile_db_add(profile_db *db, const char *op, const char *dtype, int n_inputs,
                    const int *ndim, const double *dims, double seconds, int count);
void profile_db_free(profile_db *db);

/* The devices.yaml name of a GPU as CUDA names it (deviceProperties' "name": "NVIDIA
 * A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "NVIDIA H100 80GB HBM3"): into out, 0; -1 when the
 * name is not one of the known GPUs (docs/design-notes.md has the map), out then holding the
 * name without its vendor prefix. The one map of CUDA's names, for `profile` and the what-ifs. */
int profile_device_of_cuda_name(const char *cuda_name, char *out, size_t cap);

/* The dtype name of a trace's "Input type" ("float" -> fp32, "c10::Half" -> fp16,
 * "c10::BFloat16" -> bf16, "c10::Float8_e4m3fn" -> fp8), or NULL when it is not a float type. */
const char *profile_dtype_of_torch_type(const char *type);

typedef struct trace_profile_info {
    int ops;            /* aten:: ops that launched GPU work */
    int without_shapes; /* of those, ops the trace records no Input Dims for (not in the table) */
    int occurrences;    /* ops recorded in the table, all entries' counts added */
} trace_profile_info;

/* Read the traces (the replay reader: JSON or gzip) into *out: for every `aten::` op (on any
 * CPU thread, forward or under autograd) with recorded shapes (args "Input Dims" and "Input
 * type") that launched GPU work, the sum of the durations of the kernels, copies and memsets
 * its runtime calls (those inside its span on its thread, nested ops' included) launched;
 * entries by (op, shapes, dtype: the first floating-point input's type) with the median of
 * those sums and their count, sorted by op, shapes, dtype. device: the devices.yaml name of the
 * GPU, or NULL to take it from the traces' deviceProperties (profile_device_of_cuda_name).
 * PS_EINPUT errors name the file: a trace the reader refuses, no GPU name (none given and no
 * deviceProperties, or a name not in the map), traces of different GPUs, or a given device that
 * is not the traces' GPU; no recorded shapes in any trace. */
int trace_profile_build(const char *const *paths, int n_paths, const char *device, profile_db *out,
                        trace_profile_info *info, ps_error *err);

#endif
