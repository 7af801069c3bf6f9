/* compile.c: turns (op graph, strategy tree, cluster) into the execution graph: per-rank
 * compute segments cut at tensor-parallel collectives, pipeline sends, data-parallel buckets. */
#include "compile.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/cost.h"
#include "schedule.h"

#define NONE UINT32_MAX

/* Runtime state held per GPU besides weights, gradients, optimizer and activations: CUDA
 * context, NCCL and cuBLAS workspaces, allocator fragmentation. Megatron users budget 2-4 GiB;
 * first guess, refined with the memory model (issue 4). */
static const double COMPILE_RUNTIME_RESERVE_BYTES = 2.0 * 1073741824.0;

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
    int n, cap;
} segment_list;

/* Everything one model chunk needs, the same for every micro-batch and rank of its stage. */
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
    chunk_template *tmpl;      /* [mcs] */
    htae_graph *g;
    uint32_t *last_compute; /* per rank: latest compute task emitted, NONE at first */
    int label_tp[3], label_dp[3], label_send_act, label_send_grad, label_opt, label_pipe;
} compile_ctx;

int compile_rank_of(const strategy *s, int t, int d, int p)
{
    int coord[3] = {0, 0, 0}, size[3] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        switch (s->order[i]) {
        case AXIS_TENSOR:
            coord[i] = t;
            size[i] = s->tp;
            break;
        case AXIS_DATA:
            coord[i] = d;
            size[i] = s->dp;
            break;
        case AXIS_PIPELINE:
            coord[i] = p;
            size[i] = s->pp;
            break;
        }
    }
    return coord[0] + size[0] * (coord[1] + size[1] * coord[2]);
}

static void seg_push(segment_list *l, segment sg)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->seg = realloc(l->seg, (size_t)l->cap * sizeof *l->seg);
        if (!l->seg)
            abort();
    }
    l->seg[l->n++] = sg;
}

static void add_op(segment *sg, const workload_op *op, op_pass pass, precision_t prec,
                   const device_spec *dev)
{
    if (sg->n_ops++ == 0 || op->layer < sg->lo)
        sg->lo = op->layer;
    if (sg->n_ops == 1 || op->layer > sg->hi)
        sg->hi = op->layer;
    double g = cost_op_kernel_seconds(op, pass, prec, dev);
    double c = cost_op_launch_seconds(op, pass);
    /* the op's kernels, launched one after another, each run once launched and the GPU free */
    int k = cost_op_kernels(op, pass);
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        sg->cpu += c / k;
        sg->span = (sg->span > sg->cpu ? sg->span : sg->cpu) + g / k;
    }
    sg->gpu += g;
}

static int chunk_has_op(const compile_ctx *cx, int mc, const workload_op *op)
{
    int L = cx->wg.model.layers, per = L / cx->mcs;
    if (op->layer < 0)
        return mc == 0;
    if (op->layer >= L)
        return mc == cx->mcs - 1;
    return op->layer / per == mc;
}

/* Tensor-parallel collective points (Megatron's f and g operators): forward after a
 * row-parallel GEMM and after a vocab-parallel embedding; backward after the input gradient of
 * a column-parallel or vocab-parallel GEMM. */
static int fwd_cut(const compile_ctx *cx, const workload_op *op)
{
    if (cx->tp == 1)
        return 0;
    if (op->kind == OP_GEMM && op->split == SPLIT_ROW)
        return 1;
    return op->kind == OP_EMBEDDING && strategy_vocab_parallel_for_layer(cx->s, op->layer);
}

static int bwd_cut(const compile_ctx *cx, const workload_op *op)
{
    if (cx->tp == 1 || op->kind != OP_GEMM)
        return 0;
    if (op->split == SPLIT_COLUMN)
        return 1;
    return op->split == SPLIT_VOCAB && strategy_vocab_parallel_for_layer(cx->s, op->layer);
}

static int seg_label(compile_ctx *cx, const char *pass, const workload_op *last)
{
    char name[96];
    snprintf(name, sizeof name, "%s %s", pass, last->name);
    return htae_label(cx->g, name);
}

/* Build one chunk's segments (op costs on `dev`), its gradient buckets and activation bytes. */
static void build_template(compile_ctx *cx, int mc, const device_spec *dev, chunk_template *ct)
{
    const strategy *s = cx->s;
    const workload_graph *wg = &cx->wg;
    precision_t prec = s->precision;
    memset(ct, 0, sizeof *ct);
    int n = wg->n_ops;

    segment cur;
    memset(&cur, 0, sizeof cur);
    const workload_op *last = NULL;
    for (int i = 0; i < n; i++) { /* forward */
        const workload_op *op = &cx->sharded[i];
        if (!chunk_has_op(cx, mc, &wg->ops[i]))
            continue;
        add_op(&cur, op, PASS_FWD, prec, dev);
        ct->params += op->params;
        last = op;
        recompute_mode rm = strategy_recompute_for_layer(s, op->layer);
        int layer_op = op->layer >= 0 && op->layer < wg->model.layers;
        if (layer_op && rm == RECOMPUTE_FULL)
            ; /* only the layer input is kept: counted once per layer below */
        else if (layer_op && rm == RECOMPUTE_SELECTIVE && op->selective)
            ;
        else
            ct->act_bytes += op->act_bytes;
        if (fwd_cut(cx, &wg->ops[i])) {
            cur.cut = 1;
            cur.label = seg_label(cx, "fwd", last);
            seg_push(&ct->fwd, cur);
            memset(&cur, 0, sizeof cur);
        }
    }
    if (last && (cur.gpu + cur.cpu > 0 || ct->fwd.n == 0)) {
        cur.label = seg_label(cx, "fwd", last);
        seg_push(&ct->fwd, cur);
    }

    /* full recompute keeps each such layer's input (sequence-parallel: a 1/tp slice) */
    int per = wg->model.layers / cx->mcs;
    for (int l = mc * per; l < (mc + 1) * per; l++)
        if (strategy_recompute_for_layer(s, l) == RECOMPUTE_FULL)
            ct->act_bytes += cx->tp_bytes / (s->sequence_parallel ? cx->tp : 1);

    memset(&cur, 0, sizeof cur); /* full-recompute replay */
    last = NULL;
    for (int i = 0; i < n; i++) {
        const workload_op *op = &cx->sharded[i];
        int l = wg->ops[i].layer;
        if (!chunk_has_op(cx, mc, &wg->ops[i]) || l < 0 || l >= wg->model.layers ||
            strategy_recompute_for_layer(s, l) != RECOMPUTE_FULL)
            continue;
        add_op(&cur, op, PASS_FWD, prec, dev);
        last = op;
        if (fwd_cut(cx, &wg->ops[i])) {
            cur.cut = 1;
            cur.label = seg_label(cx, "recompute", last);
            seg_push(&ct->rec, cur);
            memset(&cur, 0, sizeof cur);
        }
    }
    if (last && cur.gpu + cur.cpu > 0) {
        cur.label = seg_label(cx, "recompute", last);
        seg_push(&ct->rec, cur);
    }

    /* Backward, in reverse. With overlapped data parallelism a segment also ends where a
     * layer's gradients are complete, so buckets can start while earlier layers run. */
    int per_layer = cx->dp > 1 && s->dp_overlap;
    memset(&cur, 0, sizeof cur);
    last = NULL;
    for (int i = n - 1; i >= 0; i--) {
        const workload_op *op = &cx->sharded[i];
        if (!chunk_has_op(cx, mc, &wg->ops[i]))
            continue;
        if (per_layer && last && last->layer != op->layer && cur.gpu + cur.cpu > 0) {
            cur.label = seg_label(cx, "bwd", last);
            seg_push(&ct->bwd, cur);
            memset(&cur, 0, sizeof cur);
        }
        add_op(&cur, op, PASS_BWD, prec, dev);
        if (op->selective && strategy_recompute_for_layer(s, op->layer) == RECOMPUTE_SELECTIVE)
            add_op(&cur, op, PASS_FWD, prec, dev);
        cur.params += op->params;
        last = op;
        if (bwd_cut(cx, &wg->ops[i])) {
            cur.cut = 1;
            cur.label = seg_label(cx, "bwd", last);
            seg_push(&ct->bwd, cur);
            memset(&cur, 0, sizeof cur);
        }
    }
    if (last && (cur.gpu + cur.cpu > 0 || ct->bwd.n == 0)) {
        cur.label = seg_label(cx, "bwd", last);
        seg_push(&ct->bwd, cur);
    }

    /* gradient buckets, filled in backward order as gradients become ready */
    ct->bucket_end = malloc((size_t)(ct->bwd.n + 1) * sizeof *ct->bucket_end);
    ct->bucket_bytes = malloc((size_t)(ct->bwd.n + 1) * sizeof *ct->bucket_bytes);
    ct->bucket_lo = malloc((size_t)(ct->bwd.n + 1) * sizeof *ct->bucket_lo);
    double bucket = s->bucket_mb * 1e6, acc = 0;
    int lo = wg->model.layers;
    for (int i = 0; i < ct->bwd.n; i++) {
        acc += ct->bwd.seg[i].params * cx->grad_elem;
        if (ct->bwd.seg[i].lo < lo)
            lo = ct->bwd.seg[i].lo;
        if (acc >= bucket || (i == ct->bwd.n - 1 && acc > 0)) {
            ct->bucket_end[ct->n_buckets] = i;
            ct->bucket_lo[ct->n_buckets] = lo;
            ct->bucket_bytes[ct->n_buckets++] = acc;
            acc = 0;
            lo = wg->model.layers;
        }
    }
    /* Buckets run from the top layers down; a forward segment needs every bucket up to the
     * first one (in that order) reaching down to its highest layer. */
    ct->fwd_bucket = malloc((size_t)(ct->fwd.n + 1) * sizeof *ct->fwd_bucket);
    for (int i = 0; i < ct->fwd.n; i++) {
        int b = 0;
        while (b < ct->n_buckets - 1 && ct->bucket_lo[b] > ct->fwd.seg[i].hi)
            b++;
        ct->fwd_bucket[i] = b;
    }
}

static void free_template(chunk_template *ct)
{
    free(ct->fwd.seg);
    free(ct->bwd.seg);
    free(ct->rec.seg);
    free(ct->bucket_end);
    free(ct->bucket_bytes);
    free(ct->bucket_lo);
    free(ct->fwd_bucket);
}

/* Emit one segment list for the TP group `ranks` (tp members): compute tasks, with a TP
 * collective (all-reduce, or reduce-scatter + all-gather under sequence parallelism) after
 * each cut. first/last receive each member's first and last compute task; seg_ids (when not
 * NULL) each segment's task per member: seg_ids[i * tp + t]. */
/* Emit one segment list for the TP group `ranks` (tp members): compute tasks, with a TP
 * collective (all-reduce, or reduce-scatter + all-gather under sequence parallelism) after
 * each cut. With tensor.comm_overlap the cut's collectives run beside the segment that makes
 * their data (Megatron's userbuffer overlap) and the next segment waits for both. first/last
 * receive each member's first and last compute task; seg_ids (when not NULL) each segment's
 * task per member: seg_ids[i * tp + t]; gate (when not NULL) a task per segment and member
 * that must finish before the segment starts: gate[i * tp + t], NONE for none. */
static void emit_segments(compile_ctx *cx, const segment_list *l, const int *ranks, int group,
                          task_category cat, int micro, uint32_t *first, uint32_t *last,
                          uint32_t *seg_ids, const uint32_t *gate)
{
    htae_graph *g = cx->g;
    int tp = cx->tp, overlap = cx->s->tp_comm_overlap;
    uint32_t after[tp], coll[tp], before[tp];
    for (int t = 0; t < tp; t++)
        after[t] = NONE;
    for (int i = 0; i < l->n; i++) {
        const segment *sg = &l->seg[i];
        for (int t = 0; t < tp; t++) {
            before[t] = cx->last_compute[ranks[t]];
            uint32_t id = htae_add_compute(g, ranks[t], cat, sg->gpu, sg->label, micro);
            htae_set_host(g, id, HOST_ISSUE, sg->cpu, sg->span);
            if (after[t] != NONE)
                htae_add_edge(g, after[t], id);
            if (gate && gate[(size_t)i * tp + t] != NONE)
                htae_add_edge(g, gate[(size_t)i * tp + t], id);
            if (first[t] == NONE)
                first[t] = id;
            last[t] = id;
            after[t] = id;
            cx->last_compute[ranks[t]] = id;
            if (seg_ids)
                seg_ids[(size_t)i * tp + t] = id;
        }
        if (!sg->cut)
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

static int stage_of_chunk(const compile_ctx *cx, int mc)
{
    return mc % cx->pp;
}

/* A pipeline send of one unit's output (activations or gradients) from `src` after its compute
 * task `after`. The host issues it and goes on; the synchronize Megatron does after its p2p
 * calls is modelled at the receiver, whose host waits for the data (HOST_WAIT). */
static uint32_t emit_send(compile_ctx *cx, int src, int dst, uint32_t after, int label, int mb)
{
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

/* Index of backward segment `seg` of chunk mc at (d, t) in the last-micro-batch table. */
static size_t lidx(const compile_ctx *cx, int d, int t, int mc, int maxseg, int seg)
{
    return (((size_t)d * cx->tp + (size_t)t) * (size_t)cx->mcs + (size_t)mc) * (size_t)maxseg +
           (size_t)seg;
}

static void estimate_memory(const compile_ctx *cx, int p, memory_estimate *me)
{
    const strategy *s = cx->s;
    double params = 0, act = 0;
    for (int c = 0; c < cx->v; c++) {
        params += cx->tmpl[c * cx->pp + p].params;
        act += cx->tmpl[c * cx->pp + p].act_bytes;
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

static void emit_plan(compile_ctx *cx, compiled_plan *out)
{
    const strategy *s = cx->s;
    htae_graph *g = cx->g;
    int tp = cx->tp, pp = cx->pp, dp = cx->dp, M = cx->M;
    size_t nx = (size_t)dp * tp * cx->mcs * M;
    uint32_t *fwd_first = malloc(nx * sizeof *fwd_first),
             *bwd_first = malloc(nx * sizeof *bwd_first);
    /* the receiver's compute task just before each unit: where it posts the receive */
    uint32_t *fwd_prev = malloc(nx * sizeof *fwd_prev), *bwd_prev = malloc(nx * sizeof *bwd_prev);
    uint32_t *fwd_in = malloc(nx * sizeof *fwd_in), *bwd_in = malloc(nx * sizeof *bwd_in);
    for (size_t i = 0; i < nx; i++)
        fwd_first[i] = bwd_first[i] = fwd_in[i] = bwd_in[i] = fwd_prev[i] = bwd_prev[i] = NONE;
    int maxseg = 1;
    for (int mc = 0; mc < cx->mcs; mc++)
        if (cx->tmpl[mc].bwd.n > maxseg)
            maxseg = cx->tmpl[mc].bwd.n;
    /* backward segment tasks of the last micro-batch: gradient-ready points for DP buckets */
    size_t nlast = (size_t)dp * tp * cx->mcs * (size_t)maxseg;
    uint32_t *last_bwd = malloc(nlast * sizeof *last_bwd);
    pipeline_unit *units = malloc((size_t)2 * M * cx->v * sizeof *units);
    int ranks[tp];
    uint32_t first[tp], last[tp], segids[(size_t)maxseg * tp];
    int n = cx->c->n_gpus;
    int dranks[dp];
    uint32_t coll[dp];

    /* data-parallel groups: GPUs at the same tensor index and stage, ring in DP order */
    int *dp_group = malloc((size_t)tp * pp * sizeof *dp_group);
    for (int p = 0; p < pp; p++)
        for (int t = 0; t < tp; t++) {
            for (int d = 0; d < dp; d++)
                dranks[d] = compile_rank_of(s, t, d, p);
            dp_group[p * tp + t] = dp > 1 ? htae_add_group(g, dranks, dp) : -1;
        }

    /* ZeRO with overlapped parameter gathering: the previous step's all-gathers run under this
     * step's first forward, bucket by bucket in forward order; in steady state one iteration
     * holds them at its start. gather[(rank * mcs + mc) * maxbuckets + b] = the rank's task. */
    int maxfseg = 1, maxbuckets = 1;
    for (int mc = 0; mc < cx->mcs; mc++) {
        if (cx->tmpl[mc].fwd.n > maxfseg)
            maxfseg = cx->tmpl[mc].fwd.n;
        if (cx->tmpl[mc].n_buckets > maxbuckets)
            maxbuckets = cx->tmpl[mc].n_buckets;
    }
    uint32_t *gather = NULL, *gates = malloc((size_t)maxfseg * tp * sizeof *gates);
    if (s->zero >= 1 && dp > 1 && s->overlap_param_gather) {
        size_t ng = (size_t)n * cx->mcs * maxbuckets;
        gather = malloc(ng * sizeof *gather);
        for (size_t i = 0; i < ng; i++)
            gather[i] = NONE;
        for (int p = 0; p < pp; p++)
            for (int t = 0; t < tp; t++)
                for (int c = 0; c < cx->v; c++) {
                    int mc = c * pp + p;
                    const chunk_template *ct = &cx->tmpl[mc];
                    for (int b = ct->n_buckets - 1; b >= 0; b--) {
                        double bytes =
                            ct->bucket_bytes[b] / cx->grad_elem * precision_bytes(s->precision);
                        htae_add_collective(g, COLL_ALLGATHER, dp_group[p * tp + t], STREAM_DP,
                                            bytes, CAT_DP_COMM, cx->label_dp[COLL_ALLGATHER], -1,
                                            coll);
                        for (int d = 0; d < dp; d++)
                            gather[((size_t)compile_rank_of(s, t, d, p) * cx->mcs + mc) *
                                       maxbuckets +
                                   b] = coll[d];
                    }
                }
    }

    for (int d = 0; d < cx->dp_sim; d++) {
        for (int p = 0; p < pp; p++) {
            for (int t = 0; t < tp; t++)
                ranks[t] = compile_rank_of(s, t, d, p);
            int group = htae_add_group(g, ranks, tp);
            int nu = pipeline_order(s->schedule, pp, p, M, cx->v, units);
            for (int u = 0; u < nu; u++) {
                int mc = units[u].chunk * pp + p, mb = units[u].micro;
                const chunk_template *ct = &cx->tmpl[mc];
                uint32_t before[tp];
                for (int t = 0; t < tp; t++) {
                    first[t] = last[t] = NONE;
                    before[t] = cx->last_compute[ranks[t]];
                    if (pp > 1) {
                        /* The pipeline runtime's step before the unit: the host receives the
                         * unit's input (blocking, then synchronize: Megatron's p2p), then does
                         * the schedule's own work. Host time only. */
                        uint32_t id = htae_add_compute(
                            g, ranks[t], units[u].backward ? CAT_BACKWARD : CAT_FORWARD, 0.0,
                            cx->label_pipe, mb);
                        htae_set_host(g, id, HOST_ISSUE | HOST_WAIT,
                                      cost_pipeline_unit_overhead_seconds(), 0.0);
                        first[t] = id;
                        cx->last_compute[ranks[t]] = id;
                    }
                }
                if (!units[u].backward) {
                    const uint32_t *gate = NULL;
                    if (gather && mb == 0) { /* first use of the chunk's parameters */
                        for (int i = 0; i < ct->fwd.n; i++)
                            for (int t = 0; t < tp; t++)
                                gates[(size_t)i * tp + t] =
                                    gather[((size_t)compile_rank_of(s, t, d, p) * cx->mcs + mc) *
                                               maxbuckets +
                                           ct->fwd_bucket[i]];
                        gate = gates;
                    }
                    emit_segments(cx, &ct->fwd, ranks, group, CAT_FORWARD, mb, first, last, NULL,
                                  gate);
                } else {
                    emit_segments(cx, &ct->rec, ranks, group, CAT_RECOMPUTE, mb, first, last, NULL,
                                  NULL);
                    emit_segments(cx, &ct->bwd, ranks, group, CAT_BACKWARD, mb, first, last,
                                  mb == M - 1 ? segids : NULL, NULL);
                }
                for (int t = 0; t < tp; t++) {
                    size_t xi = xidx(cx, d, t, mc, mb);
                    if (!units[u].backward) {
                        fwd_first[xi] = first[t];
                        fwd_prev[xi] = before[t];
                        if (mc + 1 < cx->mcs) {
                            int dst = compile_rank_of(s, t, d, stage_of_chunk(cx, mc + 1));
                            fwd_in[xidx(cx, d, t, mc + 1, mb)] =
                                emit_send(cx, ranks[t], dst, last[t], cx->label_send_act, mb);
                        }
                    } else {
                        bwd_first[xi] = first[t];
                        bwd_prev[xi] = before[t];
                        if (mc > 0) {
                            int dst = compile_rank_of(s, t, d, stage_of_chunk(cx, mc - 1));
                            bwd_in[xidx(cx, d, t, mc - 1, mb)] =
                                emit_send(cx, ranks[t], dst, last[t], cx->label_send_grad, mb);
                        }
                        if (mb == M - 1)
                            for (int i = 0; i < ct->bwd.n; i++)
                                last_bwd[lidx(cx, d, t, mc, maxseg, i)] =
                                    segids[(size_t)i * tp + t];
                    }
                }
            }
        }
    }
    /* A pipeline transfer gates the unit that consumes it, and starts only once the receiver
     * has posted its receive: Megatron and DeepSpeed receive just before the unit
     * (recv_forward, send_forward_recv_backward: blocking), so the transfer is on the
     * receiver's critical path instead of arriving ahead of time. */
    for (size_t i = 0; i < nx; i++) {
        if (fwd_in[i] != NONE) {
            htae_add_edge(g, fwd_in[i], fwd_first[i]);
            if (fwd_prev[i] != NONE)
                htae_add_edge(g, fwd_prev[i], fwd_in[i]);
        }
        if (bwd_in[i] != NONE) {
            htae_add_edge(g, bwd_in[i], bwd_first[i]);
            if (bwd_prev[i] != NONE)
                htae_add_edge(g, bwd_prev[i], bwd_in[i]);
        }
    }

    /* Data parallelism: per DP group, buckets in the order their gradients complete. */
    uint32_t *opt_task = malloc((size_t)n * sizeof *opt_task);
    coll_kind grad_kind = s->zero >= 1 ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE;
    uint32_t **dp_tasks = calloc((size_t)n, sizeof *dp_tasks);
    int *n_dp_tasks = calloc((size_t)n, sizeof *n_dp_tasks);
    for (int p = 0; p < pp; p++) {
        int nu = pipeline_order(s->schedule, pp, p, M, cx->v, units);
        int chunk_order[cx->v], nc = 0; /* chunks by when their last backward runs */
        for (int u = 0; u < nu; u++)
            if (units[u].backward && units[u].micro == M - 1)
                chunk_order[nc++] = units[u].chunk;
        for (int t = 0; t < tp; t++) {
            for (int d = 0; d < dp; d++)
                dranks[d] = compile_rank_of(s, t, d, p);
            if (dp == 1)
                continue;
            for (int d = 0; d < dp; d++)
                dp_tasks[dranks[d]] = malloc((size_t)(maxseg * cx->v + 1) * sizeof(uint32_t));
            for (int ci = 0; ci < nc; ci++) {
                int mc = chunk_order[ci] * pp + p;
                const chunk_template *ct = &cx->tmpl[mc];
                for (int b = 0; b < ct->n_buckets; b++) {
                    htae_add_collective(g, grad_kind, dp_group[p * tp + t], STREAM_DP,
                                        ct->bucket_bytes[b], CAT_DP_COMM, cx->label_dp[grad_kind],
                                        M - 1, coll);
                    for (int d = 0; d < cx->dp_sim; d++) { /* folded members: no deps */
                        uint32_t ready =
                            s->dp_overlap
                                ? last_bwd[lidx(cx, d, t, mc, maxseg, ct->bucket_end[b])]
                                : cx->last_compute[dranks[d]]; /* the rank's final backward */
                        htae_add_edge(g, ready, coll[d]);
                        dp_tasks[dranks[d]][n_dp_tasks[dranks[d]]++] = coll[d];
                    }
                }
            }
        }
    }

    /* optimizer step on each simulated rank's (ZeRO: its slice of the) parameters */
    for (int r = 0; r < n; r++) {
        if (out->replica_of_rank[r] >= cx->dp_sim)
            continue;
        int p = out->stage_of_rank[r];
        double params = 0;
        for (int c = 0; c < cx->v; c++)
            params += cx->tmpl[c * pp + p].params;
        if (s->zero >= 1)
            params /= dp;
        double secs = s->optimizer == OPT_NONE
                          ? 0.0
                          : cost_optimizer_seconds(params, s->optimizer == OPT_ADAM, s->precision,
                                                   cx->c->device[r]) +
                                cost_iteration_overhead_seconds();
        opt_task[r] = htae_add_compute(g, r, CAT_OPTIMIZER, secs, cx->label_opt, -1);
        for (int i = 0; i < n_dp_tasks[r]; i++)
            htae_add_edge(g, dp_tasks[r][i], opt_task[r]);
    }
    /* ZeRO: gather the updated parameter slices (unless the next step's forward does) */
    if (s->zero >= 1 && dp > 1 && !gather) {
        for (int p = 0; p < pp; p++)
            for (int t = 0; t < tp; t++) {
                double params = 0;
                for (int c = 0; c < cx->v; c++)
                    params += cx->tmpl[c * pp + p].params;
                htae_add_collective(g, COLL_ALLGATHER, dp_group[p * tp + t], STREAM_DP,
                                    params * precision_bytes(s->precision), CAT_DP_COMM,
                                    cx->label_dp[COLL_ALLGATHER], -1, coll);
                for (int d = 0; d < cx->dp_sim; d++)
                    htae_add_edge(g, opt_task[compile_rank_of(s, t, d, p)], coll[d]);
            }
    }

    for (int r = 0; r < n; r++)
        free(dp_tasks[r]);
    free(dp_tasks);
    free(n_dp_tasks);
    free(dp_group);
    free(gather);
    free(gates);
    free(opt_task);
    free(units);
    free(last_bwd);
    free(fwd_first);
    free(fwd_prev);
    free(bwd_prev);
    free(bwd_first);
    free(fwd_in);
    free(bwd_in);
}

void compile_default_options(compile_options *o)
{
    o->fold_data_parallel = 1;
}

/* Folding needs replicas on the same GPU models, position by position. */
static int replicas_alike(const strategy *s, const cluster *c)
{
    for (int p = 0; p < s->pp; p++)
        for (int t = 0; t < s->tp; t++)
            for (int d = 1; d < s->dp; d++)
                if (c->device[compile_rank_of(s, t, d, p)] !=
                    c->device[compile_rank_of(s, t, 0, p)])
                    return 0;
    return 1;
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
    if (strategy_check_gpus(s, c->n_gpus, err))
        return err->code;
    compile_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.s = s;
    cx.c = c;
    cx.tp = s->tp;
    cx.pp = s->pp;
    cx.dp = s->dp;
    cx.v = s->schedule == SCHED_INTERLEAVED ? s->virtual_stages : 1;
    cx.mcs = cx.pp * cx.v;
    cx.M = strategy_micro_batches(s);
    cx.dp_sim = opt->fold_data_parallel && replicas_alike(s, c) ? 1 : cx.dp;
    if (s->schedule == SCHED_INTERLEAVED && cx.M % cx.pp != 0)
        return ps_error_set(err, PS_EINPUT, s->file, s->pp_loc.line, s->pp_loc.column,
                            "strategy.pipeline.schedule",
                            "the interleaved schedule needs the number of micro-batches per "
                            "data-parallel rank (%d) to be a multiple of the pipeline degree (%d)",
                            cx.M, cx.pp);
    if (workload_build(&s->model, s->micro_batch, s->precision, &cx.wg, err))
        return err->code;

    const workload_model *m = &cx.wg.model;
    int elem = precision_bytes(s->precision);
    cx.tp_bytes = (double)s->micro_batch * m->seq * m->hidden * elem;
    cx.pp_bytes = cx.tp_bytes / (s->sequence_parallel ? cx.tp : 1);
    cx.grad_elem = s->precision == PREC_FP16 ? 2.0 : 4.0; /* Megatron: bf16 reduces fp32 grads */

    cx.sharded = malloc((size_t)cx.wg.n_ops * sizeof *cx.sharded);
    for (int i = 0; i < cx.wg.n_ops; i++)
        workload_op_shard(&cx.wg.ops[i], cx.tp, s->sequence_parallel,
                          strategy_vocab_parallel_for_layer(s, cx.wg.ops[i].layer), &cx.sharded[i]);

    snprintf(out->strategy_file, sizeof out->strategy_file, "%s", s->file);
    out->model = *m;
    strategy_plan_desc(s, &out->plan);
    out->gpus = c->n_gpus;
    out->tp = cx.tp;
    out->pp = cx.pp;
    out->dp = cx.dp;
    out->chunks = cx.v;
    out->micro_batches = cx.M;
    out->samples_per_iter = s->global_batch;
    out->tokens_per_iter = (double)s->global_batch * m->seq;
    out->model_flops_per_iter = (cx.wg.fwd_flops + cx.wg.bwd_flops) * cx.M * cx.dp;
    out->params_total = cx.wg.total_params;
    out->peak_flops_per_gpu = c->device[0]->peak_flops[s->precision];
    out->simulated_replicas = cx.dp_sim;
    out->stage_of_rank = malloc((size_t)c->n_gpus * sizeof *out->stage_of_rank);
    out->replica_of_rank = malloc((size_t)c->n_gpus * sizeof *out->replica_of_rank);
    for (int p = 0; p < cx.pp; p++)
        for (int d = 0; d < cx.dp; d++)
            for (int t = 0; t < cx.tp; t++) {
                out->stage_of_rank[compile_rank_of(s, t, d, p)] = p;
                out->replica_of_rank[compile_rank_of(s, t, d, p)] = d;
            }

    cx.g = htae_graph_create(c->n_gpus);
    cx.last_compute = malloc((size_t)c->n_gpus * sizeof *cx.last_compute);
    for (int r = 0; r < c->n_gpus; r++)
        cx.last_compute[r] = NONE;
    cx.label_tp[COLL_ALLREDUCE] = htae_label(cx.g, "tp all-reduce");
    cx.label_tp[COLL_REDUCE_SCATTER] = htae_label(cx.g, "tp reduce-scatter");
    cx.label_tp[COLL_ALLGATHER] = htae_label(cx.g, "tp all-gather");
    cx.label_dp[COLL_ALLREDUCE] = htae_label(cx.g, "dp grad all-reduce");
    cx.label_dp[COLL_REDUCE_SCATTER] = htae_label(cx.g, "dp grad reduce-scatter");
    cx.label_dp[COLL_ALLGATHER] = htae_label(cx.g, "dp param all-gather");
    cx.label_send_act = htae_label(cx.g, "pp send activations");
    cx.label_send_grad = htae_label(cx.g, "pp send gradients");
    cx.label_opt = htae_label(cx.g, "optimizer step");
    cx.label_pipe = htae_label(cx.g, "pipeline runtime");

    /* Templates use the device of the stage's first rank; clusters mixing GPU models inside a
     * stage would need per-rank templates. */
    cx.tmpl = calloc((size_t)cx.mcs, sizeof *cx.tmpl);
    for (int mc = 0; mc < cx.mcs; mc++) {
        const device_spec *dev = c->device[compile_rank_of(s, 0, 0, stage_of_chunk(&cx, mc))];
        build_template(&cx, mc, dev, &cx.tmpl[mc]);
    }

    out->memory = calloc((size_t)c->n_gpus, sizeof *out->memory);
    out->memory_capacity = c->device[0]->hbm_bytes;
    for (int r = 0; r < c->n_gpus; r++) {
        estimate_memory(&cx, out->stage_of_rank[r], &out->memory[r]);
        if (c->device[r]->hbm_bytes < out->memory_capacity)
            out->memory_capacity = c->device[r]->hbm_bytes;
    }

    emit_plan(&cx, out);
    int rc = htae_graph_finalize(cx.g, err);
    out->graph = cx.g;

    for (int mc = 0; mc < cx.mcs; mc++)
        free_template(&cx.tmpl[mc]);
    free(cx.tmpl);
    free(cx.sharded);
    free(cx.last_compute);
    workload_graph_free(&cx.wg);
    return rc;
}

void compiled_plan_free(compiled_plan *p)
{
    htae_graph_free(p->graph);
    free(p->stage_of_rank);
    free(p->replica_of_rank);
    free(p->memory);
    memset(p, 0, sizeof *p);
}
