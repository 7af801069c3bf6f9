/* zero.c: data parallelism in the execution graph, ZeRO 0-3 and HSDP (docs/design-notes.md,
 * "ZeRO and FSDP"): groups, gradient buckets, FSDP's per-unit gathers and reduce-scatters. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"
#include "compile_ctx.h"

size_t bwd_seg_index(const compile_ctx *cx, const emit_state *es, int d, int t, int mc, int mb,
                     int seg)
{
    int m = es->seg_mbs == 1 ? 0 : mb;
    assert(d >= 0 && d < cx->dp_sim && t >= 0 && t < cx->tp_sim && mc >= 0 && mc < cx->mcs);
    assert(m >= 0 && m < es->seg_mbs && seg >= 0 && seg < es->maxseg);
    return ((((size_t)d * cx->tp_sim + (size_t)t) * (size_t)cx->mcs + (size_t)mc) * es->seg_mbs +
            (size_t)m) *
               (size_t)es->maxseg +
           (size_t)seg;
}

static uint32_t *none_table(size_t n)
{
    uint32_t *a = xmalloc((n ? n : 1) * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = NONE;
    return a;
}

/* Each stage's FSDP program: its pipeline units in schedule order, each unit's FSDP units in
 * forward order for a forward, in reverse for a backward. */
static void fsdp_program(compile_ctx *cx, emit_state *es)
{
    es->fsdp_n = xcalloc((size_t)cx->pp, sizeof *es->fsdp_n);
    es->fsdp_cap = 0;
    for (int p = 0; p < cx->pp; p++) {
        int n = 0;
        for (int c = 0; c < cx->v; c++) /* a split schedule's W units hold every unit too */
            n += pipeline_units(cx->s->schedule, cx->M, cx->v) / cx->v *
                 compile_chunk_ref(cx, compile_chunk_of(cx, p, c))->n_units;
        if (n > es->fsdp_cap)
            es->fsdp_cap = n;
    }
    es->fsdp_seq = xmalloc((size_t)cx->pp * es->fsdp_cap * sizeof *es->fsdp_seq);
    for (int p = 0; p < cx->pp; p++) {
        int nu = compile_stage_order(cx, p, es->units), k = 0;
        for (int i = 0; i < nu; i++) {
            pipeline_unit u = es->units[i];
            int mc = compile_chunk_of(cx, p, u.chunk), n = compile_chunk_ref(cx, mc)->n_units;
            for (int j = 0; j < n; j++) {
                fsdp_step st = {mc, u.backward ? n - 1 - j : j, u.backward, u.micro};
                es->fsdp_seq[(size_t)p * es->fsdp_cap + k++] = st;
            }
        }
        assert(k <= es->fsdp_cap);
        es->fsdp_n[p] = k;
    }
    es->fsdp_task = none_table((size_t)cx->pp * cx->n_sim * es->fsdp_cap * 3);
    es->fsdp_next = xcalloc((size_t)cx->pp * cx->n_sim, sizeof *es->fsdp_next);
}

void zero_state_init(compile_ctx *cx, emit_state *es)
{
    int n = cx->c->n_gpus, pt = cx->pp * cx->tp;
    /* ZeRO 2 reduces every micro-batch's gradients (they are sharded: nothing accumulates
     * them whole), ZeRO 0/1 the last micro-batch's */
    es->seg_mbs = cx->s->zero == 2 ? cx->M : 1;
    es->bwd_seg = none_table((size_t)cx->n_sim * cx->mcs * es->seg_mbs * es->maxseg);
    es->shard_group = xmalloc((size_t)pt * cx->n_shard_groups * sizeof *es->shard_group);
    es->replica_group = xmalloc((size_t)pt * cx->shard * sizeof *es->replica_group);
    es->last_dp = none_table((size_t)n);
    es->opt_task = none_table((size_t)n);
    if (cx->fsdp)
        fsdp_program(cx, es);
}

void zero_state_free(compile_ctx *cx, emit_state *es)
{
    (void)cx;
    free(es->bwd_seg);
    free(es->shard_group);
    free(es->replica_group);
    free(es->gather);
    free(es->last_dp);
    free(es->opt_task);
    free(es->fsdp_seq);
    free(es->fsdp_n);
    free(es->fsdp_task);
    free(es->fsdp_next);
}

/* Shard groups of (stage p, tensor index t): DP indices g * shard + j, j = 0 .. shard - 1 (ring
 * order), the ranks FSDP's all-gathers and reduce-scatters span (an NVLink domain when the data
 * axis varies fastest inside a node, as HSDP is laid out). With HSDP, replica groups: the ranks
 * holding the same shard, DP indices g * shard + j for every g. */
void zero_make_groups(compile_ctx *cx, emit_state *es)
{
    int S = cx->shard, G = cx->n_shard_groups;
    int *ranks = xmalloc((size_t)cx->dp * sizeof *ranks); /* heap: up to the plan's GPUs */
    for (int p = 0; p < cx->pp; p++)
        for (int t = 0; t < cx->tp; t++) {
            size_t pt = (size_t)p * cx->tp + t;
            for (int g = 0; g < G; g++) {
                for (int j = 0; j < S; j++)
                    ranks[j] = compile_rank_of(cx->s, t, g * S + j, p);
                es->shard_group[pt * G + g] = cx->dp > 1 ? graph_add_group(cx->g, ranks, S) : -1;
                /* inner folding with one data replica: the ring of its context indices, which
                 * the fold's shifts rotate onto itself */
                if (cx->dp > 1 && cx->inner && cx->s->dp == 1 && G == 1)
                    graph_set_group_invariant(cx->g, es->shard_group[pt * G + g]);
            }
            for (int j = 0; j < S; j++) {
                for (int g = 0; g < G; g++)
                    ranks[g] = compile_rank_of(cx->s, t, g * S + j, p);
                es->replica_group[pt * S + j] = G > 1 ? graph_add_group(cx->g, ranks, G) : -1;
            }
        }
    free(ranks);
}

/* One collective per shard group of (p, t) (replicas: per replica group); task_of_d[d] gets DP
 * index d's member task, which is now its rank's latest DP collective. With TP folded (t = 0
 * only), the same group of every other tensor index joins it as a companion group: its
 * members lend their links and take no task (graph_set_coll_companions). */
static void dp_colls(compile_ctx *cx, emit_state *es, int p, int t, int replicas, coll_kind kind,
                     double bytes, int label, int mb, uint32_t *task_of_d)
{
    int S = cx->shard, G = cx->n_shard_groups;
    int n_groups = replicas ? S : G, members = replicas ? G : S;
    uint32_t *coll = xmalloc((size_t)members * sizeof *coll);
    int *comp = xmalloc((size_t)cx->tp * sizeof *comp);
    for (int i = 0; i < n_groups; i++) {
        int grp = replicas ? es->replica_group[((size_t)p * cx->tp + t) * S + i]
                           : es->shard_group[((size_t)p * cx->tp + t) * G + i];
        assert(grp >= 0);
        int c =
            graph_add_collective(cx->g, kind, grp, STREAM_DP, bytes, CAT_DP_COMM, label, mb, coll);
        if (cx->tp_sim < cx->tp) {
            assert(t == 0);
            for (int u = 1; u < cx->tp; u++)
                comp[u - 1] = replicas ? es->replica_group[((size_t)p * cx->tp + u) * S + i]
                                       : es->shard_group[((size_t)p * cx->tp + u) * G + i];
            graph_set_coll_companions(cx->g, c, comp, cx->tp - 1);
        }
        for (int m = 0; m < members; m++) {
            int d = replicas ? m * S + i : i * S + m;
            task_of_d[d] = coll[m];
            es->last_dp[compile_rank_of(cx->s, t, d, p)] = coll[m];
        }
    }
    free(coll);
    free(comp);
}

/* Each member waits for its replica's task dep[d]. A folded replica (not simulated) behaves as
 * replica d % dp_sim (0 without expert parallelism), so its members wait for that one's: groups without a simulated member (HSDP's
 * other shard groups) then keep replica 0's pace and share the links at the same times. */
static void dp_deps(compile_ctx *cx, const uint32_t *task_of_d, const uint32_t *dep)
{
    for (int d = 0; d < cx->dp; d++) {
        uint32_t src = dep[d % cx->dp_sim];
        if (src != NONE)
            graph_add_edge(cx->g, src, task_of_d[d]);
    }
}

/* When bucket b of chunk mc's micro-batch mb is ready on simulated replica d: with overlap,
 * its last layer's backward; without, the end of the micro-batch's backward (ZeRO 2) or of the
 * rank's whole backward (ZeRO 0/1, after the pipeline flush). */
static uint32_t bucket_ready(compile_ctx *cx, const emit_state *es, int d, int t, int p, int mc,
                             int mb, int b)
{
    const chunk_template *ct = compile_chunk_ref(cx, mc);
    uint32_t ready;
    assert(t < cx->tp_sim); /* folded TP peers' collectives are index 0's companions */
    if (cx->s->dp_overlap)
        ready = es->bwd_seg[bwd_seg_index(cx, es, d, t, mc, mb, ct->bucket_end[b])];
    else if (cx->s->zero == 2)
        ready = es->bwd_seg[bwd_seg_index(cx, es, d, t, mc, mb, ct->bwd.n - 1)];
    else
        ready = cx->last_compute[compile_rank_of(cx->s, t, d, p)];
    assert(ready != NONE);
    return ready;
}

/* Recorded task `which` of stage p's FSDP step k on simulated replica d, tensor index t. */
static uint32_t fsdp_task(const compile_ctx *cx, const emit_state *es, int p, int d, int t, int k,
                          int which)
{
    assert(p < cx->pp && d < cx->dp_sim && t < cx->tp_sim && k < es->fsdp_cap);
    size_t j = (size_t)p * cx->n_sim + (size_t)d * cx->tp_sim + (size_t)t;
    return es->fsdp_task[(j * es->fsdp_cap + k) * 3 + which];
}

/* What an expert-data-parallel collective's members wait for: nothing (the overlapped
 * parameter gathers that open the iteration; an HSDP all-reduce, behind its reduce-scatter on
 * the stream), bucket b of chunk mc's gradients, the optimizer step, or task `which` of FSDP
 * step k. */
typedef enum { EDP_FREE, EDP_AFTER_BUCKET, EDP_AFTER_STEP, EDP_AFTER_FSDP } edp_dep;

typedef struct edp_wait {
    edp_dep dep;
    int mc, b;    /* EDP_AFTER_BUCKET, and the bucket a gather gates */
    int k, which; /* EDP_AFTER_FSDP */
} edp_wait;

/* Stage index of member m of stage p's k-th expert shard group (replicas 0: EDP indices
 * r edp_shard + m) or HSDP replica group (replicas 1: EDP indices j + m edp_shard), groups
 * numbered ((e x etp) + et) x (groups per (e, et)) + r (or j), as in cx->edp_group and
 * edp_rep_group. */
static int edp_member(const compile_ctx *cx, int replicas, int k, int m)
{
    int xs = cx->edp_shard, per = replicas ? xs : cx->n_shard_groups;
    int q = k % per, e = k / per / cx->etp, et = k / per % cx->etp;
    return compile_expert_stage_index(cx, et, e, replicas ? q + m * xs : q * xs + m);
}

/* What member stage index i (simulated) of an expert collective waits for (edp_wait). */
static uint32_t edp_wait_for(compile_ctx *cx, emit_state *es, int p, int mb, edp_wait w, int i)
{
    int tp = cx->tp;
    if (w.dep == EDP_AFTER_STEP)
        return es->opt_task[compile_stage_rank(cx, i, p)];
    if (w.dep == EDP_AFTER_BUCKET)
        return bucket_ready(cx, es, i / tp, i % tp, p, w.mc, mb, w.b);
    if (w.dep == EDP_AFTER_FSDP)
        return fsdp_task(cx, es, p, i / tp, i % tp, w.k, w.which);
    return NONE;
}

/* edp_colls under inner folding with its EDP groups (compile_ctx.inner_edp): one collective per
 * group holding a simulated member, the others its companion groups. */
static void inner_edp_colls(compile_ctx *cx, emit_state *es, int p, coll_kind kind, double bytes,
                            int label, int mb, edp_wait w, uint32_t *gather, uint32_t *own)
{
    int groups = cx->ep * cx->etp, *members = xmalloc((size_t)cx->edp * sizeof *members);
    uint32_t *coll = xmalloc((size_t)cx->edp * sizeof *coll);
    for (int k = 0; k < groups; k++) {
        size_t pk = (size_t)p * groups + (size_t)k;
        if (cx->edp_group[pk] < 0)
            continue;
        int tasked = compile_expert_members(cx, KIND_EDP, k, members);
        int c = graph_add_collective(cx->g, kind, cx->edp_group[pk], STREAM_DP, bytes, CAT_DP_COMM,
                                     label, mb, coll);
        int n_comp = cx->edp_comp_first[pk + 1] - cx->edp_comp_first[pk];
        if (n_comp)
            graph_set_coll_companions(cx->g, c, cx->edp_comp + cx->edp_comp_first[pk], n_comp);
        for (int m = 0; m < tasked; m++) {
            int i = members[m];
            size_t r = (size_t)compile_stage_rank(cx, i, p);
            es->last_dp[r] = coll[m];
            if (gather)
                gather[(r * cx->mcs + w.mc) * es->maxbuckets + w.b] = coll[m];
            if (own)
                own[cx->member_of[i]] = coll[m];
            uint32_t dep = edp_wait_for(cx, es, p, mb, w, i);
            if (dep != NONE)
                graph_add_edge(cx->g, dep, coll[m]);
        }
    }
    free(members);
    free(coll);
}

/* One collective over every expert shard group of stage p (replicas 0) or every HSDP replica
 * group (1): an expert bucket, all of the stage's expert parameters or an FSDP unit's experts.
 * Members at stage index i, folded ones (i >= n_sim) waiting for their twin
 * (compile_fold_twin), as DP members do. With `gather`, each member's task is recorded as the
 * gate of bucket w.b of chunk w.mc on its rank; with `own`, a simulated member's in own[i]. */
static void edp_colls(compile_ctx *cx, emit_state *es, int p, int replicas, coll_kind kind,
                      double bytes, int label, int mb, edp_wait w, uint32_t *gather, uint32_t *own)
{
    if (cx->inner_edp) {
        assert(!replicas); /* inner folding keeps one shard group */
        inner_edp_colls(cx, es, p, kind, bytes, label, mb, w, gather, own);
        return;
    }
    int n = replicas ? cx->n_shard_groups : cx->edp_shard;
    int groups = cx->ep * cx->etp * (replicas ? cx->edp_shard : cx->n_shard_groups);
    const int *ids = (replicas ? cx->edp_rep_group : cx->edp_group) + (size_t)p * groups;
    assert(n > 1 && (w.dep != EDP_AFTER_FSDP || cx->tp_sim == cx->tp)); /* FSDP keeps TP */
    uint32_t *coll = xmalloc(((size_t)n + cx->n_sim) * sizeof *coll), *prev = coll + n;
    /* inner folding: a member that is not simulated may lack the DP collectives before this one
     * on its stream (its tensor index's are companions of index 0's), so it also waits for its
     * twin's latest */
    for (int j = 0; j < cx->n_sim; j++)
        prev[j] = es->last_dp[cx->sim_rank[(size_t)p * cx->n_sim + j]];
    for (int k = 0; k < groups; k++) {
        graph_add_collective(cx->g, kind, ids[k], STREAM_DP, bytes, CAT_DP_COMM, label, mb, coll);
        for (int m = 0; m < n; m++) {
            int i = edp_member(cx, replicas, k, m), t = compile_fold_twin(cx, i);
            size_t r = (size_t)compile_stage_rank(cx, i, p);
            es->last_dp[r] = coll[m];
            if (gather)
                gather[(r * cx->mcs + w.mc) * es->maxbuckets + w.b] = coll[m];
            int j = cx->inner ? cx->member_of[i] : i < cx->n_sim ? i : -1;
            if (own && j >= 0)
                own[j] = coll[m];
            if (cx->inner && j < 0 && prev[cx->member_of[t]] != NONE)
                graph_add_edge(cx->g, prev[cx->member_of[t]], coll[m]);
            uint32_t dep = edp_wait_for(cx, es, p, mb, w, t);
            if (dep != NONE)
                graph_add_edge(cx->g, dep, coll[m]);
        }
    }
    free(coll);
}

/* An expert gradient reduction of `bytes`: over the expert shard groups, then under HSDP the
 * all-reduce of each shard (bytes / edp_shard) across the replica groups, on the same DP
 * streams (Megatron's intra- and inter-partial expert DP groups; torchtitan's HSDP). The
 * all-reduce waits for what the reduce-scatter would when there is none (edp_shard 1). */
static void edp_reduce(compile_ctx *cx, emit_state *es, int p, coll_kind kind, double bytes,
                       int label, int mb, edp_wait w)
{
    if (cx->edp_shard > 1) {
        edp_colls(cx, es, p, 0, kind, bytes, label, mb, w, NULL, NULL);
        w.dep = EDP_FREE;
    }
    if (cx->n_shard_groups > 1)
        edp_colls(cx, es, p, 1, COLL_ALLREDUCE, bytes / cx->edp_shard, cx->label_hsdp_ear, mb, w,
                  NULL, NULL);
}

/* ZeRO 1/2 with overlapped parameter gathering: the previous step's all-gathers run under this
 * step's first forward, bucket by bucket in forward order; in steady state one iteration holds
 * them at its start. Expert buckets gather over the expert shard groups, in the same
 * order on each rank's DP stream, so a forward segment waiting for the first bucket reaching
 * its layer (fwd_bucket) finds every earlier one, dense or expert, gathered. */
void zero_emit_param_gathers(compile_ctx *cx, emit_state *es)
{
    const strategy *s = cx->s;
    if (!(s->overlap_param_gather && cx->dp > 1))
        return;
    assert(s->zero == 1 || s->zero == 2);
    es->gather = none_table((size_t)cx->c->n_gpus * cx->mcs * es->maxbuckets);
    uint32_t *task = xmalloc((size_t)cx->dp * sizeof *task);
    for (int p = 0; p < cx->pp; p++)
        for (int c = 0; c < cx->v; c++) {
            int mc = compile_chunk_of(cx, p, c);
            const chunk_template *ct = compile_chunk_ref(cx, mc);
            for (int b = ct->n_buckets - 1; b >= 0; b--) {
                double bytes = ct->bucket_bytes[b] / cx->grad_elem * precision_bytes(s->precision);
                if (ct->bucket_expert[b]) {
                    edp_wait w = {EDP_FREE, mc, b, 0, 0};
                    if (cx->edp_shard > 1)
                        edp_colls(cx, es, p, 0, COLL_ALLGATHER, bytes,
                                  cx->label_edp[COLL_ALLGATHER], -1, w, es->gather, NULL);
                    continue;
                }
                for (int t = 0; t < cx->tp_sim; t++) {
                    dp_colls(cx, es, p, t, 0, COLL_ALLGATHER, bytes, cx->label_dp[COLL_ALLGATHER],
                             -1, task);
                    for (int d = 0; d < cx->dp; d++) {
                        size_t r = (size_t)compile_rank_of(s, t, d, p);
                        es->gather[(r * cx->mcs + mc) * es->maxbuckets + b] = task[d];
                    }
                }
            }
        }
    free(task);
}

/* ZeRO 0-2: per DP group, gradient buckets in the order their gradients complete: all-reduced
 * (ZeRO 0) or reduce-scattered (1, 2; with HSDP then all-reduced across the replicas of the
 * shard), the last micro-batch's (0, 1: the others accumulate locally) or every one's (2).
 * Expert buckets (an expert layout) go over the expert shard groups instead (HSDP: then
 * all-reduced across the replicas, edp_reduce). */
void zero_emit_grad_buckets(compile_ctx *cx, emit_state *es)
{
    const strategy *s = cx->s;
    if (cx->dp == 1 || cx->fsdp)
        return;
    coll_kind kind = s->zero >= 1 ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE;
    uint32_t *task = xmalloc(((size_t)cx->dp + cx->dp_sim) * sizeof *task), *dep = task + cx->dp;
    for (int p = 0; p < cx->pp; p++) {
        int nu = compile_stage_order(cx, p, es->units);
        for (int u = 0; u < nu; u++) {
            pipeline_unit un = es->units[u];
            if (!pipeline_unit_makes_grads(un) ||
                (s->zero < 2 && un.micro != compile_chunk_micros(cx) - 1))
                continue;
            int mc = compile_chunk_of(cx, p, un.chunk);
            const chunk_template *ct = compile_chunk_ref(cx, mc);
            for (int b = 0; b < ct->n_buckets; b++) {
                if (ct->bucket_expert[b]) {
                    edp_wait w = {EDP_AFTER_BUCKET, mc, b, 0, 0};
                    edp_reduce(cx, es, p, kind, ct->bucket_bytes[b], cx->label_edp[kind], un.micro,
                               w);
                    continue;
                }
                for (int t = 0; t < cx->tp_sim; t++) {
                    dp_colls(cx, es, p, t, 0, kind, ct->bucket_bytes[b], cx->label_dp[kind],
                             un.micro, task);
                    for (int d = 0; d < cx->dp_sim; d++)
                        dep[d] = bucket_ready(cx, es, d, t, p, mc, un.micro, b);
                    dp_deps(cx, task, dep);
                    if (cx->n_shard_groups > 1) /* after the reduce-scatter on the DP stream */
                        dp_colls(cx, es, p, t, 1, COLL_ALLREDUCE, ct->bucket_bytes[b] / cx->shard,
                                 cx->label_hsdp_ar, un.micro, task);
                }
            }
        }
    }
    free(task);
}

/* DualPipe's two copies (strategy_two_copies): stages p and pp - 1 - p hold the same two
 * slices of layers, so after the data-parallel reduction each pair of ranks with the same
 * tensor and data index all-reduces the gradients it reduced (its shard under ZeRO 1/2: each
 * bucket over its DP or EDP shard degree; all of them under ZeRO 0) before either steps its
 * optimizer, on the DP stream after its last DP collective (or its last backward). The pairs of
 * folded ranks (fold.c: data index d behaves as d mod dp_sim, a folded tensor peer as index 0)
 * run in the same task as their twin's pair, companion groups lending their links (fold.c
 * checks that their mirror routes match the twin's). */
void zero_emit_copy_sync(compile_ctx *cx, emit_state *es)
{
    if (!strategy_two_copies(cx->s))
        return;
    int n = cx->n_sim, label = graph_label(cx->g, "dualpipe copies grad all-reduce");
    int *comp = xmalloc((size_t)cx->tp * cx->dp * sizeof *comp);
    for (int p = 0; p < cx->pp / 2; p++) {
        double bytes = 0;
        for (int k = 0; k < cx->v; k++) {
            const chunk_template *ct = compile_chunk_ref(cx, compile_chunk_of(cx, p, k));
            for (int b = 0; b < ct->n_buckets; b++)
                bytes += cx->s->zero >= 1 ? ct->bucket_bytes[b] /
                                                (ct->bucket_expert[b] ? cx->edp_shard : cx->shard)
                                          : ct->bucket_bytes[b];
        }
        for (int j = 0; j < n; j++) {
            int ranks[2] = {cx->sim_rank[(size_t)p * n + j],
                            cx->sim_rank[(size_t)(cx->pp - 1 - p) * n + j]};
            uint32_t coll[2];
            int grp = graph_add_group(cx->g, ranks, 2);
            int c = graph_add_collective(cx->g, COLL_ALLREDUCE, grp, STREAM_DP, bytes, CAT_DP_COMM,
                                         label, -1, coll);
            int t0 = j % cx->tp_sim, d0 = j / cx->tp_sim, nc = 0;
            for (int d = 0; d < cx->dp; d++)
                for (int t = 0; t < cx->tp; t++) {
                    int twin_t = cx->tp_sim < cx->tp ? 0 : t;
                    if (d % cx->dp_sim != d0 || twin_t != t0 || (d == d0 && t == t0))
                        continue;
                    int pair[2] = {compile_rank_of(cx->s, t, d, p),
                                   compile_rank_of(cx->s, t, d, cx->pp - 1 - p)};
                    comp[nc++] = graph_add_group(cx->g, pair, 2);
                }
            if (nc > 0)
                graph_set_coll_companions(cx->g, c, comp, nc);
            for (int m = 0; m < 2; m++) {
                uint32_t dep = es->last_dp[ranks[m]] != NONE ? es->last_dp[ranks[m]]
                                                             : cx->last_compute[ranks[m]];
                if (dep != NONE)
                    graph_add_edge(cx->g, dep, coll[m]);
                es->last_dp[ranks[m]] = coll[m];
            }
        }
    }
    free(comp);
}

/* The parameters of unit `unit` of chunk mc sharded over the data-parallel groups (dense) and
 * over the expert-data-parallel ones (expert: an expert layout's routed experts, torchtitan's
 * efsdp mesh; 0 otherwise). */
static void fsdp_unit_params(compile_ctx *cx, int mc, int unit, double *dense, double *expert)
{
    const chunk_template *ct = compile_chunk_ref(cx, mc);
    *expert = ct->unit_expert[unit];
    *dense = *expert > 0 ? ct->unit_params[unit] - *expert : ct->unit_params[unit];
}

/* The all-gathers of FSDP step g's unit (forward or backward copy): over each tensor index's
 * data-parallel groups its dense parameters, then (an expert layout, edp_shard > 1) over the
 * expert shard groups its routed experts' (PyTorch's per-parameter mesh: one FSDP
 * unit, two all-gathers, the block's then the experts'). Every member waits for the start of
 * step k (FSDP_BEFORE; none when k < 0). Simulated member j = d x tp_sim + t gets its tasks in
 * dense[j] and expert[j] (NONE: no expert gather). */
static void fsdp_gather(compile_ctx *cx, emit_state *es, int p, int g, int k, uint32_t *dense,
                        uint32_t *expert, uint32_t *task, uint32_t *dep)
{
    fsdp_step st = es->fsdp_seq[(size_t)p * es->fsdp_cap + g];
    double elem = precision_bytes(cx->s->precision), dn, ex;
    fsdp_unit_params(cx, st.mc, st.unit, &dn, &ex);
    for (int t = 0; t < cx->tp_sim; t++) {
        for (int d = 0; d < cx->dp_sim; d++)
            dep[d] = k >= 0 ? fsdp_task(cx, es, p, d, t, k, FSDP_BEFORE) : NONE;
        fsdp_copy_gather_in(cx, p, t, dn, st.mb, dep);
        dp_colls(cx, es, p, t, 0, COLL_ALLGATHER, dn * elem, cx->label_fsdp_gather[st.backward],
                 st.mb, task);
        for (int d = 0; d < cx->dp_sim; d++)
            dense[d * cx->tp_sim + t] = task[d];
        dp_deps(cx, task, dep);
    }
    for (int j = 0; j < cx->n_sim; j++)
        expert[j] = NONE;
    edp_wait w = {k >= 0 ? EDP_AFTER_FSDP : EDP_FREE, 0, 0, k, FSDP_BEFORE};
    if (ex > 0 && cx->edp_shard > 1)
        edp_colls(cx, es, p, 0, COLL_ALLGATHER, ex * elem, cx->label_fsdp_egather[st.backward],
                  st.mb, w, NULL, expert);
}

/* Whether FSDP step st all-gathers its unit: every step (FULL_SHARD frees the parameters after
 * each forward and backward), every forward with fsdp.reshard_after_forward false (kept from
 * the forward to the backward), or under a pipeline (fsdp_keep) only the chunk's first
 * forward, micro-batch 0's: the parameters then stay gathered until the step's end. */
int zero_fsdp_gathers(const compile_ctx *cx, fsdp_step st)
{
    if (cx->s->fsdp_version && !cx->s->fsdp_reshard)
        return !st.backward;
    return !cx->fsdp_keep || (!st.backward && st.mb == 0);
}

/* The first step from k on of stage p's program that gathers, or K (none). */
static int fsdp_next_gather(const compile_ctx *cx, const emit_state *es, int p, int k)
{
    int K = es->fsdp_n[p];
    while (k < K && !zero_fsdp_gathers(cx, es->fsdp_seq[(size_t)p * es->fsdp_cap + k]))
        k++;
    return k;
}

/* The reduce-scatter of unit `unit` of chunk mc's gradients, once FSDP step k (a backward) has
 * ended on every member: per tensor index over the data-parallel groups the dense gradients
 * (HSDP: then the all-reduce of their shard across the replicas), then (an expert layout) over
 * the expert shard groups the routed experts' (HSDP: then their shards' all-reduce across the
 * replicas, edp_reduce). */
static void fsdp_reduce(compile_ctx *cx, emit_state *es, int p, int mc, int unit, int mb, int k,
                        uint32_t *task, uint32_t *dep)
{
    double dn, ex;
    fsdp_unit_params(cx, mc, unit, &dn, &ex);
    for (int t = 0; t < cx->tp_sim; t++) {
        double bytes = dn * fsdp_reduce_elem(cx);
        for (int d = 0; d < cx->dp_sim; d++)
            dep[d] = fsdp_task(cx, es, p, d, t, k, FSDP_LAST);
        fsdp_copy_reduce_pre(cx, p, t, dn, mb, dep);
        dp_colls(cx, es, p, t, 0, COLL_REDUCE_SCATTER, bytes, cx->label_fsdp_rs, mb, task);
        dp_deps(cx, task, dep);
        if (cx->n_shard_groups > 1)
            dp_colls(cx, es, p, t, 1, COLL_ALLREDUCE, bytes / cx->shard, cx->label_hsdp_ar, mb,
                     task);
        fsdp_copy_reduce_post(cx, p, t, dn, mb);
    }
    edp_wait w = {EDP_AFTER_FSDP, 0, 0, k, FSDP_LAST};
    if (ex > 0)
        edp_reduce(cx, es, p, COLL_REDUCE_SCATTER, ex * cx->grad_elem, cx->label_fsdp_ers, mb, w);
}

/* The reduce-scatters FSDP step k ends with: without a pipeline its unit's, as soon as its
 * backward ends, every micro-batch. Under a pipeline (PyTorch's REDUCE_GRAD action after a
 * stage's last backward: post_backward on every FSDP state, in module order) none until the
 * chunk's last micro-batch's backward is over (its last step, unit 0), then every unit's, in
 * forward order. */
static void fsdp_reduces(compile_ctx *cx, emit_state *es, int p, int k, uint32_t *task,
                         uint32_t *dep)
{
    fsdp_step st = es->fsdp_seq[(size_t)p * es->fsdp_cap + k];
    if (!st.backward)
        return;
    if (!cx->fsdp_keep) {
        fsdp_reduce(cx, es, p, st.mc, st.unit, st.mb, k, task, dep);
        return;
    }
    if (st.mb != cx->M - 1 || st.unit != 0)
        return;
    for (int u = 0; u < compile_chunk_ref(cx, st.mc)->n_units; u++)
        fsdp_reduce(cx, es, p, st.mc, u, st.mb, k, task, dep);
}

/* ZeRO-3 (FSDP). Without a pipeline (FULL_SHARD): every unit's parameters are all-gathered
 * before its forward and again before its backward; its gradients are reduce-scattered (HSDP:
 * then all-reduced across the replicas) as soon as its backward ends, every micro-batch. Under
 * a pipeline the gathering steps are the chunks' first forwards only (fsdp_gathers), the
 * reduce-scatters follow each chunk's last backward (fsdp_reduces). Prefetch one gathering step
 * ahead, like FSDP's backward prefetch and limit_all_gathers: the next gather is issued when
 * the current gathering step starts computing (once the step before it is done) and each
 * gathering step waits for its own; on the DP stream it comes before the current step's
 * reduce-scatters. The first gather of the iteration waits for nothing. With an expert layout
 * a unit's routed experts are gathered and reduced over the expert-data-parallel groups, right
 * after its dense parameters. The program is emitted step by step over every tensor index:
 * an expert-data-parallel group mixes tensor indices, and each rank's DP stream runs its
 * collectives in emission order, so every rank must meet them in one order. */
void zero_emit_fsdp(compile_ctx *cx, emit_state *es)
{
    if (!cx->fsdp)
        return;
    size_t n = (size_t)cx->n_sim;
    uint32_t *cur = xmalloc((4 * n + (size_t)cx->dp + cx->dp_sim) * sizeof *cur);
    uint32_t *cur_ex = cur + n, *next = cur + 2 * n, *next_ex = cur + 3 * n;
    uint32_t *task = cur + 4 * n, *dep = task + cx->dp;
    for (int p = 0; p < cx->pp; p++) {
        int K = es->fsdp_n[p], g = fsdp_next_gather(cx, es, p, 0);
        for (size_t j = 0; j < n; j++)
            assert(es->fsdp_next[p * n + j] == K); /* every step recorded */
        if (g < K)
            fsdp_gather(cx, es, p, g, -1, cur, cur_ex, task, dep);
        for (int k = 0; k < K; k++) {
            if (k == g) {
                g = fsdp_next_gather(cx, es, p, k + 1);
                if (g < K)
                    fsdp_gather(cx, es, p, g, k, next, next_ex, task, dep);
                for (size_t j = 0; j < n; j++) {
                    int d = (int)j / cx->tp_sim, t = (int)j % cx->tp_sim;
                    uint32_t first = fsdp_task(cx, es, p, d, t, k, FSDP_FIRST);
                    graph_add_edge(cx->g, cur[j], first);
                    if (cur_ex[j] != NONE)
                        graph_add_edge(cx->g, cur_ex[j], first);
                }
                memcpy(cur, next, 2 * n * sizeof *cur); /* cur and cur_ex */
            }
            fsdp_reduces(cx, es, p, k, task, dep);
        }
    }
    free(cur);
}

double zero_stage_params(compile_ctx *cx, int p)
{
    double params = 0;
    for (int c = 0; c < cx->v; c++)
        params += compile_chunk_ref(cx, compile_chunk_of(cx, p, c))->params;
    return params;
}

double zero_stage_expert_params(compile_ctx *cx, int p)
{
    double params = 0;
    for (int c = 0; c < cx->v; c++)
        params += compile_chunk_ref(cx, compile_chunk_of(cx, p, c))->expert_params;
    return params;
}

/* Optimizer step on each simulated rank's (ZeRO: its shard of the) parameters: GPU kernels at
 * the rank's own speed (slowdown included), plus the step's host overhead, once its gradient
 * collectives are done (its DP stream runs in order: the latest one). */
void zero_emit_optimizer(compile_ctx *cx, const compiled_plan *out, emit_state *es)
{
    const strategy *s = cx->s;
    for (int r = 0; r < cx->c->n_gpus; r++) {
        if (!cx->rank_simulated[r])
            continue;
        double expert = zero_stage_expert_params(cx, out->stage_of_rank[r]);
        double params = zero_stage_params(cx, out->stage_of_rank[r]) - expert;
        if (s->zero >= 1) /* dense state sharded over DP, expert state over EDP */
            params = params / cx->shard + expert / cx->edp_shard;
        else
            params += expert;
        double slow = cx->prof_slowdown[cx->prof_of_rank[r]];
        double secs = s->optimizer == OPT_NONE
                          ? 0.0
                          : cost_optimizer_seconds(params, s->optimizer == OPT_ADAM, s->precision,
                                                   s->master_weights, cx->c->device[r]) *
                                    slow +
                                cost_iteration_overhead_seconds();
        assert(secs >= 0);
        es->opt_task[r] = graph_add_compute(cx->g, r, CAT_OPTIMIZER, secs, cx->label_opt, -1);
        if (es->last_dp[r] != NONE)
            graph_add_edge(cx->g, es->last_dp[r], es->opt_task[r]);
    }
}

/* ZeRO 1/2: gather the updated parameter shards in each shard group (unless the next step's
 * forward does). ZeRO-3 gathers nothing here: the next step's forward gathers unit by unit. */
void zero_emit_param_allgather(compile_ctx *cx, emit_state *es)
{
    const strategy *s = cx->s;
    if (!(s->zero == 1 || s->zero == 2) || cx->dp == 1 || es->gather)
        return;
    uint32_t *task = xmalloc(((size_t)cx->dp + cx->dp_sim) * sizeof *task), *dep = task + cx->dp;
    double elem = precision_bytes(s->precision);
    for (int p = 0; p < cx->pp; p++) {
        double expert = zero_stage_expert_params(cx, p);
        for (int t = 0; t < cx->tp_sim; t++) {
            double bytes = (zero_stage_params(cx, p) - expert) * elem;
            dp_colls(cx, es, p, t, 0, COLL_ALLGATHER, bytes, cx->label_dp[COLL_ALLGATHER], -1,
                     task);
            for (int d = 0; d < cx->dp_sim; d++)
                dep[d] = es->opt_task[compile_rank_of(s, t, d, p)];
            dp_deps(cx, task, dep);
        }
        edp_wait w = {EDP_AFTER_STEP, 0, 0, 0, 0};
        if (expert > 0 && cx->edp_shard > 1)
            edp_colls(cx, es, p, 0, COLL_ALLGATHER, expert * elem, cx->label_edp[COLL_ALLGATHER],
                      -1, w, NULL, NULL);
    }
    free(task);
}
