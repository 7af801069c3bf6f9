/* context.c: context parallelism (Megatron-Core's and torchtitan's ring attention): the sequence
 * split over cp ranks, each attention core run as cp ring steps overlapping K/V transfers. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"
#include "compile_ctx.h"

/* Every ring a rank runs, in its program order: the k-th ring of a rank meets the k-th ring of
 * its context neighbours (they run the same schedule on the same chunks). A ring record is
 * RING_HEAD fields then the cp steps and the cp transfers (NONE where there is none). */
enum { RING_BACKWARD, RING_PRE, RING_END, RING_HEAD };

typedef struct rank_rings {
    uint32_t *rec; /* records of stride RING_HEAD + 2 cp */
    int n;
    size_t cap;
} rank_rings;

struct context_rings {
    rank_rings *of_rank; /* [n_gpus] */
    int *next, *prev;    /* [n_gpus]: the context ring's neighbours, -1 for ranks in none */
    int *index, *stage;  /* [n_gpus]: each rank's stage index and stage */
};

int context_ring_op(const compile_ctx *cx, const workload_op *op)
{
    return cx->cp > 1 && op->kind == OP_ATTENTION;
}

void context_ring_later_step(const workload_op *op, workload_op *out)
{
    *out = *op;
    if (!op->causal)
        return;
    /* 2 (s/2cp)^2 of the (s/cp)^2 scores of each head: the same tiles as half the heads' full
     * squares; the kernel still reads its Q, K and V blocks (bytes kept) */
    out->causal = 0;
    out->batch /= 2;
    out->fwd_flops /= 2;
    out->bwd_flops /= 2;
}

int context_rank_ops(const compile_ctx *cx, workload_graph *out, ps_error *err)
{
    const workload_graph *wg = &cx->wg;
    workload_model m = wg->model;
    assert(cx->cp > 1 && m.seq % (2 * cx->cp) == 0); /* strategy_validate */
    m.seq /= cx->cp;
    if (workload_build(&m, wg->micro_batch, wg->precision, out, err))
        return err->code;
    assert(out->n_ops == wg->n_ops);
    out->model = wg->model;
    /* a rank holds the whole model (a learned position table too), whatever tokens it runs */
    for (int i = 0; i < wg->n_ops; i++) {
        assert(!strcmp(out->ops[i].name, wg->ops[i].name));
        out->ops[i].params = wg->ops[i].params;
        out->ops[i].tied_params = wg->ops[i].tied_params;
        /* the ring steps need the fused kernel (strategy_validate) */
        assert(!context_ring_op(cx, &wg->ops[i]) || wg->ops[i].fused);
    }
    out->total_params = wg->total_params;
    out->active_params = wg->active_params;
    return 0;
}

double context_kv_chunk_bytes(const compile_ctx *cx)
{
    const workload_model *m = &cx->wg.model;
    /* K/V heads of a TP rank: kv_heads / tp, or the one its query heads use (kv_heads < tp) */
    double heads = m->kv_heads >= cx->tp ? (double)m->kv_heads / cx->tp : 1.0;
    return (double)cx->wg.micro_batch * ((double)m->seq / cx->cp) * 2.0 * heads * m->head_dim *
           precision_bytes(cx->s->precision);
}

void context_rings_init(compile_ctx *cx)
{
    int n = cx->c->n_gpus;
    struct context_rings *r = xcalloc(1, sizeof *r);
    r->of_rank = xcalloc((size_t)n, sizeof *r->of_rank);
    r->next = xmalloc((size_t)n * sizeof *r->next);
    r->prev = xmalloc((size_t)n * sizeof *r->prev);
    r->index = xmalloc((size_t)n * sizeof *r->index);
    r->stage = xmalloc((size_t)n * sizeof *r->stage);
    for (int i = 0; i < n; i++)
        r->next[i] = r->prev[i] = r->index[i] = r->stage[i] = -1;
    /* ring order: context index c to c + 1 (mod cp), the same data, tensor and stage */
    for (int p = 0; p < cx->pp; p++)
        for (int d = 0; d < cx->dp; d++)
            for (int t = 0; t < cx->tp; t++) {
                int c = d % cx->cp, base = d - c;
                int a = compile_rank_of(cx->s, t, d, p);
                int b = compile_rank_of(cx->s, t, base + (c + 1) % cx->cp, p);
                r->next[a] = b;
                r->prev[b] = a;
                r->index[a] = t + cx->tp * d;
                r->stage[a] = p;
            }
    cx->rings = r;
}

void context_rings_free(compile_ctx *cx)
{
    struct context_rings *r = cx->rings;
    if (!r)
        return;
    for (int i = 0; i < cx->c->n_gpus; i++)
        free(r->of_rank[i].rec);
    free(r->of_rank);
    free(r->next);
    free(r->prev);
    free(r->index);
    free(r->stage);
    free(r);
    cx->rings = NULL;
}

static size_t ring_stride(const compile_ctx *cx)
{
    return RING_HEAD + 2 * (size_t)cx->cp;
}

/* Transfer i of a ring (Transformer Engine's AttnFuncWithCPAndKVP2P): forward, steps 0 .. cp-2
 * pass the K/V chunk just used on to the next rank (cp - 1 transfers); backward, cp transfers:
 * the first the K/V chunk, the middle ones K/V and the gradients accumulated into it so far, the
 * last only the gradients, which thus come home to their chunk's owner. */
static double transfer_bytes(const compile_ctx *cx, int backward, int i)
{
    double kv = context_kv_chunk_bytes(cx);
    if (!backward)
        return i < cx->cp - 1 ? kv : 0.0;
    if (i == 0 || i == cx->cp - 1)
        return kv;
    return 2.0 * kv;
}

/* Inner folding: the ring transfers of the ranks of replica 0 whose twin is `rank`, as
 * companion pairs of its own (a pair set made once per simulated rank); -1 when none. */
static int ring_companions(compile_ctx *cx, int rank)
{
    const struct context_rings *r = cx->rings;
    int self = r->index[rank], p = r->stage[rank], B = cx->tp * cx->cp;
    int *set = &cx->cp_pairs[(size_t)p * cx->n_sim + (size_t)cx->member_of[self]];
    if (*set == -1) {
        int *src = xmalloc((size_t)2 * B * sizeof *src), *dst = src + B;
        int n = compile_twin_copies(cx, self, src);
        for (int k = 0; k < n; k++) {
            src[k] = compile_stage_rank(cx, src[k], p);
            dst[k] = r->next[src[k]];
        }
        *set = compile_copies_pair_set(cx, src, dst, n);
        free(src);
    }
    return *set >= 0 ? *set : -1;
}

/* The simulated rank whose rings `rank` runs as its own: itself, or under inner folding its
 * twin. */
static int ring_twin(const compile_ctx *cx, int rank)
{
    const struct context_rings *r = cx->rings;
    if (!cx->inner)
        return rank;
    return compile_stage_rank(cx, cx->twin_index[r->index[rank]], r->stage[rank]);
}

uint32_t context_emit_ring(compile_ctx *cx, int rank, const segment *sg, task_category cat,
                           int micro, uint32_t after, uint32_t *end)
{
    exec_graph *g = cx->g;
    int C = cx->cp, backward = cat == CAT_BACKWARD;
    assert(C > 1 && sg->ring && sg->n_ops == C);
    rank_rings *rr = &cx->rings->of_rank[rank];
    size_t stride = ring_stride(cx);
    xgrow(&rr->rec, sizeof *rr->rec, (size_t)(rr->n + 1) * stride, &rr->cap);
    uint32_t *rec = rr->rec + (size_t)rr->n++ * stride, *step = rec + RING_HEAD, *x = step + C;
    uint32_t pre = cx->last_compute[rank];
    assert(pre != NONE); /* the QKV projection (forward) or the output projection (backward) */
    rec[RING_BACKWARD] = (uint32_t)backward;
    rec[RING_PRE] = pre;
    /* step 0 the diagonal (causal) kernel, the later ones equal (add_ring); one launch each */
    double gpu0 = sg->gpu0, gpu = (sg->gpu - sg->gpu0) / (C - 1), cpu = sg->cpu / C;
    assert(gpu0 >= 0 && gpu >= 0);
    for (int i = 0; i < C; i++) {
        x[i] = NONE;
        double bytes = transfer_bytes(cx, backward, i);
        if (bytes > 0) {
            /* posted before step i computes, so it runs beside it */
            x[i] = graph_add_transfer(g, rank, cx->rings->next[rank], STREAM_CP, bytes, CAT_CP_COMM,
                                      cx->label_cp[backward], micro);
            graph_set_host(g, x[i], HOST_ISSUE, cost_comm_call_seconds(), 0.0);
            int set = cx->inner ? ring_companions(cx, rank) : -1;
            if (set >= 0)
                graph_set_companions(g, x[i], set);
            if (i == 0) {
                graph_add_edge(g, pre, x[i]);
                if (after != NONE)
                    graph_add_edge(g, after, x[i]);
            } else if (backward) {
                graph_add_edge(g, step[i - 1], x[i]); /* the gradients step i - 1 added */
            }
        }
        double t = i == 0 ? gpu0 : gpu;
        step[i] = graph_add_compute(g, rank, cat, t, sg->label, micro);
        graph_set_host(g, step[i], HOST_ISSUE, cpu, cpu + t);
        cx->last_compute[rank] = step[i];
    }
    rec[RING_END] = step[C - 1];
    if (backward) {
        /* the gradients of the rank's own K/V arrive with the last transfer from the previous
         * rank: the rest of the backward (the QKV projection's) waits for them */
        rec[RING_END] = graph_add_compute(g, rank, cat, 0.0, sg->label, micro);
        cx->last_compute[rank] = rec[RING_END];
    }
    *end = rec[RING_END];
    return step[0];
}

void context_link_rings(compile_ctx *cx)
{
    struct context_rings *r = cx->rings;
    exec_graph *g = cx->g;
    int C = cx->cp;
    size_t stride = ring_stride(cx);
    for (int rank = 0; rank < cx->c->n_gpus; rank++) {
        const rank_rings *me = &r->of_rank[rank];
        if (me->n == 0)
            continue;
        /* under inner folding a neighbour that is not simulated runs its twin's rings */
        const rank_rings *from = &r->of_rank[ring_twin(cx, r->prev[rank])];
        const rank_rings *to = &r->of_rank[ring_twin(cx, r->next[rank])];
        assert(from->n == me->n && to->n == me->n); /* the ranks of a ring run the same rings */
        for (int k = 0; k < me->n; k++) {
            const uint32_t *rec = me->rec + (size_t)k * stride, *step = rec + RING_HEAD;
            const uint32_t *x = step + C;
            const uint32_t *in = from->rec + (size_t)k * stride + RING_HEAD + C;
            const uint32_t *peer = to->rec + (size_t)k * stride;
            assert(peer[RING_BACKWARD] == rec[RING_BACKWARD]);
            graph_add_edge(g, peer[RING_PRE], x[0]); /* the receiver has posted its receive */
            for (int i = 1; i < C; i++) {
                if (x[i] != NONE)
                    graph_add_edge(g, in[i - 1], x[i]); /* passes on what it received */
                graph_add_edge(g, in[i - 1], step[i]);  /* the K/V chunk step i works on */
            }
            if (rec[RING_BACKWARD])
                graph_add_edge(g, in[C - 1], rec[RING_END]);
        }
    }
}
