/* memory.c: the per-GPU memory estimate of a compiled plan: weights, gradients, optimizer
 * state (sharded by ZeRO), activations alive at the schedule's peak, runtime buffers. */
#include "chunk.h"

/* Runtime state held per GPU besides weights, gradients, optimizer and activations: CUDA
 * context, NCCL and cuBLAS workspaces, allocator fragmentation. Megatron users budget 2-4 GiB;
 * first guess, refined with the memory model (issue 4). */
static const double COMPILE_RUNTIME_RESERVE_BYTES = 2.0 * 1073741824.0;

void compile_estimate_memory(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                             int p, memory_estimate *me)
{
    const strategy *s = cx->s;
    double params = 0, act = 0;
    for (int c = 0; c < cx->v; c++) {
        params += stage_chunks[c]->params;
        act += stage_chunks[c]->act_bytes;
    }
    int mixed = s->precision == PREC_FP16 || s->precision == PREC_BF16;
    double w = precision_bytes(s->precision);
    /* optimizer state per parameter: fp32 master copy when mixed, Adam's two moments, or
     * SGD's momentum */
    double opt = s->optimizer == OPT_ADAM  ? (mixed ? 12.0 : 8.0)
                 : s->optimizer == OPT_SGD ? (mixed ? 8.0 : 4.0)
                                           : 0.0;
    me->weights = params * w / (s->zero >= 3 ? cx->dp : 1);
    me->gradients = params * (mixed ? 4.0 : w) / (s->zero >= 2 ? cx->dp : 1);
    me->optimizer = params * opt / (s->zero >= 1 ? cx->dp : 1);

    /* Forward passes of one model chunk whose activations are alive at once on stage p, at
     * the end of warm-up: GPipe all of them, 1F1B p - stage, interleaved its warm-up plus one
     * (Korthikanti et al. 2022: the first stage holds L (1 + (p-1)/(p v)) layers' worth). */
    double inflight;
    double total = (double)cx->M * cx->v;
    switch (s->schedule) {
    case SCHED_GPIPE: inflight = cx->M; break;
    case SCHED_1F1B: inflight = cx->pp - p < cx->M ? cx->pp - p : cx->M; break;
    default: {
        double units = (cx->pp - p - 1) * 2 + (cx->v - 1) * cx->pp + 1;
        inflight = units < total ? units : total;
    }
    }
    me->activations = act / cx->v * inflight; /* act / v: one chunk's activations */
    me->buffers = COMPILE_RUNTIME_RESERVE_BYTES + (cx->dp > 1 ? 2 * s->bucket_mb * 1e6 : 0);
    me->total = me->weights + me->gradients + me->optimizer + me->activations + me->buffers;
}
