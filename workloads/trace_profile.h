/* trace_profile.h: a profile database from Kineto traces (`protosim profile`): each PyTorch op
 * with recorded shapes and the GPU time of the kernels it launched, by (op, shapes, dtype). */
#ifndef PROTOSIM_TRACE_PROFILE_H
#define PROTOSIM_TRACE_PROFILE_H

#include "../sim/profile.h"

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
