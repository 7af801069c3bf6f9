/* chunk.h: the compiler's internal contract (strategies/ only): the compile context, and the
 * per-chunk segment templates (chunk.c) and memory estimate (memory.c) built from it. */
#ifndef PROTOSIM_CHUNK_H
#define PROTOSIM_CHUNK_H

#include <stdint.h>

#include "compile.h"

#define NONE UINT32_MAX

/* Compute between two tensor-parallel collectives, for one micro-batch on one TP rank. The
 * host thread issues its kernels one by one (cpu seconds in all); the GPU runs them as they
 * arrive, so the segment cannot end before `span` after its issue began (a flow shop of the
 * kernels: host launch, then GPU run). The executor plays the host's timeline (HOST_ISSUE):
 * a host-bound pass hides the TP collectives' time behind the issuing of later kernels, as
 * asynchronous NCCL calls do. */
typedef struct segment {
    double gpu, cpu, span;
    double params;     /* sharded parameters whose gradients this (backward) segment makes */
    int n_ops, lo, hi; /* how many ops, lowest and highest layer among them */
    int label;
    int cut; /* a TP collective follows */
} segment;

typedef struct segment_list {
    segment *seg;
    int n;
    size_t cap;
} segment_list;

/* Everything one model chunk needs on one kind of GPU, the same for every micro-batch. Only the
 * times (gpu, span) depend on the GPU: the segments, cuts, labels, buckets, parameters and
 * activations are the same on every GPU (chunk_template_same_shape). */
typedef struct chunk_template {
    segment_list fwd, bwd, rec; /* rec: forward replayed before backward (full recompute) */
    double params;              /* sharded */
    double act_bytes;           /* saved per micro-batch, after recompute savings */
    int *bucket_end;            /* backward segment index closing each gradient bucket */
    double *bucket_bytes;
    int *bucket_lo; /* lowest layer whose parameters the bucket holds */
    int n_buckets;
    int *fwd_bucket; /* per forward segment: the bucket holding its last layer */
} chunk_template;

typedef struct compile_ctx {
    const strategy *s;
    const cluster *c;
    workload_graph wg;
    workload_op *sharded;      /* [wg.n_ops]: the part one TP rank runs */
    int tp, pp, dp, v, mcs, M; /* mcs: model chunks = pp * v */
    int dp_sim;                /* replicas simulated: dp, or 1 when folded */
    double tp_bytes;           /* one TP collective's buffer: b * s * h elements */
    double pp_bytes;           /* one pipeline send */
    double grad_elem;          /* bytes per gradient element in DP reduction */
    /* GPU profiles: the distinct (device, slowdown) pairs of the cluster. Templates are built
     * per (profile, chunk) when first used: tmpl[profile * mcs + mc], built[] says which. */
    int n_prof;
    int *prof_of_rank; /* [n_gpus] */
    const device_spec **prof_dev;
    double *prof_slowdown;
    chunk_template *tmpl; /* [n_prof * mcs] */
    uint8_t *built;       /* [n_prof * mcs] */
    htae_graph *g;
    uint32_t *last_compute; /* per rank: latest compute task emitted, NONE at first */
    int label_tp[3], label_dp[3], label_send_act, label_send_grad, label_opt, label_pipe;
} compile_ctx;

static inline int stage_of_chunk(const compile_ctx *cx, int mc)
{
    return mc % cx->pp;
}

/* Build chunk mc's segments with op costs on `dev`, GPU (kernel) times multiplied by
 * `slowdown`, its gradient buckets and activation bytes. Labels are interned in cx->g. */
void chunk_template_build(compile_ctx *cx, int mc, const device_spec *dev, double slowdown,
                          chunk_template *ct);
void chunk_template_free(chunk_template *ct);
/* Whether a and b have the same segments (count, cuts, labels, parameters) and buckets. */
int chunk_template_same_shape(const chunk_template *a, const chunk_template *b);

/* Per-GPU memory of a rank on stage p (needs the stage's templates). */
void compile_estimate_memory(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                             int p, memory_estimate *me);

#endif
