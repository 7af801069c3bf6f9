/* expert.c: expert parallelism in the execution graph (docs/design-notes.md, "Expert
 * parallelism"): Megatron-Core's rank groups, the all-to-alls and expert-tensor collectives. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"
#include "compile_ctx.h"

/* A group of `n` ranks in ring order, the first `tasked` simulated, the others stand-ins. */
static int add_group(compile_ctx *cx, const int *ranks, int n, int tasked)
{
    for (int i = 0; i < n; i++)
        assert(ranks[i] >= 0 && ranks[i] < cx->c->n_gpus);
    int id = graph_add_group_stand_ins(cx->g, ranks, n, tasked);
    assert(cx->g->groups[id].n == (uint32_t)n);
    return id;
}

/* Members of an expert group of each kind. */
static int kind_size(const compile_ctx *cx, int kind)
{
    return kind == KIND_EP ? cx->ep : kind == KIND_ETP ? cx->etp : cx->edp;
}

int compile_expert_members(const compile_ctx *cx, int kind, int entry, int *idx)
{
    int n = kind_size(cx, kind);
    for (int k = 0; k < n; k++) {
        if (kind == KIND_EP)
            idx[k] = compile_expert_stage_index(cx, entry % cx->etp, k, entry / cx->etp);
        else if (kind == KIND_ETP)
            idx[k] = compile_expert_stage_index(cx, k, entry % cx->ep, entry / cx->ep);
        else
            idx[k] = compile_expert_stage_index(cx, entry % cx->etp, entry / cx->etp, k);
    }
    if (!cx->inner)
        return n;
    int tasked = 0;
    for (int k = 0; k < n; k++) /* stable: the simulated ones to the front */
        if (cx->member_of[idx[k]] >= 0) {
            int v = idx[k];
            memmove(idx + tasked + 1, idx + tasked, (size_t)(k - tasked) * sizeof *idx);
            idx[tasked++] = v;
        }
    return tasked;
}

/* The entry of the expert group (kind as expert_members) holding stage index i. */
static int expert_entry(const compile_ctx *cx, int kind, int i)
{
    int et, e, x;
    compile_expert_coords(cx, i, &et, &e, &x);
    return kind == KIND_EP    ? x * cx->etp + et
           : kind == KIND_ETP ? x * cx->ep + e
                              : e * cx->etp + et;
}

/* Inner folding: stage p's expert groups of one kind (n_entries of them, ids[entry]): a group
 * holding a simulated member is made with them tasked first; one without, but in replica 0,
 * as the shifted copy of the group its members' twins are in (its members in the order of that
 * group's, shifted), listed in *pairs as (parent entry + base, group id) for the companion
 * lists; the others are not emitted (-1). */
static void make_inner_expert_groups(compile_ctx *cx, int p, int kind, int n_entries, int base,
                                     int *ids, int **pairs, int *n_pairs, size_t *cap)
{
    int n = kind_size(cx, kind), B = cx->tp * cx->cp;
    /* an EDP ring crosses data replicas, whose context indices the shifts do not rotate as one
     * ring: its loads are invariant with one data replica only */
    int invariant = kind != KIND_EDP || cx->s->dp == 1;
    int *idx = xmalloc((size_t)3 * n * sizeof *idx), *pidx = idx + n, *ranks = idx + 2 * n;
    for (int k = 0; k < n_entries; k++) {
        int tasked = compile_expert_members(cx, kind, k, idx), in_b = -1;
        ids[k] = -1;
        for (int m = 0; m < n; m++)
            ranks[m] = compile_stage_rank(cx, idx[m], p);
        if (tasked > 0) {
            ids[k] = add_group(cx, ranks, n, tasked);
            if (invariant)
                graph_set_group_invariant(cx->g, ids[k]);
            continue;
        }
        for (int m = 0; m < n && in_b < 0; m++)
            if (idx[m] < B)
                in_b = idx[m];
        if (in_b < 0)
            continue;
        int a, b, parent = expert_entry(cx, kind, cx->twin_index[in_b]);
        compile_twin_shift(cx, in_b, &a, &b);
        compile_expert_members(cx, kind, parent, pidx);
        for (int m = 0; m < n; m++) {
            int q = compile_shift_index(cx, pidx[m], a, b);
            ranks[m] = compile_stage_rank(cx, q, p);
            assert(expert_entry(cx, kind, q) == k); /* shift_alike: groups map onto groups */
        }
        xgrow(pairs, sizeof **pairs, (size_t)2 * (*n_pairs + 1), cap);
        (*pairs)[2 * *n_pairs] = base + parent;
        (*pairs)[2 * *n_pairs + 1] = add_group(cx, ranks, n, n);
        if (invariant)
            graph_set_group_invariant(cx->g, (*pairs)[2 * *n_pairs + 1]);
        ++*n_pairs;
    }
    free(idx);
}

/* Companion lists (first[entries + 1], list) from (entry, group) pairs. */
static void comp_lists(const int *pairs, int n_pairs, int entries, int **first, int **list)
{
    *first = xcalloc((size_t)entries + 1, sizeof **first);
    *list = xmalloc(((size_t)n_pairs + 1) * sizeof **list);
    for (int k = 0; k < n_pairs; k++)
        (*first)[pairs[2 * k] + 1]++;
    for (int e = 0; e < entries; e++)
        (*first)[e + 1] += (*first)[e];
    int *fill = xcalloc((size_t)entries + 1, sizeof *fill);
    for (int k = 0; k < n_pairs; k++) {
        int e = pairs[2 * k];
        (*list)[(*first)[e] + fill[e]++] = pairs[2 * k + 1];
    }
    free(fill);
}

/* The simulated ranks of each stage (sim_rank[p * n_sim + j], j = d * tp + t) and the groups
 * they compute in: TP groups per simulated replica, and with an expert layout the EP and ETP
 * groups holding a simulated rank (all their members: with blocks every one is simulated, with
 * stand-ins the others lend their links to the collectives but take no task) and every EDP group of the stage (expert
 * gradients; members outside the simulated replicas are folded as DP members are): with HSDP
 * its shard groups inside each replica and its replica groups across them. */
void compile_make_stage_groups(compile_ctx *cx)
{
    /* HSDP splits the EDP groups by replica (strategy_validate: an EP x ETP group fits in one) */
    cx->edp_shard = cx->edp / cx->n_shard_groups;
    int tp = cx->tp, n = cx->n_sim, pp = cx->pp, ep = cx->ep, etp = cx->etp, edp = cx->edp;
    int most = tp > ep ? tp : ep;
    most = most > etp ? most : etp;
    most = most > edp ? most : edp;
    int *ranks = xmalloc((size_t)most * sizeof *ranks);
    int ts = cx->tp_sim;
    cx->sim_rank = xmalloc((size_t)pp * n * sizeof *cx->sim_rank);
    cx->rank_simulated = xcalloc((size_t)cx->c->n_gpus, 1);
    cx->tp_group = xmalloc((size_t)pp * cx->dp_sim * sizeof *cx->tp_group);
    cx->n_tp_comp = cx->inner ? cx->cp / cx->dp_sim - 1 : 0;
    cx->tp_comp = xmalloc(((size_t)pp * cx->dp_sim * cx->n_tp_comp + 1) * sizeof *cx->tp_comp);
    for (int p = 0; p < pp; p++) {
        for (int j = 0; j < n; j++) {
            int r = compile_rank_of(cx->s, j % ts, j / ts, p);
            cx->sim_rank[(size_t)p * n + j] = r;
            cx->rank_simulated[r] = 1;
        }
        for (int d = 0; d < cx->dp_sim; d++) { /* folded: index 0 tasked, its peers stand-ins */
            for (int t = 0; t < tp; t++)
                ranks[t] = compile_rank_of(cx->s, t, d, p);
            cx->tp_group[p * cx->dp_sim + d] = add_group(cx, ranks, tp, ts);
            if (cx->inner) /* the fold's shifts map its collectives onto themselves */
                graph_set_group_invariant(cx->g, cx->tp_group[p * cx->dp_sim + d]);
        }
        /* inner folding: replica 0's other TP groups, companions of their twins' */
        for (int d = cx->dp_sim; d < cx->cp && cx->inner; d++) {
            for (int t = 0; t < tp; t++)
                ranks[t] = compile_rank_of(cx->s, t, d, p);
            int m = d / cx->dp_sim - 1, w = d % cx->dp_sim;
            int id = graph_add_group(cx->g, ranks, tp);
            graph_set_group_invariant(cx->g, id);
            cx->tp_comp[((size_t)p * cx->dp_sim + w) * cx->n_tp_comp + m] = id;
        }
    }
    if (!cx->expert_layout) {
        free(ranks);
        return;
    }
    /* EP group (et, x) and ETP group (e, x) are emitted when they hold a simulated rank: their
     * smallest stage index (EP index 0, expert-tensor index 0) is below n */
    int n_epg = edp * etp, n_etpg = edp * ep;
    cx->ep_group = xmalloc((size_t)pp * n_epg * sizeof *cx->ep_group);
    cx->etp_group = etp > 1 ? xmalloc((size_t)pp * n_etpg * sizeof *cx->etp_group) : NULL;
    int xs = cx->edp_shard, R = cx->n_shard_groups;
    cx->edp_group = xs > 1 ? xmalloc((size_t)pp * ep * etp * R * sizeof *cx->edp_group) : NULL;
    cx->edp_rep_group =
        R > 1 ? xmalloc((size_t)pp * ep * etp * xs * sizeof *cx->edp_rep_group) : NULL;
    int *pairs[3] = {NULL, NULL, NULL}, n_pairs[3] = {0, 0, 0};
    size_t cap[3] = {0, 0, 0};
    /* inner folding with the EP groups inside replica 0: every EDP group holds a rank of it */
    cx->inner_edp = cx->inner && xs > 1 && ep * etp <= cx->tp * cx->cp;
    for (int p = 0; p < pp; p++) {
        if (cx->inner_edp)
            make_inner_expert_groups(cx, p, KIND_EDP, ep * etp, p * ep * etp,
                                     cx->edp_group + (size_t)p * ep * etp, &pairs[2], &n_pairs[2],
                                     &cap[2]);
        if (cx->inner) {
            if (ep > 1)
                make_inner_expert_groups(cx, p, 0, n_epg, p * n_epg,
                                         cx->ep_group + (size_t)p * n_epg, &pairs[0], &n_pairs[0],
                                         &cap[0]);
            if (etp > 1)
                make_inner_expert_groups(cx, p, 1, n_etpg, p * n_etpg,
                                         cx->etp_group + (size_t)p * n_etpg, &pairs[1], &n_pairs[1],
                                         &cap[1]);
        }
        for (int x = 0; x < edp && !cx->inner; x++)
            for (int et = 0; et < etp; et++) {
                int *grp = &cx->ep_group[(size_t)p * n_epg + (size_t)x * etp + et];
                *grp = -1;
                if (ep == 1 || compile_expert_stage_index(cx, et, 0, x) >= n)
                    continue;
                int tasked = 0; /* the simulated ranks come first (EP index 0 .. n / etp - 1) */
                for (int e = 0; e < ep; e++) {
                    int i = compile_expert_stage_index(cx, et, e, x);
                    ranks[e] = compile_stage_rank(cx, i, p);
                    tasked += i < n;
                    assert((i < n) == (e < tasked));
                }
                *grp = add_group(cx, ranks, ep, tasked);
            }
        for (int x = 0; x < edp && etp > 1 && !cx->inner; x++)
            for (int e = 0; e < ep; e++) {
                int *grp = &cx->etp_group[(size_t)p * n_etpg + (size_t)x * ep + e];
                *grp = -1;
                if (compile_expert_stage_index(cx, 0, e, x) >= n)
                    continue;
                for (int et = 0; et < etp; et++)
                    ranks[et] = compile_stage_rank(cx, compile_expert_stage_index(cx, et, e, x), p);
                *grp = add_group(cx, ranks, etp, etp);
            }
        for (int e = 0; e < ep && !cx->inner_edp; e++)
            for (int et = 0; et < etp; et++) {
                size_t pe = ((size_t)p * ep + e) * etp + et;
                for (int r = 0; r < R && xs > 1; r++) { /* EDP indices r xs .. r xs + xs - 1 */
                    for (int m = 0; m < xs; m++)
                        ranks[m] = compile_stage_rank(
                            cx, compile_expert_stage_index(cx, et, e, r * xs + m), p);
                    cx->edp_group[pe * R + r] = add_group(cx, ranks, xs, xs);
                }
                for (int j = 0; j < xs && R > 1; j++) { /* EDP indices j + m xs */
                    for (int m = 0; m < R; m++)
                        ranks[m] = compile_stage_rank(
                            cx, compile_expert_stage_index(cx, et, e, j + m * xs), p);
                    cx->edp_rep_group[pe * xs + j] = add_group(cx, ranks, R, R);
                }
            }
    }
    if (cx->inner) {
        comp_lists(pairs[0], n_pairs[0], pp * n_epg, &cx->ep_comp_first, &cx->ep_comp);
        comp_lists(pairs[1], n_pairs[1], pp * n_etpg, &cx->etp_comp_first, &cx->etp_comp);
        comp_lists(pairs[2], n_pairs[2], pp * ep * etp, &cx->edp_comp_first, &cx->edp_comp);
    }
    free(pairs[2]);
    free(pairs[0]);
    free(pairs[1]);
    free(ranks);
}

void compile_free_stage_groups(compile_ctx *cx)
{
    free(cx->tp_comp);
    free(cx->ep_comp_first);
    free(cx->ep_comp);
    free(cx->etp_comp_first);
    free(cx->etp_comp);
    free(cx->edp_comp_first);
    free(cx->edp_comp);
    free(cx->sim_rank);
    free(cx->rank_simulated);
    free(cx->tp_group);
    free(cx->ep_group);
    free(cx->etp_group);
    free(cx->edp_group);
    free(cx->edp_rep_group);
}

/* The simulated members (stage indices, the group's first n) of an expert collective `coll`
 * (task per member in group order) join it, each after its after[j], which it becomes. The
 * stand-ins that may follow them in the group have no task (graph_add_group_stand_ins). */
static void join_expert_coll(compile_ctx *cx, const int *members, int n, const uint32_t *coll,
                             uint32_t *after)
{
    for (int k = 0; k < n; k++) {
        int j = cx->inner ? cx->member_of[members[k]] : members[k] < cx->n_sim ? members[k] : -1;
        if (j < 0)
            break;
        graph_set_host(cx->g, coll[k], HOST_ISSUE, cost_comm_call_seconds(), 0.0);
        if (after[j] != NONE)
            graph_add_edge(cx->g, after[j], coll[k]);
        after[j] = coll[k];
    }
}

/* The expert-tensor collective of every emitted ETP group of stage p: the all-gather of the
 * tokens the all-to-all brought (into the experts) or the reduce-scatter of the experts'
 * partial outputs (out of them), over the group's gathered buffer: etp x a member's tokens at
 * its load. */
static void emit_etp_coll(compile_ctx *cx, int p, coll_kind kind, int micro, stream_id stream,
                          uint32_t *after)
{
    int etp = cx->etp, *members = xmalloc((size_t)etp * sizeof *members); /* heap: up to GPUs */
    uint32_t *coll = xmalloc((size_t)etp * sizeof *coll);
    for (int x = 0; x < cx->edp; x++)
        for (int e = 0; e < cx->ep; e++) {
            int grp = cx->etp_group[(size_t)p * cx->edp * cx->ep + (size_t)x * cx->ep + e];
            if (grp < 0)
                continue;
            size_t k = (size_t)p * cx->edp * cx->ep + (size_t)x * cx->ep + e;
            compile_expert_members(cx, KIND_ETP, x * cx->ep + e, members);
            double bytes = etp * cx->ep_bytes * compile_expert_load(cx, members[0]);
            int c = graph_add_collective(cx->g, kind, grp, stream, bytes, CAT_EP_COMM,
                                         cx->label_etp[kind == COLL_REDUCE_SCATTER], micro, coll);
            if (cx->inner && cx->etp_comp_first[k + 1] > cx->etp_comp_first[k])
                graph_set_coll_companions(cx->g, c, cx->etp_comp + cx->etp_comp_first[k],
                                          cx->etp_comp_first[k + 1] - cx->etp_comp_first[k]);
            join_expert_coll(cx, members, etp, coll, after);
        }
    free(members);
    free(coll);
}

/* The all-to-all of every emitted EP group of stage p. Member k sends its tokens' copies
 * (ep_bytes, balanced) to the ranks holding their experts: into the experts the receiver's
 * load sets its share, out of them the sender's (the busiest rank, EP index 0, holds more). */
static void emit_ep_a2a(compile_ctx *cx, int p, int out, int micro, stream_id stream,
                        uint32_t *after)
{
    int ep = cx->ep, etp = cx->etp, *members = xmalloc((size_t)ep * sizeof *members);
    uint32_t *coll = xmalloc((size_t)ep * sizeof *coll);
    double *share = xmalloc((size_t)ep * sizeof *share), *matrix = NULL;
    int even = 1;
    for (int e = 0; e < ep; e++) {
        share[e] = compile_expert_load(cx, compile_expert_stage_index(cx, 0, e, 0));
        even = even && share[e] == 1.0;
    }
    if (!even) { /* an uneven router: the bytes of each member pair */
        matrix = xmalloc((size_t)ep * ep * sizeof *matrix);
        for (int a = 0; a < ep; a++)
            for (int b = 0; b < ep; b++)
                matrix[a * ep + b] = cx->ep_bytes / ep * share[out ? a : b];
    }
    for (int x = 0; x < cx->edp; x++)
        for (int et = 0; et < etp; et++) {
            int grp = cx->ep_group[(size_t)p * cx->edp * etp + (size_t)x * etp + et];
            if (grp < 0)
                continue;
            size_t k = (size_t)p * cx->edp * etp + (size_t)x * etp + et;
            compile_expert_members(cx, KIND_EP, x * etp + et, members);
            if (even) {
                int c = graph_add_collective(cx->g, COLL_ALLTOALL, grp, stream, cx->ep_bytes,
                                             CAT_EP_COMM, cx->label_ep[out], micro, coll);
                if (cx->inner && cx->ep_comp_first[k + 1] > cx->ep_comp_first[k])
                    graph_set_coll_companions(cx->g, c, cx->ep_comp + cx->ep_comp_first[k],
                                              cx->ep_comp_first[k + 1] - cx->ep_comp_first[k]);
            } else {
                assert(!cx->inner); /* inner folding needs an even load */
                graph_add_alltoallv(cx->g, grp, stream, matrix, CAT_EP_COMM, cx->label_ep[out],
                                    micro, coll);
            }
            join_expert_coll(cx, members, ep, coll, after);
        }
    free(matrix);
    free(members);
    free(coll);
    free(share);
}

/* Expert parallelism's collectives at a cut: into the experts the all-to-all then the
 * expert-tensor all-gather; out of them the reduce-scatter then the all-to-all. On the TP
 * stream, or with expert.overlap_a2a and under DualPipe and DualPipeV on the EP stream
 * (Megatron-Core's communication stream of the combined 1F1B, DualPipe's communication SMs,
 * where they run beside the other micro-batch's compute and TP collectives). */
void compile_emit_expert_cut(compile_ctx *cx, int p, int cut, int micro, uint32_t *after)
{
    int out = cut == CUT_EP_OUT;
    int merges = cx->s->overlap_a2a || pipeline_merges_steps(cx->s->schedule);
    stream_id stream = merges ? STREAM_EP : STREAM_TP;
    if (out && cx->etp > 1)
        emit_etp_coll(cx, p, COLL_REDUCE_SCATTER, micro, stream, after);
    if (cx->ep > 1)
        emit_ep_a2a(cx, p, out, micro, stream, after);
    if (!out && cx->etp > 1)
        emit_etp_coll(cx, p, COLL_ALLGATHER, micro, stream, after);
}
