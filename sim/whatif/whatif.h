/* whatif.h: Daydream's what-if questions on a replayed trace (`protosim replay --what-if SPEC`):
 * each spec transforms the traced graph (or the platform) before it becomes an execution graph. */
#ifndef PROTOSIM_WHATIF_H
#define PROTOSIM_WHATIF_H

#include <regex.h>

#include "../../topology/cluster.h"
#include "../../workloads/trace/trace.h"
#include "../base/error.h"

typedef enum {
    WHATIF_NETWORK,            /* network:F   every link's bandwidth x F */
    WHATIF_SCALE,              /* scale:REGEX:F   matching kernels x F */
    WHATIF_REMOVE,             /* remove:REGEX   matching kernels take no time */
    WHATIF_AMP,                /* amp   fp32 GEMM/conv kernels at half precision */
    WHATIF_FUSE_ELEMENTWISE,   /* fuse-elementwise   runs of elementwise kernels -> one */
    WHATIF_FUSE_OPTIMIZER,     /* fuse-optimizer   per-parameter kernels -> multi-tensor */
    WHATIF_PRIORITY_GRADIENTS, /* priority:gradients   P3's order of gradient collectives */
    WHATIF_DEVICE              /* device:GPU   compute kernels re-costed for GPU */
} whatif_kind;

typedef struct whatif_spec {
    whatif_kind kind;
    char text[256];  /* as given */
    double factor;   /* network, scale; priority: the slice size in bytes (0: whole buckets) */
    char device[48]; /* device */
    regex_t re;      /* scale, remove (compiled: free with whatif_spec_free) */
    int has_re;
} whatif_spec;

/* What one spec changed, summed over the traced ranks. */
typedef struct whatif_effect {
    int kernels;            /* kernels (or links, for network) it changed */
    int launches_removed;   /* launch calls that no longer happen */
    double kernel_s_before; /* the changed kernels' GPU time before, seconds (all steps) */
    double kernel_s_after;  /* and after */
    double host_s_removed;  /* host time removed (launches, per-tensor dispatch) */
} whatif_effect;

/* Parse one spec; a malformed one is a PS_EINPUT error naming `--what-if` and the spec. */
int whatif_parse(const char *text, whatif_spec *out, ps_error *err);
void whatif_spec_free(whatif_spec *s);

/* Apply a spec to the job (and, for network, to the loaded platform of c). The traced GPU of a
 * rank is its trace's deviceProperties name (with any "NVIDIA " or "Tesla " prefix dropped)
 * looked up in c->devices, or the cluster's GPU when the trace names none; a name not in
 * devices.yaml is a PS_EINPUT error naming the spec, the trace and the name, for the specs
 * that re-cost kernels (amp, device). `device:GPU` makes GPU the traced GPU of later specs. */
int whatif_apply(const whatif_spec *s, trace_job *j, const cluster *c, whatif_effect *eff,
                 ps_error *err);

/* priority:gradients (sim/whatif/whatif_priority.c; docs/design-notes.md, "Gradient priority"): the
 * traced step and a copy of it, the copy's forward ops waiting only for the gradient
 * collectives of their parameters and their share of the update, the collectives issued
 * first-needed first (sliced when the spec gives a size); the predicted step is the period.
 * Refused (PS_EINPUT naming the spec and the trace) where the trace does not tell which
 * parameters a gradient collective carries, or the optimizer runs collectives. */
int whatif_priority_gradients(const whatif_spec *s, trace_job *j, whatif_effect *eff,
                              ps_error *err);
/* The last step of every rank followed by a copy of it (trace_rank.steady), as the unchanged
 * replay a priority:gradients one is compared with needs; whatif_wants_steady_state: whether
 * any of the specs is priority:gradients and the job has gradient collectives. */
void whatif_steady_state(trace_job *j);
int whatif_wants_steady_state(const whatif_spec *v, int n, const trace_job *j);

#endif
