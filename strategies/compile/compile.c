/* compile.c: turns (op graph, strategy tree, cluster) into the execution graph: per-rank
 * compute segments cut at tensor-parallel collectives, pipeline sends, data-parallel buckets. */
#include "compile.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"
#include "compile_ctx.h"
#include "../schedule.h"

/* The TP collectives after a cut, one per simulated replica of stage p: an all-reduce, or a
 * reduce-scatter and an all-gather under sequence parallelism. before[j]: member j's compute
 * task before the segment that made the data (what an overlapped collective waits for). */
static void emit_tp_cut(compile_ctx *cx, int p, int micro, const uint32_t *before, uint32_t *after)
{
    int tp = cx->tp_sim, overlap = cx->s->tp_comm_overlap, sp = cx->s->sequence_parallel;
    coll_kind kinds[2] = {sp ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE, COLL_ALLGATHER};
    uint32_t *coll = xmalloc((size_t)tp * sizeof *coll); /* a task per tasked member */
    for (int d = 0; d < cx->dp_sim; d++)
        for (int k = 0; k < (sp ? 2 : 1); k++) {
            int c = graph_add_collective(cx->g, kinds[k], cx->tp_group[p * cx->dp_sim + d],
                                         STREAM_TP, cx->tp_bytes, CAT_TP_COMM,
                                         cx->label_tp[kinds[k]], micro, coll);
            if (cx->n_tp_comp) /* inner folding: the other context indices' TP groups */
                graph_set_coll_companions(
                    cx->g, c, cx->tp_comp + ((size_t)p * cx->dp_sim + d) * cx->n_tp_comp,
                    cx->n_tp_comp);
            for (int t = 0; t < tp; t++) {
                int j = d * tp + t;
                if (!(overlap && k == 0)) /* an overlapped one is issued with its GEMM */
                    graph_set_host(cx->g, coll[t], HOST_ISSUE, cost_comm_call_seconds(), 0.0);
                uint32_t dep = overlap && k == 0 ? before[j] : after[j];
                if (dep != NONE)
                    graph_add_edge(cx->g, dep, coll[t]);
                after[j] = coll[t];
            }
        }
    free(coll);
}

/* Emit one segment list on the simulated ranks of stage p (members j = d * tp_sim + t, n_sim of
 * them: every simulated replica's TP group, in lockstep so that collectives spanning replicas,
 * expert parallelism's, are issued in every member's program order): compute tasks, and
 * after each cut its collectives (TP: emit_tp_cut; EP: compile_emit_expert_cut). With
 * tensor.comm_overlap a TP cut's collectives run beside the segment that makes their data
 * (Megatron's userbuffer overlap) and the next segment waits for both. first/last receive each
 * member's first and last compute task; seg_ids (when not NULL) each segment's task per
 * member: seg_ids[i * n_sim + j]; gate (when not NULL) a task per segment and member that must
 * finish before the segment starts: gate[i * n_sim + j], NONE for none. Member j runs
 * lists[j]: its own GPU's times, the same segments and cuts on every member. after[j] (in and
 * out): what member j's next segment waits for besides its stream (the last collective), so a
 * list emitted in pieces chains as a whole. */
static void emit_segments(compile_ctx *cx, const segment_list *const *lists, int p,
                          task_category cat, int micro, uint32_t *first, uint32_t *last,
                          uint32_t *seg_ids, const uint32_t *gate, uint32_t *after)
{
    exec_graph *g = cx->g;
    int n = cx->n_sim;
    const int *ranks = cx->sim_rank + (size_t)p * n;
    uint32_t *before = xmalloc((size_t)n * sizeof *before); /* n_sim: up to the plan's GPUs */
    for (int j = 0; j < n; j++)
        assert(lists[j]->n == lists[0]->n);
    for (int i = 0; i < lists[0]->n; i++) {
        for (int j = 0; j < n; j++) {
            const segment *sg = &lists[j]->seg[i];
            assert(sg->gpu >= 0 && sg->cpu >= 0 && sg->span >= 0);
            assert(sg->cut == lists[0]->seg[i].cut);
            before[j] = cx->last_compute[ranks[j]];
            uint32_t id, head;
            if (sg->ring) { /* context parallelism's attention: ring steps */
                head = context_emit_ring(cx, ranks[j], sg, cat, micro, after[j], &id);
            } else {
                head = id = graph_add_compute(g, ranks[j], cat, sg->gpu, sg->label, micro);
                graph_set_host(g, id, HOST_ISSUE, sg->cpu, sg->span);
            }
            if (after[j] != NONE)
                graph_add_edge(g, after[j], head);
            if (gate && gate[(size_t)i * n + j] != NONE)
                graph_add_edge(g, gate[(size_t)i * n + j], head);
            if (first[j] == NONE)
                first[j] = head;
            last[j] = id;
            after[j] = id;
            cx->last_compute[ranks[j]] = id;
            if (seg_ids)
                seg_ids[(size_t)i * n + j] = id;
        }
        int cut = lists[0]->seg[i].cut;
        if (cut == CUT_TP)
            emit_tp_cut(cx, p, micro, before, after);
        else if (cut != CUT_NONE)
            compile_emit_expert_cut(cx, p, cut, micro, after);
    }
    free(before);
}

/* A pipeline send of one unit's output (activations or gradients) from `src` after its compute
 * task `after`. The host issues it and goes on; the synchronize Megatron does after its p2p
 * calls is modelled at the receiver, whose host waits for the data (HOST_WAIT). */
static uint32_t emit_send(compile_ctx *cx, int src, int dst, uint32_t after, int label, int mb)
{
    assert(src != dst && after != NONE);
    uint32_t x =
        graph_add_transfer(cx->g, src, dst, STREAM_PP, cx->pp_bytes, CAT_PP_COMM, label, mb);
    graph_set_host(cx->g, x, HOST_ISSUE, cost_comm_call_seconds(), 0.0);
    graph_add_edge(cx->g, after, x);
    return x;
}

/* The pipeline tables' index of simulated replica d, tensor index t (d < dp_sim, t < tp_sim). */
static size_t xidx(const compile_ctx *cx, int d, int t, int mc, int mb)
{
    assert(d >= 0 && d < cx->dp_sim && t >= 0 && t < cx->tp_sim);
    return (((size_t)d * cx->tp_sim + (size_t)t) * (size_t)cx->mcs + (size_t)mc) * (size_t)cx->M +
           (size_t)mb;
}

static void emit_state_init(compile_ctx *cx, emit_state *es)
{
    memset(es, 0, sizeof *es);
    es->nx = (size_t)cx->n_sim * cx->mcs * cx->M; /* the simulated ranks' only */
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
    es->segids = xmalloc((size_t)es->maxseg * cx->n_sim * sizeof *es->segids);
    es->gates = xmalloc((size_t)es->maxfseg * cx->n_sim * sizeof *es->gates);
    es->units = xmalloc((size_t)pipeline_units(cx->s->schedule, cx->M, cx->v) * sizeof *es->units);
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

/* The end of the run of segments from i on that belong to one layer (one FSDP unit). */
static int unit_run_end(const segment_list *l, int i)
{
    int j = i + 1;
    while (j < l->n && l->seg[j].lo == l->seg[i].lo)
        j++;
    return j;
}

/* Emit segments [i, j) of each member's list `which` (0 fwd, 1 rec, 2 bwd, 3 wgt) as one piece;
 * seg_ids (when not NULL) as emit_segments', from segment i on. */
static void emit_piece(compile_ctx *cx, const chunk_template *const *ct, int p, int which, int i,
                       int j, int mb, uint32_t *first, uint32_t *last, uint32_t *seg_ids,
                       uint32_t *after)
{
    static const task_category cat[4] = {CAT_FORWARD, CAT_RECOMPUTE, CAT_BACKWARD, CAT_BACKWARD};
    int n = cx->n_sim;
    segment_list *views = xmalloc((size_t)n * sizeof *views);
    const segment_list **lists = xmalloc((size_t)n * sizeof *lists);
    for (int t = 0; t < n; t++) {
        const segment_list *l = which == 0   ? &ct[t]->fwd
                                : which == 1 ? &ct[t]->rec
                                : which == 2 ? &ct[t]->bwd
                                             : &ct[t]->wgt;
        assert(i < j && j <= l->n);
        views[t] = (segment_list){l->seg + i, j - i, 0};
        lists[t] = &views[t];
    }
    emit_segments(cx, lists, p, cat[which], mb, first, last, seg_ids, NULL, after);
    free(views);
    free(lists);
}

/* ZeRO-3: a forward or backward pipeline unit as its FSDP units, each emitted as its own piece
 * (a backward one: its layer's full-recompute replay, then its backward, as FSDP's per-block
 * checkpointing runs it) and recorded for zero_emit_fsdp: its first task (what its gather
 * gates), the task before it (its start: when the next unit's gather is issued) and its last
 * task (what its reduce-scatter waits for). Members j = d * tp + t of stage p. */
static void emit_fsdp_units(compile_ctx *cx, emit_state *es, int p, const chunk_template *const *ct,
                            pipeline_unit unit, uint32_t *first, uint32_t *last)
{
    int n = cx->n_sim, which = unit.backward ? 2 : 0;
    const int *ranks = cx->sim_rank + (size_t)p * n;
    const segment_list *pass = unit.backward ? &ct[0]->bwd : &ct[0]->fwd, *rec = &ct[0]->rec;
    uint32_t *after = xmalloc((size_t)4 * n * sizeof *after);
    uint32_t *ufirst = after + n, *ulast = after + 2 * n, *ubefore = after + 3 * n;
    for (int j = 0; j < n; j++)
        after[j] = NONE;
    for (int i = 0; i < pass->n;) {
        int k2 = unit_run_end(pass, i), layer = pass->seg[i].lo, r = 0;
        for (int j = 0; j < n; j++) {
            ufirst[j] = ulast[j] = NONE;
            ubefore[j] = cx->last_compute[ranks[j]];
        }
        while (unit.backward && r < rec->n && rec->seg[r].lo != layer)
            r++;
        fsdp_copy_unit_open(cx, es, p, ufirst, after);
        if (unit.backward && r < rec->n)
            emit_piece(cx, ct, p, 1, r, unit_run_end(rec, r), unit.micro, ufirst, ulast, NULL,
                       after);
        emit_piece(cx, ct, p, which, i, k2, unit.micro, ufirst, ulast, NULL, after);
        fsdp_copy_unit_close(cx, es, p, ulast, after);
        for (int j = 0; j < n; j++) {
            int k = es->fsdp_next[p * n + j]++; /* j = d * tp + t */
            fsdp_step st = es->fsdp_seq[(size_t)p * es->fsdp_cap + k];
            assert(k < es->fsdp_n[p] && st.backward == unit.backward && st.mb == unit.micro);
            assert(ct[0]->unit_layer[st.unit] == layer);
            uint32_t *rec_k = &es->fsdp_task[(((size_t)p * n + j) * es->fsdp_cap + k) * 3];
            rec_k[FSDP_FIRST] = ufirst[j];
            rec_k[FSDP_BEFORE] = ubefore[j];
            rec_k[FSDP_LAST] = ulast[j];
            if (first[j] == NONE)
                first[j] = ufirst[j];
            last[j] = ulast[j];
        }
        i = k2;
    }
    free(after);
}

/* A backward unit's segment tasks (es->segids) kept as the gradient-ready points of the DP
 * buckets, when they are of a micro-batch the buckets wait for. */
static void keep_bwd_segments(compile_ctx *cx, emit_state *es, const chunk_template *ct, int mc,
                              int mb)
{
    int n = cx->n_sim, tp = cx->tp_sim;
    if (es->seg_mbs == 1 && mb != compile_chunk_micros(cx) - 1)
        return;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ct->bwd.n; i++)
            es->bwd_seg[bwd_seg_index(cx, es, j / tp, j % tp, mc, mb, i)] =
                es->segids[(size_t)i * n + j];
}

/* Segments [k, e) of a whole backward, their tasks the buckets' gradient-ready points
 * (es->segids). Under a split schedule (DualPipe's backwards that defer no W) each segment is
 * followed by its weight gradients (wgt's segment i waits for bwd's segment i, not for its cut,
 * and runs beside it), as autograd runs dX and dW layer by layer, and the W tasks are the ready
 * points. after: the chain of B segments and their cuts. */
static void emit_whole_bwd(compile_ctx *cx, emit_state *es, const chunk_template *const *ct, int p,
                           int k, int e, int mb, uint32_t *first, uint32_t *last, uint32_t *after)
{
    int n = cx->n_sim;
    if (k >= e)
        return;
    if (!pipeline_splits_backward(cx->s->schedule)) {
        emit_piece(cx, ct, p, 2, k, e, mb, first, last, es->segids + (size_t)k * n, after);
        return;
    }
    uint32_t *wafter = xmalloc((size_t)n * sizeof *wafter);
    for (int i = k; i < e; i++) {
        emit_piece(cx, ct, p, 2, i, i + 1, mb, first, last, NULL, after);
        memcpy(wafter, last, (size_t)n * sizeof *wafter);
        emit_piece(cx, ct, p, 3, i, i + 1, mb, first, last, es->segids + (size_t)i * n, wafter);
    }
    free(wafter);
}

/* The compute of a pipeline unit without FSDP: forward (ZeRO 1/2 with overlapped gathers:
 * micro-batch 0's segments wait for the bucket holding their layer), or the full-recompute
 * replay and backward, whose segments are kept as gradient-ready points for the DP buckets. */
static void emit_passes(compile_ctx *cx, emit_state *es, int p, const chunk_template *const *ct,
                        pipeline_unit unit, uint32_t *first, uint32_t *last)
{
    int n = cx->n_sim, mc = compile_chunk_of(cx, p, unit.chunk), mb = unit.micro;
    const segment_list **lists = xmalloc((size_t)n * sizeof *lists);
    uint32_t *after = xmalloc((size_t)n * sizeof *after);
    for (int j = 0; j < n; j++)
        after[j] = NONE;
    if (!unit.backward) {
        const uint32_t *gate = NULL;
        if (es->gather && mb == 0) { /* first use of the chunk's parameters */
            for (int i = 0; i < ct[0]->fwd.n; i++)
                for (int j = 0; j < n; j++) {
                    size_t r = (size_t)cx->sim_rank[(size_t)p * n + j], b = ct[0]->fwd_bucket[i];
                    assert(b < (size_t)es->maxbuckets);
                    es->gates[(size_t)i * n + j] =
                        es->gather[(r * cx->mcs + mc) * es->maxbuckets + b];
                }
            gate = es->gates;
        }
        for (int j = 0; j < n; j++)
            lists[j] = &ct[j]->fwd;
        emit_segments(cx, lists, p, CAT_FORWARD, mb, first, last, NULL, gate, after);
        free(lists);
        free(after);
        return;
    }
    for (int j = 0; j < n; j++)
        lists[j] = &ct[j]->rec;
    emit_segments(cx, lists, p, CAT_RECOMPUTE, mb, first, last, NULL, NULL, after);
    for (int j = 0; j < n; j++) {
        lists[j] = &ct[j]->bwd;
        after[j] = NONE;
    }
    if (unit.part == PART_WHOLE)
        emit_whole_bwd(cx, es, ct, p, 0, ct[0]->bwd.n, mb, first, last, after);
    else /* a split schedule's B: its W unit comes later */
        emit_segments(cx, lists, p, CAT_BACKWARD, mb, first, last, es->segids, NULL, after);
    free(lists);
    free(after);
    if (unit.part == PART_WHOLE) /* a split backward's gradients are ready after its W */
        keep_bwd_segments(cx, es, ct[0], mc, mb);
}

/* A zero-bubble schedule's W unit: the weight gradients of micro-batch unit.micro's backward
 * on the stage's compute stream, after its B there (the schedule's order). Nothing is sent
 * and no pipeline runtime step receives anything; its segments are the gradient-ready points
 * of the DP buckets. */
static void emit_weight_unit(compile_ctx *cx, emit_state *es, int p, pipeline_unit unit)
{
    int n = cx->n_sim, mc = compile_chunk_of(cx, p, unit.chunk);
    const int *ranks = cx->sim_rank + (size_t)p * n;
    const segment_list **lists = xmalloc((size_t)n * sizeof *lists);
    uint32_t *first = xmalloc((size_t)3 * n * sizeof *first), *last = first + n,
             *after = first + 2 * n;
    const chunk_template *ct0 = NULL;
    for (int j = 0; j < n; j++) {
        const chunk_template *ct = chunk_template_of(cx, ranks[j], mc);
        assert(ct->wgt.n == ct->bwd.n);
        if (j == 0)
            ct0 = ct;
        lists[j] = &ct->wgt;
        first[j] = last[j] = after[j] = NONE;
    }
    emit_segments(cx, lists, p, CAT_BACKWARD, unit.micro, first, last, es->segids, NULL, after);
    keep_bwd_segments(cx, es, ct0, mc, unit.micro);
    free(lists);
    free(first);
}

/* A unit being emitted on the simulated ranks of stage p: its templates per member, and per
 * member its first and last task and the task before it. */
typedef struct unit_emit {
    pipeline_unit unit;
    int mc;
    const chunk_template **ct;
    uint32_t *first, *last, *before;
} unit_emit;

/* A unit's start on stage p: the templates, and (pipelined) the pipeline runtime's step. */
static void unit_begin(compile_ctx *cx, int p, pipeline_unit unit, unit_emit *ue)
{
    exec_graph *g = cx->g;
    int n = cx->n_sim, mb = unit.micro;
    const int *ranks = cx->sim_rank + (size_t)p * n;
    ue->unit = unit;
    ue->mc = compile_chunk_of(cx, p, unit.chunk);
    assert(ue->mc >= 0 && ue->mc < cx->mcs && mb >= 0 && mb < cx->M);
    ue->ct = xmalloc((size_t)n * sizeof *ue->ct);
    ue->first = xmalloc((size_t)3 * n * sizeof *ue->first);
    ue->last = ue->first + n;
    ue->before = ue->first + 2 * n;
    for (int j = 0; j < n; j++) {
        ue->ct[j] = chunk_template_of(cx, ranks[j], ue->mc);
        ue->first[j] = ue->last[j] = NONE;
        ue->before[j] = cx->last_compute[ranks[j]];
        if (cx->pp > 1) {
            /* The pipeline runtime's step before the unit: the host receives the unit's input
             * (blocking, then synchronize: Megatron's p2p), then does the schedule's own work.
             * Host time only. */
            uint32_t id = graph_add_compute(g, ranks[j], unit.backward ? CAT_BACKWARD : CAT_FORWARD,
                                            0.0, cx->label_pipe, mb);
            graph_set_host(g, id, HOST_ISSUE | HOST_WAIT, cost_pipeline_unit_overhead_seconds(),
                           0.0);
            ue->first[j] = id;
            cx->last_compute[ranks[j]] = id;
        }
    }
}

/* A unit's end: its pipeline tables, the send of its output to the next (forward) or previous
 * (backward) chunk's stage; frees what unit_begin allocated. */
static void unit_finish(compile_ctx *cx, emit_state *es, int p, unit_emit *ue)
{
    const strategy *s = cx->s;
    int tp = cx->tp_sim, n = cx->n_sim, mc = ue->mc, mb = ue->unit.micro;
    const int *ranks = cx->sim_rank + (size_t)p * n;
    int next = strategy_next_chunk(s, mc), prev = strategy_prev_chunk(s, mc);
    for (int j = 0; j < n; j++) {
        int t = j % tp, d = j / tp;
        size_t xi = xidx(cx, d, t, mc, mb);
        if (!ue->unit.backward) {
            es->fwd_first[xi] = ue->first[j];
            es->fwd_prev[xi] = ue->before[j];
            if (next >= 0 && stage_of_chunk(cx, next) == p) {
                es->fwd_in[xidx(cx, d, t, next, mb)] = ue->last[j]; /* the V's turn: local */
            } else if (next >= 0) {
                int q = stage_of_chunk(cx, next), dst = compile_rank_of(s, t, d, q);
                uint32_t x = emit_send(cx, ranks[j], dst, ue->last[j], cx->label_send_act, mb);
                compile_send_companions(cx, x, j, p, q, compile_two_way(cx) ? q == p + 1 : 1);
                es->fwd_in[xidx(cx, d, t, next, mb)] = x;
            }
        } else {
            es->bwd_first[xi] = ue->first[j];
            es->bwd_prev[xi] = ue->before[j];
            if (prev >= 0 && stage_of_chunk(cx, prev) == p) {
                es->bwd_in[xidx(cx, d, t, prev, mb)] = ue->last[j]; /* the V's turn: local */
            } else if (prev >= 0) {
                int q = stage_of_chunk(cx, prev), dst = compile_rank_of(s, t, d, q);
                uint32_t x = emit_send(cx, ranks[j], dst, ue->last[j], cx->label_send_grad, mb);
                compile_send_companions(cx, x, j, p, q, compile_two_way(cx) ? q == p + 1 : 0);
                es->bwd_in[xidx(cx, d, t, prev, mb)] = x;
            }
        }
    }
    free(ue->ct);
    free(ue->first);
}

/* One unit of the pipeline schedule (a forward or backward of one chunk and micro-batch) on the
 * simulated ranks of stage p (every simulated replica's TP group): the pipeline runtime's step,
 * the segments, then the send of its output. */
static void emit_unit(compile_ctx *cx, emit_state *es, int p, pipeline_unit unit)
{
    unit_emit ue;
    unit_begin(cx, p, unit, &ue);
    if (cx->fsdp)
        emit_fsdp_units(cx, es, p, ue.ct, unit, ue.first, ue.last);
    else
        emit_passes(cx, es, p, ue.ct, unit, ue.first, ue.last);
    unit_finish(cx, es, p, &ue);
}

/* The end of the piece of list l starting at segment i: through its next expert cut (an
 * all-to-all follows it), else the list's end. */
static int piece_end(const segment_list *l, int i)
{
    while (i < l->n && l->seg[i].cut != CUT_EP_IN && l->seg[i].cut != CUT_EP_OUT)
        i++;
    return i < l->n ? i + 1 : l->n;
}

/* Megatron-Core's combined 1F1B (expert.overlap_a2a; combined_1f1b.py and
 * TransformerLayerSchedulePlan.run): forward unit f and backward unit b as one step, their
 * passes cut at the expert cuts into pieces issued in turn, b's first: compute b0 f0 b1 f1 ...,
 * each piece's all-to-all on the EP stream (c0 a0 c1 a1 ...), so b's combine backward runs
 * beside f's attention, f's dispatch beside b's expert backward, b's dispatch backward beside
 * f's experts and f's combine beside b's attention backward. The members' passes keep their
 * own dependencies (after_f, after_b); a pass left when the other ends runs alone. DualPipeV's
 * overlapped forward and backward chunks (its F&B steps) are the same merge, b's pieces with
 * their weight gradients (emit_whole_bwd). */
static void emit_merged(compile_ctx *cx, emit_state *es, int p, pipeline_unit f, pipeline_unit b)
{
    int n = cx->n_sim;
    unit_emit uf, ub;
    unit_begin(cx, p, f, &uf);
    unit_begin(cx, p, b, &ub);
    /* merged forwards follow the warm-up, which holds every chunk's micro-batch 0 (what the
     * overlapped parameter gathers gate); FSDP and full recompute are refused with it */
    assert(!cx->fsdp && f.micro > 0 && ub.ct[0]->rec.n == 0);
    uint32_t *after = xmalloc((size_t)2 * n * sizeof *after), *after_b = after + n;
    for (int j = 0; j < 2 * n; j++)
        after[j] = NONE;
    const segment_list *fl = &uf.ct[0]->fwd, *bl = &ub.ct[0]->bwd;
    assert(b.part == PART_WHOLE);
    for (int i = 0, k = 0; i < fl->n || k < bl->n;) {
        if (k < bl->n) {
            int e = piece_end(bl, k);
            emit_whole_bwd(cx, es, ub.ct, p, k, e, b.micro, ub.first, ub.last, after_b);
            k = e;
        }
        if (i < fl->n) {
            int e = piece_end(fl, i);
            emit_piece(cx, uf.ct, p, 0, i, e, f.micro, uf.first, uf.last, NULL, after);
            i = e;
        }
    }
    free(after);
    keep_bwd_segments(cx, es, ub.ct[0], ub.mc, b.micro);
    unit_finish(cx, es, p, &uf);
    unit_finish(cx, es, p, &ub);
}

/* Every stage's units in its schedule's order, each on all the stage's simulated ranks; a
 * merged forward (expert.overlap_a2a) with the backward after it. */
static void emit_pipeline(compile_ctx *cx, emit_state *es)
{
    for (int p = 0; p < cx->pp; p++) {
        int nu = compile_stage_order(cx, p, es->units);
        assert(nu <= pipeline_units(cx->s->schedule, cx->M, cx->v));
        for (int u = 0; u < nu; u++) {
            if (es->units[u].part == PART_WEIGHT) {
                emit_weight_unit(cx, es, p, es->units[u]);
            } else if (es->units[u].merged) {
                assert(u + 1 < nu && es->units[u + 1].backward);
                emit_merged(cx, es, p, es->units[u], es->units[u + 1]);
                u++;
            } else {
                emit_unit(cx, es, p, es->units[u]);
            }
        }
    }
}

/* A pipeline transfer gates the unit that consumes it, and starts only once the receiver has
 * posted its receive: Megatron and DeepSpeed receive just before the unit (recv_forward,
 * send_forward_recv_backward: blocking), so the transfer is on the receiver's critical path
 * instead of arriving ahead of time. Every send has its consumer on the peer. Under ZB-V a stage
 * sends activations and gradients to the same neighbour in an order its neighbour consumes
 * differently, and the zero-bubble runtime posts its receives ahead (non-blocking p2p): there
 * the transfer starts as soon as its data is ready (on one stream per GPU, in order, the two
 * directions would otherwise wait for each other). */
/* One incoming send: its consumer (the first task of the unit) waits for it, and it waits for
 * the previous unit's send to the same consumer. Returns 1 when there was a send. */
static int link_send(compile_ctx *cx, uint32_t in, uint32_t first, uint32_t prev)
{
    if (in == NONE)
        return 0;
    assert(first != NONE);
    if (cx->g->tasks[in].kind == TASK_COMPUTE) { /* a chunk handed on within its stage (ZB-V) */
        assert(cx->g->tasks[in].rank == cx->g->tasks[first].rank);
        graph_add_edge(cx->g, in, first);
        return 1;
    }
    assert((int)cx->g->tasks[in].peer == cx->g->tasks[first].rank);
    graph_add_edge(cx->g, in, first);
    if (prev != NONE && !compile_two_way(cx))
        graph_add_edge(cx->g, prev, in);
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
     * forward and as many backward; under DualPipe each copy's M / 2 cross pp - 1 */
    int copies = strategy_two_copies(cx->s) ? 2 : 1;
    expected = (size_t)2 * cx->dp_sim * cx->tp_sim * compile_chunk_micros(cx) * (cx->mcs - copies);
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
    zero_emit_copy_sync(cx, &es);
    zero_emit_optimizer(cx, out, &es);
    zero_emit_param_allgather(cx, &es);
    emit_state_free(cx, &es);
}

void compile_default_options(compile_options *o)
{
    o->fold_data_parallel = 1;
    o->profile = NULL;
    o->graph_micro_batches = 0;
}

/* What a compile holds besides the plan it hands out. */
static void compile_ctx_free(compile_ctx *cx)
{
    compile_orders_free(cx);
    chunk_profiles_free(cx);
    compile_free_stage_groups(cx);
    context_rings_free(cx);
    free(cx->sharded);
    free(cx->last_compute);
    compile_fold_free(cx);
    free(cx->chunk_first);
    workload_graph_free(&cx->wg);
}

/* Whatever GPU built them, a chunk's templates have the same segments and buckets. */
static void assert_templates_alike(compile_ctx *cx)
{
    for (int k = 0; k < cx->n_prof; k++)
        for (int mc = 0; mc < cx->mcs; mc++)
            assert(!cx->built[(size_t)k * cx->mcs + mc] ||
                   chunk_template_same_shape(&cx->tmpl[(size_t)k * cx->mcs + mc],
                                             compile_chunk_ref(cx, mc)));
    (void)cx;
}

int compile_plan(const strategy *s, const cluster *c, const compile_options *opt,
                 compiled_plan *out, ps_error *err)
{
    compile_options defaults;
    if (!opt) {
        compile_default_options(&defaults);
        opt = &defaults;
    }
    if (s->model.family == FAMILY_DLRM)
        return compile_dlrm_plan(s, c, out, err);
    memset(out, 0, sizeof *out);
    /* the plan's own rules (a strategy changed in memory may have broken them), then the GPUs */
    if (strategy_validate(s, err) || strategy_check_gpus(s, c->n_gpus, err) ||
        strategy_check_devices(s, c, err))
        return err->code;
    compile_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.s = s;
    cx.c = c;
    cx.tp = s->tp;
    cx.pp = s->pp;
    cx.cp = s->cp;
    cx.dp = s->dp * s->cp;
    cx.v = strategy_chunks_per_stage(s);
    cx.mcs = cx.pp * cx.v;
    cx.M = strategy_micro_batches(s);
    cx.slices = strategy_layer_slices(s);
    cx.chunk_first = xmalloc(((size_t)cx.slices + 1) * sizeof *cx.chunk_first);
    if (strategy_chunk_layers(s, cx.chunk_first + 1, err)) { /* validated: cannot fail */
        free(cx.chunk_first);
        return err->code;
    }
    cx.chunk_first[0] = 0;
    for (int i = 0; i < cx.slices; i++)
        cx.chunk_first[i + 1] += cx.chunk_first[i];
    cx.ep = s->ep;
    cx.etp = s->etp;
    cx.edp = cx.tp * cx.dp / (cx.ep * cx.etp);
    cx.expert_layout = s->model.experts > 0 && (cx.ep > 1 || cx.etp != cx.tp);
    cx.shard = strategy_shard_degree(s);
    cx.n_shard_groups = cx.dp / cx.shard;
    compile_choose_simulated(&cx, opt);
    if (workload_build(&s->model, s->micro_batch, s->precision, &cx.wg, err)) {
        compile_fold_free(&cx);
        free(cx.chunk_first);
        return err->code;
    }

    const workload_model *m = &cx.wg.model;
    int elem = precision_bytes(s->precision);
    cx.tp_bytes = (double)s->micro_batch * (m->seq / cx.cp) * m->hidden * elem; /* a rank's */
    cx.pp_bytes = cx.tp_bytes / (s->sequence_parallel ? cx.tp : 1);
    cx.grad_elem = s->precision == PREC_FP16 ? 2.0 : 4.0; /* Megatron: bf16 reduces fp32 grads */
    cx.fsdp = s->zero == 3 && cx.dp > 1;
    cx.fsdp_keep = cx.fsdp && cx.pp > 1;
    cx.layer_cuts = cx.dp > 1 && (cx.fsdp || s->overlap_param_gather);

    /* a rank's tokens (tokens / cp of its context share, / tp under sequence parallelism),
     * topk copies of each */
    cx.ep_bytes =
        (double)s->micro_batch * (m->seq / cx.cp) / cx.tp * m->experts_topk * m->hidden * elem;
    /* the ops of one context rank (its seq / cp tokens), divided over the TP ranks (the
     * routed experts over the expert layout) */
    workload_graph rank_ops;
    memset(&rank_ops, 0, sizeof rank_ops);
    if (cx.cp > 1 && context_rank_ops(&cx, &rank_ops, err)) {
        compile_fold_free(&cx);
        workload_graph_free(&cx.wg);
        free(cx.chunk_first);
        return err->code;
    }
    const workload_op *ops = cx.cp > 1 ? rank_ops.ops : cx.wg.ops;
    cx.sharded = xmalloc((size_t)cx.wg.n_ops * sizeof *cx.sharded);
    for (int i = 0; i < cx.wg.n_ops; i++) {
        const workload_op *op = &ops[i];
        if (op->expert && cx.expert_layout)
            workload_op_shard_expert(op, cx.tp, cx.ep, cx.etp, 1.0, &cx.sharded[i]);
        else
            workload_op_shard(op, cx.tp, s->sequence_parallel,
                              strategy_vocab_parallel_for_layer(s, op->layer), &cx.sharded[i]);
    }
    workload_graph_free(&rank_ops);
    compile_describe_plan(&cx, out);

    cx.g = graph_create(c->n_gpus);
    cx.last_compute = xmalloc((size_t)c->n_gpus * sizeof *cx.last_compute);
    for (int r = 0; r < c->n_gpus; r++)
        cx.last_compute[r] = NONE;
    compile_fold_tables(&cx);
    compile_intern_labels(&cx);
    compile_make_stage_groups(&cx);
    if (cx.cp > 1)
        context_rings_init(&cx);

    /* Templates per GPU profile (device, slowdown), built when a rank first needs one; the
     * first rank's of every chunk now, in chunk order. */
    chunk_profiles_init(&cx);
    cx.profile = opt->profile;
    if (cx.profile) /* the reference templates record their op passes (the report's profile) */
        cx.stats = out->profile = profile_stats_create(cx.profile, c);
    for (int mc = 0; mc < cx.mcs; mc++)
        compile_chunk_ref(&cx, mc);
    cx.stats = NULL;
    compile_orders_init(&cx); /* ZB-V: the orders from the chunks' pass times */
    compile_estimate_plan_memory(&cx, out);

    /* the plan's figures are the whole plan's; its graph may hold fewer micro-batches */
    assert(opt->graph_micro_batches >= 0 && opt->graph_micro_batches <= cx.M);
    if (opt->graph_micro_batches > 0)
        cx.M = opt->graph_micro_batches;
    assert(!cx.orders || cx.M == strategy_micro_batches(s)); /* no shorter run of ZB-V */
    emit_plan(&cx, out);
    assert_templates_alike(&cx);
    int rc = graph_finalize(cx.g, err);
    out->graph = cx.g;

    compile_ctx_free(&cx);
    return rc;
}

void compiled_plan_free(compiled_plan *p)
{
    graph_free(p->graph);
    free(p->chunk_layers);
    free(p->stage_of_rank);
    free(p->replica_of_rank);
    free(p->twin_of_rank);
    free(p->memory);
    free(p->memory_capacity_of_rank);
    if (p->profile)
        profile_stats_free(p->profile);
    free(p->profile);
    if (p->dlrm) {
        free(p->dlrm->owner);
        free(p->dlrm->tables_of_gpu);
        free(p->dlrm->lookup_s);
        free(p->dlrm);
    }
    memset(p, 0, sizeof *p);
}
