/* compile.c: turns (op graph, strategy tree, cluster) into the execution graph: per-rank
 * compute segments cut at tensor-parallel collectives, pipeline sends, data-parallel buckets. */
#include "compile.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "../sim/cost.h"
#include "chunk.h"
#include "schedule.h"

int compile_rank_of(const strategy *s, int t, int d, int p)
{
    assert(t >= 0 && t < s->tp && d >= 0 && d < s->dp * s->cp && p >= 0 && p < s->pp);
    int coord[4] = {0, 0, 0, 0}, size[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        switch (s->order[i]) {
        case AXIS_TENSOR:
            coord[i] = t;
            size[i] = s->tp;
            break;
        case AXIS_CONTEXT:
            coord[i] = d % s->cp;
            size[i] = s->cp;
            break;
        case AXIS_DATA:
            coord[i] = d / s->cp;
            size[i] = s->dp;
            break;
        case AXIS_PIPELINE:
            coord[i] = p;
            size[i] = s->pp;
            break;
        }
    }
    int r = coord[0] + size[0] * (coord[1] + size[1] * (coord[2] + size[2] * coord[3]));
    assert(r >= 0 && r < s->tp * s->cp * s->dp * s->pp);
    return r;
}

/* Chunk mc's template on rank r's GPU, built the first time a rank of that GPU profile needs
 * it. Every profile cuts a chunk into the same segments; only their times differ. */
static const chunk_template *tmpl_of(compile_ctx *cx, int r, int mc)
{
    assert(r >= 0 && r < cx->c->n_gpus && mc >= 0 && mc < cx->mcs);
    int k = cx->prof_of_rank[r];
    assert(k >= 0 && k < cx->n_prof);
    size_t i = (size_t)k * cx->mcs + (size_t)mc;
    if (!cx->built[i]) {
        chunk_template_build(cx, mc, cx->prof_dev[k], cx->prof_slowdown[k], &cx->tmpl[i]);
        cx->built[i] = 1;
    }
    return &cx->tmpl[i];
}

const chunk_template *compile_chunk_ref(compile_ctx *cx, int mc)
{
    return tmpl_of(cx, compile_rank_of(cx->s, 0, 0, stage_of_chunk(cx, mc)), mc);
}

/* GPU profiles: rank r's (device, slowdown) pair, numbered in order of first appearance. */
static void find_profiles(compile_ctx *cx)
{
    const cluster *c = cx->c;
    cx->prof_of_rank = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_of_rank);
    cx->prof_dev = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_dev);
    cx->prof_slowdown = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_slowdown);
    cx->n_prof = 0;
    for (int r = 0; r < c->n_gpus; r++) {
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        int k = 0;
        while (k < cx->n_prof && !(cx->prof_dev[k] == c->device[r] && cx->prof_slowdown[k] == slow))
            k++;
        if (k == cx->n_prof) {
            cx->prof_dev[k] = c->device[r];
            cx->prof_slowdown[k] = slow;
            cx->n_prof++;
        }
        cx->prof_of_rank[r] = k;
    }
    cx->tmpl = xcalloc((size_t)cx->n_prof * cx->mcs, sizeof *cx->tmpl);
    cx->built = xcalloc((size_t)cx->n_prof * cx->mcs, 1);
}

static void free_profiles(compile_ctx *cx)
{
    for (size_t i = 0; i < (size_t)cx->n_prof * cx->mcs; i++)
        if (cx->built[i])
            chunk_template_free(&cx->tmpl[i]);
    free(cx->tmpl);
    free(cx->built);
    free(cx->prof_of_rank);
    free(cx->prof_dev);
    free(cx->prof_slowdown);
}

/* Emit one segment list for the TP group `ranks` (tp members): compute tasks, with a TP
 * collective (all-reduce, or reduce-scatter + all-gather under sequence parallelism) after
 * each cut. With tensor.comm_overlap the cut's collectives run beside the segment that makes
 * their data (Megatron's userbuffer overlap) and the next segment waits for both. first/last
 * receive each member's first and last compute task; seg_ids (when not NULL) each segment's
 * task per member: seg_ids[i * tp + t]; gate (when not NULL) a task per segment and member
 * that must finish before the segment starts: gate[i * tp + t], NONE for none. Member t runs
 * lists[t]: its own GPU's times, the same segments and cuts on every member. after[t] (in and
 * out): what member t's next segment waits for besides its stream (the last TP collective),
 * so a list emitted in pieces chains as a whole. */
static void emit_segments(compile_ctx *cx, const segment_list *const *lists, const int *ranks,
                          int group, task_category cat, int micro, uint32_t *first, uint32_t *last,
                          uint32_t *seg_ids, const uint32_t *gate, uint32_t *after)
{
    htae_graph *g = cx->g;
    int tp = cx->tp, overlap = cx->s->tp_comm_overlap;
    uint32_t coll[tp], before[tp];
    for (int t = 0; t < tp; t++)
        assert(lists[t]->n == lists[0]->n);
    for (int i = 0; i < lists[0]->n; i++) {
        for (int t = 0; t < tp; t++) {
            const segment *sg = &lists[t]->seg[i];
            assert(sg->gpu >= 0 && sg->cpu >= 0 && sg->span >= 0);
            assert(sg->cut == lists[0]->seg[i].cut);
            before[t] = cx->last_compute[ranks[t]];
            uint32_t id, head;
            if (sg->ring) { /* context parallelism's attention: ring steps */
                head = context_emit_ring(cx, ranks[t], sg, cat, micro, after[t], &id);
            } else {
                head = id = htae_add_compute(g, ranks[t], cat, sg->gpu, sg->label, micro);
                htae_set_host(g, id, HOST_ISSUE, sg->cpu, sg->span);
            }
            if (after[t] != NONE)
                htae_add_edge(g, after[t], head);
            if (gate && gate[(size_t)i * tp + t] != NONE)
                htae_add_edge(g, gate[(size_t)i * tp + t], head);
            if (first[t] == NONE)
                first[t] = head;
            last[t] = id;
            after[t] = id;
            cx->last_compute[ranks[t]] = id;
            if (seg_ids)
                seg_ids[(size_t)i * tp + t] = id;
        }
        if (!lists[0]->seg[i].cut)
            continue;
        int sp = cx->s->sequence_parallel;
        coll_kind kinds[2] = {sp ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE, COLL_ALLGATHER};
        for (int j = 0; j < (sp ? 2 : 1); j++) {
            htae_add_collective(g, kinds[j], group, STREAM_TP, cx->tp_bytes, CAT_TP_COMM,
                                cx->label_tp[kinds[j]], micro, coll);
            for (int t = 0; t < tp; t++) {
                if (!(overlap && j == 0)) /* an overlapped one is issued with its GEMM */
                    htae_set_host(g, coll[t], HOST_ISSUE, cost_comm_call_seconds(), 0.0);
                uint32_t dep = overlap && j == 0 ? before[t] : after[t];
                if (dep != NONE)
                    htae_add_edge(g, dep, coll[t]);
                after[t] = coll[t];
            }
        }
    }
}

/* A pipeline send of one unit's output (activations or gradients) from `src` after its compute
 * task `after`. The host issues it and goes on; the synchronize Megatron does after its p2p
 * calls is modelled at the receiver, whose host waits for the data (HOST_WAIT). */
static uint32_t emit_send(compile_ctx *cx, int src, int dst, uint32_t after, int label, int mb)
{
    assert(src != dst && after != NONE);
    uint32_t x =
        htae_add_transfer(cx->g, src, dst, STREAM_PP, cx->pp_bytes, CAT_PP_COMM, label, mb);
    htae_set_host(cx->g, x, HOST_ISSUE, cost_comm_call_seconds(), 0.0);
    htae_add_edge(cx->g, after, x);
    return x;
}

static size_t xidx(const compile_ctx *cx, int d, int t, int mc, int mb)
{
    return (((size_t)d * cx->tp + (size_t)t) * (size_t)cx->mcs + (size_t)mc) * (size_t)cx->M +
           (size_t)mb;
}

static void emit_state_init(compile_ctx *cx, emit_state *es)
{
    memset(es, 0, sizeof *es);
    es->nx = (size_t)cx->dp * cx->tp * cx->mcs * cx->M;
    uint32_t **tables[] = {&es->fwd_first, &es->bwd_first, &es->fwd_prev,
                           &es->bwd_prev,  &es->fwd_in,    &es->bwd_in};
    for (size_t k = 0; k < sizeof tables / sizeof *tables; k++) {
        *tables[k] = xmalloc(es->nx * sizeof **tables[k]);
        for (size_t i = 0; i < es->nx; i++)
            (*tables[k])[i] = NONE;
    }
    es->maxseg = es->maxfseg = es->maxbuckets = 1;
    for (int mc = 0; mc < cx->mcs; mc++) {
        const chunk_template *ct = compile_chunk_ref(cx, mc);
        if (ct->bwd.n > es->maxseg)
            es->maxseg = ct->bwd.n;
        if (ct->fwd.n > es->maxfseg)
            es->maxfseg = ct->fwd.n;
        if (ct->n_buckets > es->maxbuckets)
            es->maxbuckets = ct->n_buckets;
    }
    es->segids = xmalloc((size_t)es->maxseg * cx->tp * sizeof *es->segids);
    es->gates = xmalloc((size_t)es->maxfseg * cx->tp * sizeof *es->gates);
    es->units = xmalloc((size_t)2 * cx->M * cx->v * sizeof *es->units);
    zero_state_init(cx, es);
}

static void emit_state_free(compile_ctx *cx, emit_state *es)
{
    zero_state_free(cx, es);
    free(es->gates);
    free(es->segids);
    free(es->units);
    free(es->fwd_first);
    free(es->fwd_prev);
    free(es->bwd_prev);
    free(es->bwd_first);
    free(es->fwd_in);
    free(es->bwd_in);
}

/* A group of `n` ranks in ring order; n is the degree of its axis. */
static int add_group(compile_ctx *cx, const int *ranks, int n, int degree)
{
    assert(n == degree);
    for (int i = 0; i < n; i++)
        assert(ranks[i] >= 0 && ranks[i] < cx->c->n_gpus);
    int id = htae_add_group(cx->g, ranks, n);
    assert(cx->g->groups[id].n == (uint32_t)degree);
    return id;
}

/* The ranks along one axis through (t, d, p): the TP peers of (d, p) when axis is
 * AXIS_TENSOR, the DP replicas of (t, p) when AXIS_DATA; in index order. */
static void axis_ranks(const compile_ctx *cx, parallel_axis axis, int t, int d, int p, int *out)
{
    int n = axis == AXIS_TENSOR ? cx->tp : cx->dp;
    for (int i = 0; i < n; i++)
        out[i] =
            axis == AXIS_TENSOR ? compile_rank_of(cx->s, i, d, p) : compile_rank_of(cx->s, t, i, p);
}

/* The end of the run of segments from i on that belong to one layer (one FSDP unit). */
static int unit_run_end(const segment_list *l, int i)
{
    int j = i + 1;
    while (j < l->n && l->seg[j].lo == l->seg[i].lo)
        j++;
    return j;
}

/* Emit segments [i, j) of each member's list `which` (0 fwd, 1 rec, 2 bwd) as one piece. */
static void emit_piece(compile_ctx *cx, const chunk_template *const *ct, const int *ranks,
                       int group, int which, int i, int j, int mb, uint32_t *first, uint32_t *last,
                       uint32_t *after)
{
    static const task_category cat[3] = {CAT_FORWARD, CAT_RECOMPUTE, CAT_BACKWARD};
    segment_list views[cx->tp];
    const segment_list *lists[cx->tp];
    for (int t = 0; t < cx->tp; t++) {
        const segment_list *l = which == 0 ? &ct[t]->fwd : which == 1 ? &ct[t]->rec : &ct[t]->bwd;
        assert(i < j && j <= l->n);
        views[t] = (segment_list){l->seg + i, j - i, 0};
        lists[t] = &views[t];
    }
    emit_segments(cx, lists, ranks, group, cat[which], mb, first, last, NULL, NULL, after);
}

/* ZeRO-3: a forward or backward pipeline unit as its FSDP units, each emitted as its own piece
 * (a backward one: its layer's full-recompute replay, then its backward, as FSDP's per-block
 * checkpointing runs it) and recorded for zero_emit_fsdp: its first task (what its gather
 * gates), the task before it (its start: when the next unit's gather is issued) and its last
 * task (what its reduce-scatter waits for). */
static void emit_fsdp_units(compile_ctx *cx, emit_state *es, int d, int p, const int *ranks,
                            int group, const chunk_template *const *ct, pipeline_unit unit,
                            uint32_t *first, uint32_t *last)
{
    int tp = cx->tp, which = unit.backward ? 2 : 0;
    const segment_list *pass = unit.backward ? &ct[0]->bwd : &ct[0]->fwd, *rec = &ct[0]->rec;
    uint32_t after[tp], ufirst[tp], ulast[tp], ubefore[tp];
    for (int t = 0; t < tp; t++)
        after[t] = NONE;
    for (int i = 0; i < pass->n;) {
        int j = unit_run_end(pass, i), layer = pass->seg[i].lo, r = 0;
        for (int t = 0; t < tp; t++) {
            ufirst[t] = ulast[t] = NONE;
            ubefore[t] = cx->last_compute[ranks[t]];
        }
        while (unit.backward && r < rec->n && rec->seg[r].lo != layer)
            r++;
        if (unit.backward && r < rec->n)
            emit_piece(cx, ct, ranks, group, 1, r, unit_run_end(rec, r), unit.micro, ufirst, ulast,
                       after);
        emit_piece(cx, ct, ranks, group, which, i, j, unit.micro, ufirst, ulast, after);
        for (int t = 0; t < tp; t++) {
            int k = es->fsdp_next[d * tp + t]++;
            fsdp_step st = es->fsdp_seq[(size_t)p * es->fsdp_cap + k];
            assert(k < es->fsdp_n[p] && st.backward == unit.backward && st.mb == unit.micro);
            assert(ct[0]->unit_layer[st.unit] == layer);
            uint32_t *rec_k = &es->fsdp_task[(((size_t)d * tp + t) * es->fsdp_cap + k) * 3];
            rec_k[FSDP_FIRST] = ufirst[t];
            rec_k[FSDP_BEFORE] = ubefore[t];
            rec_k[FSDP_LAST] = ulast[t];
            if (first[t] == NONE)
                first[t] = ufirst[t];
            last[t] = ulast[t];
        }
        i = j;
    }
}

/* The compute of a pipeline unit without FSDP: forward (ZeRO 1/2 with overlapped gathers:
 * micro-batch 0's segments wait for the bucket holding their layer), or the full-recompute
 * replay and backward, whose segments are kept as gradient-ready points for the DP buckets. */
static void emit_passes(compile_ctx *cx, emit_state *es, int d, int p, const int *ranks, int group,
                        const chunk_template *const *ct, pipeline_unit unit, uint32_t *first,
                        uint32_t *last)
{
    int tp = cx->tp, mc = unit.chunk * cx->pp + p, mb = unit.micro;
    const segment_list *lists[tp];
    uint32_t after[tp];
    for (int t = 0; t < tp; t++)
        after[t] = NONE;
    if (!unit.backward) {
        const uint32_t *gate = NULL;
        if (es->gather && mb == 0) { /* first use of the chunk's parameters */
            for (int i = 0; i < ct[0]->fwd.n; i++)
                for (int t = 0; t < tp; t++) {
                    size_t r = (size_t)compile_rank_of(cx->s, t, d, p), b = ct[0]->fwd_bucket[i];
                    assert(b < (size_t)es->maxbuckets);
                    es->gates[(size_t)i * tp + t] =
                        es->gather[(r * cx->mcs + mc) * es->maxbuckets + b];
                }
            gate = es->gates;
        }
        for (int t = 0; t < tp; t++)
            lists[t] = &ct[t]->fwd;
        emit_segments(cx, lists, ranks, group, CAT_FORWARD, mb, first, last, NULL, gate, after);
        return;
    }
    for (int t = 0; t < tp; t++)
        lists[t] = &ct[t]->rec;
    emit_segments(cx, lists, ranks, group, CAT_RECOMPUTE, mb, first, last, NULL, NULL, after);
    for (int t = 0; t < tp; t++) {
        lists[t] = &ct[t]->bwd;
        after[t] = NONE;
    }
    emit_segments(cx, lists, ranks, group, CAT_BACKWARD, mb, first, last, es->segids, NULL, after);
    if (es->seg_mbs == 1 && mb != cx->M - 1)
        return;
    for (int t = 0; t < tp; t++)
        for (int i = 0; i < ct[0]->bwd.n; i++)
            es->bwd_seg[bwd_seg_index(cx, es, d, t, mc, mb, i)] = es->segids[(size_t)i * tp + t];
}

/* One unit of the pipeline schedule (a forward or backward of one chunk and micro-batch) on the
 * TP group `ranks` of replica d, stage p: the pipeline runtime's step, the segments, then the
 * send of its output to the next (forward) or previous (backward) chunk's stage. */
static void emit_unit(compile_ctx *cx, emit_state *es, int d, int p, const int *ranks, int group,
                      pipeline_unit unit)
{
    const strategy *s = cx->s;
    htae_graph *g = cx->g;
    int tp = cx->tp, mc = unit.chunk * cx->pp + p, mb = unit.micro;
    assert(mc >= 0 && mc < cx->mcs && mb >= 0 && mb < cx->M);
    const chunk_template *ct[tp];
    uint32_t first[tp], last[tp], before[tp];
    for (int t = 0; t < tp; t++) {
        ct[t] = tmpl_of(cx, ranks[t], mc);
        first[t] = last[t] = NONE;
        before[t] = cx->last_compute[ranks[t]];
        if (cx->pp > 1) {
            /* The pipeline runtime's step before the unit: the host receives the unit's input
             * (blocking, then synchronize: Megatron's p2p), then does the schedule's own work.
             * Host time only. */
            uint32_t id = htae_add_compute(g, ranks[t], unit.backward ? CAT_BACKWARD : CAT_FORWARD,
                                           0.0, cx->label_pipe, mb);
            htae_set_host(g, id, HOST_ISSUE | HOST_WAIT, cost_pipeline_unit_overhead_seconds(),
                          0.0);
            first[t] = id;
            cx->last_compute[ranks[t]] = id;
        }
    }
    if (cx->fsdp)
        emit_fsdp_units(cx, es, d, p, ranks, group, ct, unit, first, last);
    else
        emit_passes(cx, es, d, p, ranks, group, ct, unit, first, last);
    for (int t = 0; t < tp; t++) {
        size_t xi = xidx(cx, d, t, mc, mb);
        if (!unit.backward) {
            es->fwd_first[xi] = first[t];
            es->fwd_prev[xi] = before[t];
            if (mc + 1 < cx->mcs) {
                int dst = compile_rank_of(s, t, d, stage_of_chunk(cx, mc + 1));
                es->fwd_in[xidx(cx, d, t, mc + 1, mb)] =
                    emit_send(cx, ranks[t], dst, last[t], cx->label_send_act, mb);
            }
        } else {
            es->bwd_first[xi] = first[t];
            es->bwd_prev[xi] = before[t];
            if (mc > 0) {
                int dst = compile_rank_of(s, t, d, stage_of_chunk(cx, mc - 1));
                es->bwd_in[xidx(cx, d, t, mc - 1, mb)] =
                    emit_send(cx, ranks[t], dst, last[t], cx->label_send_grad, mb);
            }
        }
    }
}

/* Every simulated replica's stages, each running its schedule's units in order. */
static void emit_pipeline(compile_ctx *cx, emit_state *es)
{
    int *ranks = xmalloc((size_t)cx->tp * sizeof *ranks);
    for (int d = 0; d < cx->dp_sim; d++)
        for (int p = 0; p < cx->pp; p++) {
            axis_ranks(cx, AXIS_TENSOR, 0, d, p, ranks);
            int group = add_group(cx, ranks, cx->tp, cx->s->tp);
            int nu = pipeline_order(cx->s->schedule, cx->pp, p, cx->M, cx->v, es->units);
            assert(nu == 2 * cx->M * cx->v);
            for (int u = 0; u < nu; u++)
                emit_unit(cx, es, d, p, ranks, group, es->units[u]);
        }
    free(ranks);
}

/* A pipeline transfer gates the unit that consumes it, and starts only once the receiver has
 * posted its receive: Megatron and DeepSpeed receive just before the unit (recv_forward,
 * send_forward_recv_backward: blocking), so the transfer is on the receiver's critical path
 * instead of arriving ahead of time. Every send has its consumer on the peer. */
/* One incoming send: its consumer (the first task of the unit) waits for it, and it waits for
 * the previous unit's send to the same consumer. Returns 1 when there was a send. */
static int link_send(compile_ctx *cx, uint32_t in, uint32_t first, uint32_t prev)
{
    if (in == NONE)
        return 0;
    assert(first != NONE);
    assert((int)cx->g->tasks[in].peer == cx->g->tasks[first].rank);
    htae_add_edge(cx->g, in, first);
    if (prev != NONE)
        htae_add_edge(cx->g, prev, in);
    return 1;
}

static void link_pipeline_transfers(compile_ctx *cx, emit_state *es)
{
    size_t sends = 0, expected = 0;
    for (size_t i = 0; i < es->nx; i++) {
        sends += link_send(cx, es->fwd_in[i], es->fwd_first[i], es->fwd_prev[i]);
        sends += link_send(cx, es->bwd_in[i], es->bwd_first[i], es->bwd_prev[i]);
    }
    /* each simulated (replica, tensor index, micro-batch) crosses mcs - 1 chunk boundaries
     * forward and as many backward */
    expected = (size_t)2 * cx->dp_sim * cx->tp * cx->M * (cx->mcs - 1);
    assert(sends == expected);
    (void)sends;
    (void)expected;
}

/* The whole iteration, step by step, in the order the graph's task ids must follow (each
 * GPU's host issues its tasks in id order). */
static void emit_plan(compile_ctx *cx, compiled_plan *out)
{
    emit_state es;
    emit_state_init(cx, &es);
    zero_make_groups(cx, &es);
    zero_emit_param_gathers(cx, &es);
    emit_pipeline(cx, &es);
    link_pipeline_transfers(cx, &es);
    if (cx->cp > 1)
        context_link_rings(cx);
    zero_emit_fsdp(cx, &es);
    zero_emit_grad_buckets(cx, &es);
    zero_emit_optimizer(cx, out, &es);
    zero_emit_param_allgather(cx, &es);
    emit_state_free(cx, &es);
}

void compile_default_options(compile_options *o)
{
    o->fold_data_parallel = 1;
}

/* Whether the routes a -> b and a0 -> b0 have the same bottleneck bandwidth and latency. */
static int same_route(const cluster *c, int a, int b, int a0, int b0)
{
    /* the executor picks flat or hierarchical collectives by how a group spans nodes */
    if ((c->node_of_rank[a] == c->node_of_rank[b]) != (c->node_of_rank[a0] == c->node_of_rank[b0]))
        return 0;
    double bw, lat, bw0, lat0;
    cluster_route(c, a, b, &bw, &lat);
    cluster_route(c, a0, b0, &bw0, &lat0);
    if (isinf(bw) || isinf(bw0))
        return isinf(bw) && isinf(bw0) && fabs(lat - lat0) <= 1e-9 * fabs(lat0);
    return fabs(bw - bw0) <= 1e-9 * bw0 && fabs(lat - lat0) <= 1e-9 * fabs(lat0);
}

/* Folding needs replicas that provably behave like replica 0, position by position: the same
 * GPU model and slowdown, and for each stage the same bottleneck bandwidth and latency on the
 * routes between its TP peers, to its pipeline neighbours (both ways; the last stage's next
 * is the first under the interleaved schedule) and to its next context rank (both ways), with
 * the peers on the same node or not alike (so a TP group spans nodes the same way). DP
 * collectives run over all members' links folded or not, so their routes need no check. A
 * position is (tensor index, context index, stage); d runs over data x context indices. */
static int replicas_alike(const strategy *s, const cluster *c)
{
    int wrap = s->schedule == SCHED_INTERLEAVED && s->virtual_stages > 1, cp = s->cp;
    for (int d = cp; d < s->dp * cp; d++)
        for (int p = 0; p < s->pp; p++)
            for (int t = 0; t < s->tp; t++) {
                int d0 = d % cp, r = compile_rank_of(s, t, d, p), r0 = compile_rank_of(s, t, d0, p);
                if (c->device[r] != c->device[r0])
                    return 0;
                if (c->slowdown && c->slowdown[r] != c->slowdown[r0])
                    return 0;
                for (int u = 0; u < s->tp; u++)
                    if (u != t && !same_route(c, r, compile_rank_of(s, u, d, p), r0,
                                              compile_rank_of(s, u, d0, p)))
                        return 0;
                int q = p + 1 < s->pp ? p + 1 : (wrap ? 0 : -1);
                if (q >= 0 && q != p) {
                    int n = compile_rank_of(s, t, d, q), n0 = compile_rank_of(s, t, d0, q);
                    if (!same_route(c, r, n, r0, n0) || !same_route(c, n, r, n0, r0))
                        return 0;
                }
                if (cp > 1) {
                    int e0 = (d0 + 1) % cp, n = compile_rank_of(s, t, d - d0 + e0, p),
                        n0 = compile_rank_of(s, t, e0, p);
                    if (!same_route(c, r, n, r0, n0) || !same_route(c, n, r, n0, r0))
                        return 0;
                }
            }
    return 1;
}

/* The plan-level facts the report needs, and the rank -> (stage, replica) maps. */
static void describe_plan(compile_ctx *cx, compiled_plan *out)
{
    const strategy *s = cx->s;
    const cluster *c = cx->c;
    const workload_model *m = &cx->wg.model;
    snprintf(out->strategy_file, sizeof out->strategy_file, "%s", s->file);
    out->model = *m;
    strategy_plan_desc(s, &out->plan);
    out->gpus = c->n_gpus;
    out->tp = cx->tp;
    out->pp = cx->pp;
    out->dp = s->dp;
    out->cp = cx->cp;
    out->zero_shard = cx->shard;
    out->chunks = cx->v;
    out->micro_batches = cx->M;
    out->samples_per_iter = s->global_batch;
    out->tokens_per_iter = (double)s->global_batch * m->seq;
    out->model_flops_per_iter = (cx->wg.fwd_flops + cx->wg.bwd_flops) * cx->M * s->dp;
    out->params_total = cx->wg.total_params;
    /* the mean of the GPUs' peaks, so that gpus x it is the cluster's peak (exactly the one
     * GPU model's peak on a homogeneous cluster) */
    double peak0 = c->device[0]->peak_flops[s->precision], sum = 0;
    int same = 1;
    for (int r = 0; r < c->n_gpus; r++) {
        sum += c->device[r]->peak_flops[s->precision];
        same = same && c->device[r]->peak_flops[s->precision] == peak0;
    }
    out->peak_flops_per_gpu = same ? peak0 : sum / c->n_gpus;
    out->simulated_replicas = cx->dp_sim / cx->cp;
    out->chunk_layers = xmalloc((size_t)cx->mcs * sizeof *out->chunk_layers);
    for (int mc = 0; mc < cx->mcs; mc++)
        out->chunk_layers[mc] = cx->chunk_first[mc + 1] - cx->chunk_first[mc];
    out->stage_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->stage_of_rank);
    out->replica_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->replica_of_rank);
    for (int p = 0; p < cx->pp; p++)
        for (int d = 0; d < cx->dp; d++)
            for (int t = 0; t < cx->tp; t++) {
                out->stage_of_rank[compile_rank_of(s, t, d, p)] = p;
                out->replica_of_rank[compile_rank_of(s, t, d, p)] = d;
            }
}

static void intern_labels(compile_ctx *cx)
{
    htae_graph *g = cx->g;
    cx->label_tp[COLL_ALLREDUCE] = htae_label(g, "tp all-reduce");
    cx->label_tp[COLL_REDUCE_SCATTER] = htae_label(g, "tp reduce-scatter");
    cx->label_tp[COLL_ALLGATHER] = htae_label(g, "tp all-gather");
    cx->label_dp[COLL_ALLREDUCE] = htae_label(g, "dp grad all-reduce");
    cx->label_dp[COLL_REDUCE_SCATTER] = htae_label(g, "dp grad reduce-scatter");
    cx->label_dp[COLL_ALLGATHER] = htae_label(g, "dp param all-gather");
    cx->label_send_act = htae_label(g, "pp send activations");
    cx->label_send_grad = htae_label(g, "pp send gradients");
    cx->label_opt = htae_label(g, "optimizer step");
    cx->label_pipe = htae_label(g, "pipeline runtime");
    cx->label_fsdp_gather[0] = htae_label(g, "fsdp param all-gather fwd");
    cx->label_fsdp_gather[1] = htae_label(g, "fsdp param all-gather bwd");
    cx->label_fsdp_rs = htae_label(g, "fsdp grad reduce-scatter");
    cx->label_hsdp_ar = htae_label(g, "hsdp grad all-reduce");
    cx->label_cp[0] = htae_label(g, "cp ring send K/V");
    cx->label_cp[1] = htae_label(g, "cp ring send K/V + grads");
}

/* Memory per rank from its stage's chunks (the same on every GPU), against its own GPU's HBM. */
static void estimate_memory(compile_ctx *cx, compiled_plan *out)
{
    const cluster *c = cx->c;
    const chunk_template *stage_chunks[cx->v];
    out->memory = xcalloc((size_t)c->n_gpus, sizeof *out->memory);
    out->memory_capacity_of_rank =
        xmalloc((size_t)c->n_gpus * sizeof *out->memory_capacity_of_rank);
    for (int r = 0; r < c->n_gpus; r++) {
        int p = out->stage_of_rank[r];
        for (int k = 0; k < cx->v; k++)
            stage_chunks[k] = compile_chunk_ref(cx, k * cx->pp + p);
        compile_estimate_memory(cx, stage_chunks, p, &out->memory[r]);
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;
    }
}

/* What of expert parallelism the compiler emits so far: experts held whole on every rank
 * (expert degree 1) and, under tensor parallelism, split as the dense MLP is (expert tensor
 * degree = tensor degree). The rest is refused at the key rather than approximated. */
static int check_expert_compiled(const strategy *s, ps_error *err)
{
    if (s->model.experts == 0)
        return 0;
    if (s->ep > 1)
        return ps_error_set(err, PS_EINPUT, s->file, s->ep_loc.line, s->ep_loc.column,
                            "strategy.expert.degree",
                            "expert parallelism (degree %d) is parsed and validated but not "
                            "compiled yet (its all-to-alls are not emitted): use degree 1",
                            s->ep);
    if (s->etp != s->tp)
        return ps_error_set(err, PS_EINPUT, s->file, s->etp_loc.line, s->etp_loc.column,
                            "strategy.expert.tensor",
                            "expert tensor degree %d differs from the tensor degree %d: only "
                            "experts split as the dense MLP (expert.tensor = tensor.degree) "
                            "are compiled yet",
                            s->etp, s->tp);
    return 0;
}

int compile_plan(const strategy *s, const cluster *c, const compile_options *opt,
                 compiled_plan *out, ps_error *err)
{
    compile_options defaults;
    if (!opt) {
        compile_default_options(&defaults);
        opt = &defaults;
    }
    memset(out, 0, sizeof *out);
    /* the plan's own rules (a strategy changed in memory may have broken them), then the GPUs */
    if (strategy_validate(s, err) || strategy_check_gpus(s, c->n_gpus, err) ||
        strategy_check_devices(s, c, err) || check_expert_compiled(s, err))
        return err->code;
    compile_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.s = s;
    cx.c = c;
    cx.tp = s->tp;
    cx.pp = s->pp;
    cx.cp = s->cp;
    cx.dp = s->dp * s->cp;
    cx.v = s->schedule == SCHED_INTERLEAVED ? s->virtual_stages : 1;
    cx.mcs = cx.pp * cx.v;
    cx.M = strategy_micro_batches(s);
    cx.chunk_first = xmalloc(((size_t)cx.mcs + 1) * sizeof *cx.chunk_first);
    if (strategy_chunk_layers(s, cx.chunk_first + 1, err)) { /* validated: cannot fail */
        free(cx.chunk_first);
        return err->code;
    }
    cx.chunk_first[0] = 0;
    for (int mc = 0; mc < cx.mcs; mc++)
        cx.chunk_first[mc + 1] += cx.chunk_first[mc];
    cx.dp_sim = opt->fold_data_parallel && replicas_alike(s, c) ? cx.cp : cx.dp;
    if (workload_build(&s->model, s->micro_batch, s->precision, &cx.wg, err)) {
        free(cx.chunk_first);
        return err->code;
    }

    const workload_model *m = &cx.wg.model;
    int elem = precision_bytes(s->precision);
    cx.tp_bytes = (double)s->micro_batch * (m->seq / cx.cp) * m->hidden * elem; /* a rank's */
    cx.pp_bytes = cx.tp_bytes / (s->sequence_parallel ? cx.tp : 1);
    cx.grad_elem = s->precision == PREC_FP16 ? 2.0 : 4.0; /* Megatron: bf16 reduces fp32 grads */
    cx.shard = strategy_shard_degree(s);
    cx.n_shard_groups = cx.dp / cx.shard;
    cx.fsdp = s->zero == 3 && cx.dp > 1;
    cx.layer_cuts = cx.dp > 1 && (cx.fsdp || s->overlap_param_gather);

    /* the ops of one context rank (its seq / cp tokens), divided over the TP ranks */
    workload_graph rank_ops;
    memset(&rank_ops, 0, sizeof rank_ops);
    if (cx.cp > 1 && context_rank_ops(&cx, &rank_ops, err)) {
        workload_graph_free(&cx.wg);
        free(cx.chunk_first);
        return err->code;
    }
    const workload_op *ops = cx.cp > 1 ? rank_ops.ops : cx.wg.ops;
    cx.sharded = xmalloc((size_t)cx.wg.n_ops * sizeof *cx.sharded);
    for (int i = 0; i < cx.wg.n_ops; i++)
        workload_op_shard(&ops[i], cx.tp, s->sequence_parallel,
                          strategy_vocab_parallel_for_layer(s, cx.wg.ops[i].layer), &cx.sharded[i]);
    workload_graph_free(&rank_ops);
    describe_plan(&cx, out);

    cx.g = htae_graph_create(c->n_gpus);
    cx.last_compute = xmalloc((size_t)c->n_gpus * sizeof *cx.last_compute);
    for (int r = 0; r < c->n_gpus; r++)
        cx.last_compute[r] = NONE;
    intern_labels(&cx);
    if (cx.cp > 1)
        context_rings_init(&cx);

    /* Templates per GPU profile (device, slowdown), built when a rank first needs one; the
     * first rank's of every chunk now, in chunk order. */
    find_profiles(&cx);
    for (int mc = 0; mc < cx.mcs; mc++)
        compile_chunk_ref(&cx, mc);
    estimate_memory(&cx, out);

    emit_plan(&cx, out);
    /* whatever GPU built them, a chunk's templates have the same segments and buckets */
    for (int k = 0; k < cx.n_prof; k++)
        for (int mc = 0; mc < cx.mcs; mc++)
            assert(!cx.built[(size_t)k * cx.mcs + mc] ||
                   chunk_template_same_shape(&cx.tmpl[(size_t)k * cx.mcs + mc],
                                             compile_chunk_ref(&cx, mc)));
    int rc = htae_graph_finalize(cx.g, err);
    out->graph = cx.g;

    free_profiles(&cx);
    context_rings_free(&cx);
    free(cx.sharded);
    free(cx.last_compute);
    free(cx.chunk_first);
    workload_graph_free(&cx.wg);
    return rc;
}

void compiled_plan_free(compiled_plan *p)
{
    htae_graph_free(p->graph);
    free(p->chunk_layers);
    free(p->stage_of_rank);
    free(p->replica_of_rank);
    free(p->memory);
    free(p->memory_capacity_of_rank);
    memset(p, 0, sizeof *p);
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
