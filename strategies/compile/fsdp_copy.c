/* fsdp_copy.c: the GPU copies PyTorch FSDP runs around its per-unit collectives (ZeRO 3 with
 * data.fsdp.version; docs/design-notes.md, "FSDP as implemented"): their bytes, each a
 * memory-bound kernel, on the stream the real code runs it on. P: a unit's parameters on one
 * rank (after TP), n: the shard degree, P / n a rank's shard; bf16 parameters, fp32 shards. */
#include <assert.h>

#include "../../sim/cost/cost.h"
#include "compile_ctx.h"

/* GPU seconds of one memory-bound kernel reading and writing `bytes` in all on rank r: at the
 * memory-bound efficiency of the HBM bandwidth (at least the shortest kernel), plus the GPU
 * overhead every modelled kernel costs, at the rank's slowdown. */
static double kernel_s(const compile_ctx *cx, int r, double bytes)
{
    if (bytes <= 0)
        return 0.0;
    return (cost_memory_kernel_seconds(bytes, cx->c->device[r]) +
            cost_cuda_kernel_gpu_overhead_seconds()) *
           cx->prof_slowdown[cx->prof_of_rank[r]];
}

double fsdp_reduce_elem(const compile_ctx *cx)
{
    return cx->s->fsdp_version && cx->s->fsdp_reduce_bf16 ? 2.0 : cx->grad_elem;
}

/* FSDP1's gradient pre- and post-divide factors for n ranks (DefaultState's
 * _get_gradient_predivide_factor): f doubles while n % f == 0 and n / f > f; post = n / f. */
static double fsdp1_predivide(int n)
{
    int f = 1;
    while (n % f == 0 && n / f > f)
        f *= 2;
    return f;
}

/* The unit of stage p's FSDP step about to be recorded (every member is at the same step). */
static fsdp_step next_step(compile_ctx *cx, const emit_state *es, int p, double *params)
{
    int k = es->fsdp_next[(size_t)p * cx->n_sim];
    assert(k < es->fsdp_n[p]);
    fsdp_step st = es->fsdp_seq[(size_t)p * es->fsdp_cap + k];
    *params = compile_chunk_ref(cx, st.mc)->unit_params[st.unit];
    return st;
}

/* One copy kernel on each simulated member's compute stream, issued by the host after the
 * tasks before it; it becomes after[j] (and last_compute). */
static void compute_copies(compile_ctx *cx, int p, task_category cat, const char *label,
                           double bytes, int mb, uint32_t *after)
{
    int lab = graph_label(cx->g, label);
    double launch = cost_cuda_kernel_launch_seconds(); /* one PyTorch op, one kernel */
    for (int j = 0; j < cx->n_sim; j++) {
        int r = cx->sim_rank[(size_t)p * cx->n_sim + j];
        double gpu = kernel_s(cx, r, bytes);
        uint32_t id = graph_add_compute(cx->g, r, cat, gpu, lab, mb);
        graph_set_host(cx->g, id, HOST_ISSUE, launch, launch + gpu);
        if (after[j] != NONE)
            graph_add_edge(cx->g, after[j], id);
        after[j] = id;
        cx->last_compute[r] = id;
    }
}

void fsdp_copy_unit_open(compile_ctx *cx, const emit_state *es, int p, uint32_t *first,
                         uint32_t *after)
{
    double P;
    fsdp_step st = next_step(cx, es, p, &P);
    if (cx->s->fsdp_version != 2 || !zero_fsdp_gathers(cx, st))
        return;
    /* split_with_sizes_copy: the all-gather output (2P) read, each parameter's storage written */
    compute_copies(cx, p, st.backward ? CAT_BACKWARD : CAT_FORWARD, "fsdp all-gather copy-out",
                   4 * P, st.mb, after);
    for (int j = 0; j < cx->n_sim; j++)
        first[j] = after[j];
}

void fsdp_copy_unit_close(compile_ctx *cx, const emit_state *es, int p, uint32_t *last,
                          uint32_t *after)
{
    double P;
    fsdp_step st = next_step(cx, es, p, &P);
    if (cx->s->fsdp_version != 2 || !st.backward)
        return;
    /* chunk_cat: the bf16 gradients (2P) read, the reduce-scatter input written in reduce_dtype */
    compute_copies(cx, p, CAT_BACKWARD, "fsdp reduce-scatter copy-in",
                   (2 + fsdp_reduce_elem(cx)) * P, st.mb, after);
    for (int j = 0; j < cx->n_sim; j++)
        last[j] = after[j];
}

/* One task of `seconds` on the DP stream of simulated replica d of (p, t), after dep (NONE:
 * the stream alone). */
static void dp_copy(compile_ctx *cx, int p, int t, int d, const char *label, double seconds, int mb,
                    uint32_t dep)
{
    int r = compile_rank_of(cx->s, t, d, p);
    uint32_t id = graph_add_compute_on(cx->g, r, STREAM_DP, CAT_DP_COMM, seconds,
                                       graph_label(cx->g, label), mb);
    if (dep != NONE)
        graph_add_edge(cx->g, dep, id);
}

void fsdp_copy_gather_in(compile_ctx *cx, int p, int t, double P, int mb, const uint32_t *dep)
{
    int v = cx->s->fsdp_version;
    if (!v)
        return;
    double shard = P / cx->shard;
    for (int d = 0; d < cx->dp_sim; d++) {
        int r = compile_rank_of(cx->s, t, d, p);
        /* the fp32 shard cast to bf16 (4 + 2 bytes an element); FSDP2 then copies it into the
         * flat all-gather input (2 + 2); FSDP1 gathers from the cast shard itself */
        double s = kernel_s(cx, r, 6 * shard) + (v == 2 ? kernel_s(cx, r, 4 * shard) : 0.0);
        dp_copy(cx, p, t, d, "fsdp all-gather copy-in", s, mb, dep[d]);
    }
}

void fsdp_copy_reduce_pre(compile_ctx *cx, int p, int t, double P, int mb, const uint32_t *dep)
{
    if (cx->s->fsdp_version != 1)
        return;
    double e = fsdp_reduce_elem(cx), pre = fsdp1_predivide(cx->shard);
    for (int d = 0; d < cx->dp_sim; d++) {
        int r = compile_rank_of(cx->s, t, d, p);
        /* the bf16 gradient cast to an fp32 reduce_dtype (2 + 4), then divided in place */
        double s =
            (e > 2 ? kernel_s(cx, r, 6 * P) : 0.0) + (pre > 1 ? kernel_s(cx, r, 2 * e * P) : 0.0);
        if (s > 0)
            dp_copy(cx, p, t, d, "fsdp grad cast", s, mb, dep[d]);
    }
}

void fsdp_copy_reduce_post(compile_ctx *cx, int p, int t, double P, int mb)
{
    int v = cx->s->fsdp_version;
    if (!v)
        return;
    double e = fsdp_reduce_elem(cx), shard = P / cx->shard;
    double post = v == 1 ? cx->shard / fsdp1_predivide(cx->shard) : 1.0;
    for (int d = 0; d < cx->dp_sim; d++) {
        int r = compile_rank_of(cx->s, t, d, p);
        /* FSDP1's post-divide of the shard in place; a bf16 shard cast to the fp32 parameter's
         * dtype (2 + 4); from micro-batch 1 on, added to the shard's gradient (4 + 4 + 4) */
        double s = (post > 1 ? kernel_s(cx, r, 2 * e * shard) : 0.0) +
                   (e < 4 ? kernel_s(cx, r, 6 * shard) : 0.0) +
                   (mb > 0 ? kernel_s(cx, r, 12 * shard) : 0.0);
        if (s > 0)
            dp_copy(cx, p, t, d, "fsdp grad accumulate", s, mb, NONE);
    }
}
