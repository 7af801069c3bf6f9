/* memory.c: the per-GPU memory estimate of a compiled plan: weights, gradients, optimizer
 * state (sharded by ZeRO and HSDP), activations alive at the schedule's peak, runtime buffers;
 * and the fit rules over it (the tightest GPU, the GPUs over their capacity). */
#include <assert.h>
#include <stdlib.h>

#include "../../sim/base/xalloc.h"
#include "compile_ctx.h"

/* Runtime state held per GPU besides weights, gradients, optimizer and activations: CUDA
 * context, NCCL and cuBLAS workspaces, allocator fragmentation. Megatron users budget 2-4 GiB;
 * first guess, refined with the memory model (issue 4). */
static const double COMPILE_RUNTIME_RESERVE_BYTES = 2.0 * 1073741824.0;

/* ZeRO-3: the most full (gathered) parameters a rank of stage p holds at once: the largest sum
 * of two consecutive units of its FSDP program (the one computing, the one prefetched); under a
 * pipeline (fsdp_keep) every unit of the stage, gathered for the whole step; with
 * fsdp.reshard_after_forward false every unit too, gathered from its forward to its backward. */
static double fsdp_inflight_params(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                                   int p)
{
    if (!cx->fsdp)
        return 0.0;
    if (cx->fsdp_keep || (cx->s->fsdp_version && !cx->s->fsdp_reshard)) {
        double all = 0.0;
        for (int c = 0; c < cx->v; c++)
            all += stage_chunks[c]->params;
        return all;
    }
    pipeline_unit *units =
        xmalloc((size_t)pipeline_units(cx->s->schedule, cx->M, cx->v) * sizeof *units);
    int nu = compile_stage_order(cx, p, units);
    double prev = -1.0, most = 0.0;
    for (int i = 0; i < nu; i++) {
        const chunk_template *ct = stage_chunks[units[i].chunk];
        for (int j = 0; j < ct->n_units; j++) {
            double x = ct->unit_params[units[i].backward ? ct->n_units - 1 - j : j];
            double held = prev >= 0.0 ? prev + x : x;
            if (held > most)
                most = held;
            prev = x;
        }
    }
    free(units);
    return most;
}

/* A split-backward schedule's activations at its peak on stage p: walking its order, a
 * micro-batch holds its chunk's saved activations from its F to its B, then what its W needs
 * (each weight GEMM's X and dY) until its W; to the end of its backward when that is whole.
 * A merged forward is counted before the backward it overlaps frees anything. */
static double split_activations(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                                int p)
{
    int n = pipeline_units(cx->s->schedule, cx->M, cx->v);
    pipeline_unit *units = xmalloc((size_t)n * sizeof *units);
    int nu = compile_stage_order(cx, p, units);
    double held = 0, most = 0;
    for (int i = 0; i < nu; i++) {
        const chunk_template *ct = stage_chunks[units[i].chunk];
        if (!units[i].backward)
            held += ct->act_bytes;
        else if (units[i].part == PART_INPUT)
            held += ct->wgt_act_bytes - ct->act_bytes;
        else if (units[i].part == PART_WEIGHT)
            held -= ct->wgt_act_bytes;
        else /* a whole backward (DualPipeV's undeferred ones) */
            held -= ct->act_bytes;
        if (held > most)
            most = held;
    }
    free(units);
    return most;
}

void compile_estimate_memory(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                             int p, memory_estimate *me)
{
    const strategy *s = cx->s;
    double params = 0, expert = 0;
    for (int c = 0; c < cx->v; c++) {
        params += stage_chunks[c]->params;
        expert += stage_chunks[c]->expert_params;
    }
    /* ZeRO shards expert state over the expert shard group (edp ranks, HSDP: a replica's), the rest
     * over cx->shard; `sharded` is what a rank keeps of a sharded state */
    double dense = params - expert, sharded = dense / cx->shard + expert / cx->edp_shard;
    int mixed = s->precision == PREC_FP16 || s->precision == PREC_BF16;
    double w = precision_bytes(s->precision);
    /* optimizer state per parameter: fp32 master copy when mixed, Adam's two moments, or
     * SGD's momentum; without master weights no copy, the moments in the plan's precision */
    double opt = s->optimizer == OPT_ADAM  ? (mixed ? 12.0 : 8.0)
                 : s->optimizer == OPT_SGD ? (mixed ? 8.0 : 4.0)
                                           : 0.0;
    if (!s->master_weights)
        opt = s->optimizer == OPT_ADAM ? 2 * w : s->optimizer == OPT_SGD ? w : 0.0;
    /* ZeRO shards over cx->shard ranks (the DP degree, or HSDP's shard degree; the routed
     * experts of an expert layout over edp): optimizer states from stage 1, gradients from 2,
     * parameters from 3. ZeRO-3 also holds the full
     * parameters of the two units in flight (the one computing and the one prefetched) and the
     * full gradients of the unit being reduce-scattered; ZeRO 0-2 two gradient buckets. Under
     * a pipeline (fsdp_keep) ZeRO-3 holds the stage's full parameters and its full gradients
     * (accumulated in the reduce dtype) through the step; the reduced shards are written only
     * after the last backward, once the activations are gone, and are not added. */
    double g = mixed && s->master_weights ? 4.0 : w, unit_max = 0;
    for (int c = 0; c < cx->v; c++)
        for (int u = 0; u < stage_chunks[c]->n_units; u++)
            if (stage_chunks[c]->unit_params[u] > unit_max)
                unit_max = stage_chunks[c]->unit_params[u];
    me->weights =
        (s->zero >= 3 ? sharded : params) * w + fsdp_inflight_params(cx, stage_chunks, p) * w;
    me->gradients = cx->fsdp_keep
                        ? params * g
                        : (s->zero >= 2 ? sharded : params) * g + (cx->fsdp ? unit_max * g : 0);
    me->optimizer = (s->zero >= 1 ? sharded : params) * opt;

    /* Forward passes of one model chunk whose activations are alive at once on stage p, at
     * the end of warm-up: GPipe all of them, 1F1B p - stage, interleaved its warm-up plus one
     * (Korthikanti et al. 2022: the first stage holds L (1 + (p-1)/(p v)) layers' worth). */
    /* expert.overlap_a2a (the combined 1F1B) runs one more warm-up forward */
    double inflight;
    double total = (double)cx->M * cx->v;
    int extra = s->overlap_a2a;
    switch (s->schedule) {
    case SCHED_ZBH1:
    case SCHED_ZBH2:
    case SCHED_ZBV:
    case SCHED_DUALPIPEV: inflight = 0; break; /* split_activations */
    case SCHED_GPIPE: inflight = cx->M; break;
    case SCHED_1F1B: inflight = cx->pp - p + extra < cx->M ? cx->pp - p + extra : cx->M; break;
    default: {
        double units = (cx->pp - p - 1) * 2 + (cx->v - 1) * cx->pp + 1 + extra;
        inflight = units < total ? units : total;
    }
    }
    /* the stage's forwards in schedule order: pp micro-batches of each chunk in turn (one
     * chunk when not interleaved); chunks may hold different layers (uneven stages) */
    me->activations = 0;
    if (pipeline_splits_backward(s->schedule))
        me->activations = split_activations(cx, stage_chunks, p);
    else
        for (int j = 0; j < (int)inflight; j++)
            me->activations += stage_chunks[(j % (cx->pp * cx->v)) / cx->pp]->act_bytes;
    me->buffers =
        COMPILE_RUNTIME_RESERVE_BYTES + (cx->dp > 1 && !cx->fsdp ? 2 * s->bucket_mb * 1e6 : 0);
    me->total = me->weights + me->gradients + me->optimizer + me->activations + me->buffers;
}

/* Memory per rank from its stage's chunks (the same on every GPU of a stage, estimated once per
 * stage), against its own GPU's HBM. */
void compile_estimate_plan_memory(compile_ctx *cx, compiled_plan *out)
{
    const cluster *c = cx->c;
    const chunk_template **stage_chunks = xmalloc((size_t)cx->v * sizeof *stage_chunks);
    memory_estimate *of_stage = xmalloc((size_t)cx->pp * sizeof *of_stage);
    for (int p = 0; p < cx->pp; p++) {
        for (int k = 0; k < cx->v; k++)
            stage_chunks[k] = compile_chunk_ref(cx, compile_chunk_of(cx, p, k));
        compile_estimate_memory(cx, stage_chunks, p, &of_stage[p]);
    }
    out->memory = xcalloc((size_t)c->n_gpus, sizeof *out->memory);
    out->memory_capacity_of_rank =
        xmalloc((size_t)c->n_gpus * sizeof *out->memory_capacity_of_rank);
    for (int r = 0; r < c->n_gpus; r++) {
        out->memory[r] = of_stage[out->stage_of_rank[r]];
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;
    }
    free(of_stage);
    free(stage_chunks);
}

/* Whether GPU k has less memory headroom than GPU m. */
static int tighter(const compiled_plan *p, int k, int m)
{
    double ck = p->memory_capacity_of_rank[k], cm = p->memory_capacity_of_rank[m];
    if (ck == cm)
        return p->memory[k].total > p->memory[m].total;
    return ck - p->memory[k].total < cm - p->memory[m].total;
}

int compiled_plan_tightest_rank(const compiled_plan *p)
{
    assert(p->gpus > 0 && p->memory && p->memory_capacity_of_rank);
    int m = 0;
    for (int k = 1; k < p->gpus; k++)
        if (tighter(p, k, m))
            m = k;
    return m;
}

int compiled_plan_gpus_over_memory(const compiled_plan *p)
{
    int over = 0;
    for (int k = 0; k < p->gpus; k++)
        over += p->memory[k].total > p->memory_capacity_of_rank[k];
    return over;
}
