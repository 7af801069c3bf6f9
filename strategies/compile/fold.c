/* fold.c: the folding rule (compile.h compile_options): which data-parallel replicas the
 * compiler simulates, and the checks that the others provably behave like them. */
#include "compile_ctx.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../sim/base/xalloc.h"

/* The routes the checks below have looked up, by (source, destination) rank: each reference
 * route (replica 0's, tensor index 0's) is compared with every other replica's or index's, so
 * it is looked up once (open addressing, at most half full). */
typedef struct route_cache {
    const cluster *c;
    uint64_t *key; /* (a << 32 | b) + 1, 0: empty */
    double *bw, *lat;
    size_t mask, used;
} route_cache;

static void cache_init(route_cache *rc, const cluster *c)
{
    rc->c = c;
    rc->mask = 1023;
    rc->used = 0;
    rc->key = xcalloc(rc->mask + 1, sizeof *rc->key);
    rc->bw = xmalloc((rc->mask + 1) * sizeof *rc->bw);
    rc->lat = xmalloc((rc->mask + 1) * sizeof *rc->lat);
}

static void cache_free(route_cache *rc)
{
    free(rc->key);
    free(rc->bw);
    free(rc->lat);
}

static size_t cache_slot(const route_cache *rc, uint64_t k)
{
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & rc->mask;
    while (rc->key[i] && rc->key[i] != k)
        i = (i + 1) & rc->mask;
    return i;
}

static void cache_grow(route_cache *rc)
{
    route_cache old = *rc;
    rc->mask = 2 * old.mask + 1;
    rc->key = xcalloc(rc->mask + 1, sizeof *rc->key);
    rc->bw = xmalloc((rc->mask + 1) * sizeof *rc->bw);
    rc->lat = xmalloc((rc->mask + 1) * sizeof *rc->lat);
    for (size_t i = 0; i <= old.mask; i++)
        if (old.key[i]) {
            size_t j = cache_slot(rc, old.key[i]);
            rc->key[j] = old.key[i];
            rc->bw[j] = old.bw[i];
            rc->lat[j] = old.lat[i];
        }
    cache_free(&old);
}

/* cluster_route(a, b), looked up once. */
static void cached_route(route_cache *rc, int a, int b, double *bw, double *lat)
{
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    size_t i = cache_slot(rc, k);
    if (!rc->key[i]) {
        if (2 * (rc->used + 1) > rc->mask + 1) {
            cache_grow(rc);
            i = cache_slot(rc, k);
        }
        rc->key[i] = k;
        cluster_route(rc->c, a, b, &rc->bw[i], &rc->lat[i]);
        rc->used++;
    }
    *bw = rc->bw[i];
    *lat = rc->lat[i];
}

/* Whether the routes a -> b and a0 -> b0 have the same bottleneck bandwidth and latency. */
static int same_route(route_cache *rc, int a, int b, int a0, int b0)
{
    const cluster *c = rc->c;
    /* the executor picks flat or hierarchical collectives by how a group spans nodes */
    if ((c->node_of_rank[a] == c->node_of_rank[b]) != (c->node_of_rank[a0] == c->node_of_rank[b0]))
        return 0;
    double bw, lat, bw0, lat0;
    cluster_route(c, a, b, &bw, &lat);
    cached_route(rc, a0, b0, &bw0, &lat0);
    if (isinf(bw) || isinf(bw0))
        return isinf(bw) && isinf(bw0) && fabs(lat - lat0) <= 1e-9 * fabs(lat0);
    return fabs(bw - bw0) <= 1e-9 * bw0 && fabs(lat - lat0) <= 1e-9 * fabs(lat0);
}

/* Folding needs replicas that provably behave like replica 0, position by position: the same
 * GPU model and slowdown, and for each stage the same bottleneck bandwidth and latency on the
 * routes between its TP peers, to its pipeline neighbours (both ways; the last stage's next
 * is the first under the interleaved schedule), to its mirror stage under DualPipe (the copies'
 * gradient all-reduce) and to its next context rank (both ways), with
 * the peers on the same node or not alike (so a TP group spans nodes the same way). DP
 * collectives run over all members' links folded or not, so their routes need no check. A
 * position is (tensor index, context index, stage); d runs over data x context indices. */
static int replicas_alike(const strategy *s, route_cache *rc)
{
    const cluster *c = rc->c;
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
                    if (u != t && !same_route(rc, r, compile_rank_of(s, u, d, p), r0,
                                              compile_rank_of(s, u, d0, p)))
                        return 0;
                int q = p + 1 < s->pp ? p + 1 : (wrap ? 0 : -1);
                if (q >= 0 && q != p) {
                    int n = compile_rank_of(s, t, d, q), n0 = compile_rank_of(s, t, d0, q);
                    if (!same_route(rc, r, n, r0, n0) || !same_route(rc, n, r, n0, r0))
                        return 0;
                }
                int mq = s->pp - 1 - p; /* DualPipe: the mirror stage its copy sync reaches */
                if (strategy_two_copies(s) && mq != p) {
                    int n = compile_rank_of(s, t, d, mq), n0 = compile_rank_of(s, t, d0, mq);
                    if (!same_route(rc, r, n, r0, n0) || !same_route(rc, n, r, n0, r0))
                        return 0;
                }
                if (cp > 1) {
                    int e0 = (d0 + 1) % cp, n = compile_rank_of(s, t, d - d0 + e0, p),
                        n0 = compile_rank_of(s, t, e0, p);
                    if (!same_route(rc, r, n, r0, n0) || !same_route(rc, n, r, n0, r0))
                        return 0;
                }
            }
    return 1;
}

int compile_fold_twin(const compile_ctx *cx, int i)
{
    if (cx->inner)
        return cx->twin_index[i];
    if (i < cx->n_sim)
        return i;
    if (!cx->ep_stand_in)
        return i % cx->n_sim;
    /* the simulated block is EP indices 0 .. m - 1 of the first EP groups: keep the expert-tensor
     * index and the load (EP index 0 holds the busiest expert, any other index the others' load) */
    int et, e, x, m = cx->n_sim / cx->etp;
    compile_expert_coords(cx, i, &et, &e, &x);
    int e0 = e % m;
    if (e != 0 && e0 == 0 && m > 1)
        e0 = 1;
    return compile_expert_stage_index(cx, et, e0, 0);
}

/* Besides replicas_alike, a rank outside the simulated block must reach its EP peers by routes
 * like those of the rank at i % ep_mod (its counterpart in the first EP groups whose
 * all-to-alls are simulated) and its ETP peers like its twin (compile_fold_twin) reaches its
 * own, so that the all-to-alls and ETP collectives that are not simulated would take as long
 * as the simulated ones. */
static int expert_routes_alike(const compile_ctx *cx, int ep_mod, route_cache *rc)
{
    for (int p = 0; p < cx->pp; p++)
        for (int i = cx->n_sim; i < cx->tp * cx->dp; i++) {
            int et, e, x, et0, e0, x0, r = compile_stage_rank(cx, i, p);
            compile_expert_coords(cx, i, &et, &e, &x);
            compile_expert_coords(cx, i % ep_mod, &et0, &e0, &x0);
            assert(et0 == et && e0 == e); /* ep_mod is a whole number of ep x etp blocks */
            int r0 = compile_stage_rank(cx, i % ep_mod, p);
            for (int f = 0; f < cx->ep; f++) {
                int q = compile_stage_rank(cx, compile_expert_stage_index(cx, et, f, x), p);
                int q0 = compile_stage_rank(cx, compile_expert_stage_index(cx, et, f, x0), p);
                if (q != r && !same_route(rc, r, q, r0, q0))
                    return 0;
            }
            int w = compile_fold_twin(cx, i), rw = compile_stage_rank(cx, w, p);
            compile_expert_coords(cx, w, &et0, &e0, &x0);
            assert(et0 == et);
            for (int u = 0; u < cx->etp; u++) {
                int q = compile_stage_rank(cx, compile_expert_stage_index(cx, u, e, x), p);
                int q0 = compile_stage_rank(cx, compile_expert_stage_index(cx, u, e0, x0), p);
                if (q != r && !same_route(rc, r, q, rw, q0))
                    return 0;
            }
        }
    return 1;
}

/* Whether ranks a[0..n) reach each other as b[0..n) do, for the collectives' algorithms: the
 * same split over nodes (every pair on one node or not alike), and the same bottleneck bandwidth
 * and latency from each member to the next (ring edges) and from the first to every member
 * (the chain and tree edges a ring or tree over alike nodes uses are among these). */
static int groups_alike(route_cache *rc, const int *a, const int *b, int n)
{
    const cluster *c = rc->c;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((c->node_of_rank[a[i]] == c->node_of_rank[a[j]]) !=
                (c->node_of_rank[b[i]] == c->node_of_rank[b[j]]))
                return 0;
    for (int i = 0; i < n; i++) {
        int k = (i + 1) % n;
        if (k != i &&
            (!same_route(rc, a[i], a[k], b[i], b[k]) || !same_route(rc, a[k], a[i], b[k], b[i])))
            return 0;
        if (i > 0 &&
            (!same_route(rc, a[0], a[i], b[0], b[i]) || !same_route(rc, a[i], a[0], b[i], b[0])))
            return 0;
    }
    return 1;
}

/* Whether the tensor-parallel peers of the simulated replicas (d < dp_sim) provably behave like
 * tensor index 0: at every (d, stage) each peer has index 0's GPU model and slowdown and the same
 * routes to its pipeline neighbours (both ways; the wrap under the interleaved schedule), so its
 * compute and pipeline sends match index 0's; and every data-parallel group of index t (shard
 * groups, and HSDP's replica groups) reaches its members as index 0's does (groups_alike), so
 * that its gradient collectives (index 0's companion groups, run in full) take as long as
 * index 0's and its optimizer step, which is not simulated, would end when index 0's does. The TP collectives run over every member's links
 * folded or not: no check. */
static int tp_peers_alike(const compile_ctx *cx, route_cache *rc)
{
    const strategy *s = cx->s;
    const cluster *c = cx->c;
    int wrap = s->schedule == SCHED_INTERLEAVED && s->virtual_stages > 1, ok = 1;
    int S = cx->shard, G = cx->n_shard_groups;
    int *a = xmalloc((size_t)2 * cx->dp * sizeof *a), *b = a + cx->dp;
    for (int p = 0; p < s->pp && ok; p++)
        for (int t = 1; t < s->tp && ok; t++) {
            for (int d = 0; d < cx->dp_sim && ok; d++) {
                int r = compile_rank_of(s, t, d, p), r0 = compile_rank_of(s, 0, d, p);
                ok = c->device[r] == c->device[r0] &&
                     (!c->slowdown || c->slowdown[r] == c->slowdown[r0]);
                int q = p + 1 < s->pp ? p + 1 : (wrap ? 0 : -1);
                if (ok && q >= 0 && q != p) {
                    int n = compile_rank_of(s, t, d, q), n0 = compile_rank_of(s, 0, d, q);
                    ok = same_route(rc, r, n, r0, n0) && same_route(rc, n, r, n0, r0);
                }
                int mq = s->pp - 1 - p; /* DualPipe's mirror stage */
                if (ok && strategy_two_copies(s) && mq != p) {
                    int n = compile_rank_of(s, t, d, mq), n0 = compile_rank_of(s, 0, d, mq);
                    ok = same_route(rc, r, n, r0, n0) && same_route(rc, n, r, n0, r0);
                }
            }
            for (int g = 0; g < G && ok; g++) { /* shard groups */
                for (int j = 0; j < S; j++) {
                    a[j] = compile_rank_of(s, t, g * S + j, p);
                    b[j] = compile_rank_of(s, 0, g * S + j, p);
                }
                ok = groups_alike(rc, a, b, S);
            }
            for (int j = 0; j < S && G > 1 && ok; j++) { /* HSDP's replica groups */
                for (int g = 0; g < G; g++) {
                    a[g] = compile_rank_of(s, t, g * S + j, p);
                    b[g] = compile_rank_of(s, 0, g * S + j, p);
                }
                ok = groups_alike(rc, a, b, G);
            }
        }
    free(a);
    return ok;
}

static int gcd(int a, int b)
{
    return b ? gcd(b, a % b) : a;
}

/* Whether the EP groups can fold with stand-ins: the block of cp replicas (n = cp x tp ranks)
 * tiles the first EP groups (etp divides n, n divides ep x etp, and is smaller), and with
 * imbalance it holds a rank of each load (EP index 0, the busiest, and another), whose timeline
 * the stand-ins of that load follow. Imbalance with expert-tensor parallelism keeps the blocks:
 * TP4 EP8 ETP2 over DP8 on 4 DGX H100 folded with stand-ins came out 1e-5 slower than the full
 * run (not explained; the blocks match it exactly), every other plan checked was exact. */
static int ep_stand_in_fits(const compile_ctx *cx)
{
    int n = cx->cp * cx->tp, g = cx->ep * cx->etp;
    if (cx->ep == 1 || n % cx->etp || g % n || n == g)
        return 0;
    int even = compile_expert_load(cx, 0) == compile_expert_load(cx, cx->etp);
    return even || (cx->etp == 1 && n >= 2);
}

int compile_twin_rank(const compile_ctx *cx, int t, int d, int p)
{
    int i = t + cx->tp * d;
    if (cx->inner || cx->ep_stand_in)
        return compile_stage_rank(cx, compile_fold_twin(cx, i), p);
    return compile_rank_of(cx->s, t < cx->tp_sim ? t : 0, d % cx->dp_sim, p);
}

int compile_shift_index(const compile_ctx *cx, int i, int a, int b)
{
    int t = i % cx->tp, d = i / cx->tp, c = d % cx->cp;
    return (t + a) % cx->tp + cx->tp * (d - c + (c + b) % cx->cp);
}

void compile_twin_shift(const compile_ctx *cx, int i, int *a, int *b)
{
    assert(cx->inner && i < cx->tp * cx->cp);
    int w = cx->twin_index[i];
    *a = (i % cx->tp - w % cx->tp + cx->tp) % cx->tp;
    *b = i / cx->tp - w / cx->tp;
}

void compile_fold_tables(compile_ctx *cx)
{
    size_t n = (size_t)cx->n_sim * cx->pp;
    cx->pp_pairs = xmalloc(2 * n * sizeof *cx->pp_pairs);
    cx->cp_pairs = xmalloc(n * sizeof *cx->cp_pairs);
    for (size_t i = 0; i < n; i++)
        cx->pp_pairs[2 * i] = cx->pp_pairs[2 * i + 1] = cx->cp_pairs[i] = -1;
}

void compile_fold_free(compile_ctx *cx)
{
    free(cx->twin_index);
    free(cx->member_of);
    free(cx->pp_pairs);
    free(cx->cp_pairs);
    cx->twin_index = cx->member_of = cx->pp_pairs = cx->cp_pairs = NULL;
}

int compile_twin_copies(const compile_ctx *cx, int self, int *out)
{
    int n = 0;
    for (int i = 0; i < cx->tp * cx->cp; i++)
        if (cx->member_of[i] < 0 && cx->twin_index[i] == self)
            out[n++] = i;
    return n;
}

int compile_copies_pair_set(compile_ctx *cx, const int *src, const int *dst, int n)
{
    if (n == 0)
        return -2;
    int set = graph_add_pair_set(cx->g, src, dst, n);
    graph_set_pair_set_invariant(cx->g, set); /* the fold's shifts map them onto each other */
    return set;
}

/* Under inner folding, the sends of the ranks of replica 0 whose twin is member j's, from
 * stage p to stage q (next: 1, or previous: 0), as companion pairs of j's send: a pair set made
 * once per (j, p, next). */
static void inner_send_companions(compile_ctx *cx, uint32_t x, int j, int p, int q, int next)
{
    int *set = &cx->pp_pairs[((size_t)j * cx->pp + (size_t)p) * 2 + (size_t)next];
    if (*set == -1) {
        int B = cx->tp * cx->cp, self = j % cx->tp_sim + cx->tp * (j / cx->tp_sim);
        int *src = xmalloc((size_t)2 * B * sizeof *src), *dst = src + B;
        int n = compile_twin_copies(cx, self, dst);
        for (int k = 0; k < n; k++) { /* the same stage index at stages p and q */
            src[k] = compile_stage_rank(cx, dst[k], p);
            dst[k] = compile_stage_rank(cx, dst[k], q);
        }
        *set = compile_copies_pair_set(cx, src, dst, n);
        free(src);
    }
    if (*set >= 0)
        graph_set_companions(cx->g, x, *set);
}

/* With TP folded, the sends of the folded peers of replica d from stage p to stage q (next: 1,
 * or previous: 0) as companion pairs of index 0's send: a pair set made once per (d, p, next). */
void compile_send_companions(compile_ctx *cx, uint32_t x, int j, int p, int q, int next)
{
    if (cx->inner) {
        inner_send_companions(cx, x, j, p, q, next);
        return;
    }
    int d = j / cx->tp_sim;
    if (cx->tp_sim == cx->tp)
        return;
    int *set = &cx->pp_pairs[((size_t)d * cx->pp + (size_t)p) * 2 + (size_t)next];
    if (*set < 0) {
        int n = cx->tp - 1, *src = xmalloc((size_t)2 * n * sizeof *src), *dst = src + n;
        for (int t = 1; t < cx->tp; t++) {
            src[t - 1] = compile_rank_of(cx->s, t, d, p);
            dst[t - 1] = compile_rank_of(cx->s, t, d, q);
        }
        *set = graph_add_pair_set(cx->g, src, dst, n);
        free(src);
    }
    graph_set_companions(cx->g, x, *set);
}

/* Whether peers i and q of stage p (q at stage pq) are reached as their shifted copies reach
 * each other, both ways. */
static int pair_alike(const compile_ctx *cx, route_cache *rc, int i, int p, int q, int pq, int a,
                      int b)
{
    int r = compile_stage_rank(cx, i, p), n = compile_stage_rank(cx, q, pq);
    int r0 = compile_stage_rank(cx, compile_shift_index(cx, i, a, b), p);
    int n0 = compile_stage_rank(cx, compile_shift_index(cx, q, a, b), pq);
    return r == n || (same_route(rc, r0, n0, r, n) && same_route(rc, n0, r0, n, r));
}

/* Expert groups of stage index i: its EP group (et, x), ETP group (e, x), EDP group (e, et). */
static void expert_keys(const compile_ctx *cx, int i, int key[3])
{
    int et, e, x;
    compile_expert_coords(cx, i, &et, &e, &x);
    key[0] = et * cx->edp + x;
    key[1] = e * cx->edp + x;
    key[2] = e * cx->etp + et;
}

/* Whether i's expert peers (EP, ETP, and its EDP ring neighbour) stay its peers once shifted
 * by (a, b) and are reached alike. */
static int expert_peers_alike(const compile_ctx *cx, route_cache *rc, int i, int p, int a, int b)
{
    int et, e, x, ki[3], kq[3];
    compile_expert_coords(cx, i, &et, &e, &x);
    expert_keys(cx, compile_shift_index(cx, i, a, b), ki);
    int peers = cx->ep + cx->etp + 1;
    for (int k = 0; k < peers; k++) {
        int q = k < cx->ep             ? compile_expert_stage_index(cx, et, k, x)
                : k < cx->ep + cx->etp ? compile_expert_stage_index(cx, k - cx->ep, e, x)
                                       : compile_expert_stage_index(cx, et, e, (x + 1) % cx->edp);
        int kind = k < cx->ep ? 0 : k < cx->ep + cx->etp ? 1 : 2;
        expert_keys(cx, compile_shift_index(cx, q, a, b), kq);
        if (kq[kind] != ki[kind] || !pair_alike(cx, rc, i, p, q, p, a, b))
            return 0;
    }
    return 1;
}

/* Whether shifting every stage index by a tensor and b context indices maps the plan onto
 * itself as far as the executor can tell: at every stage each rank and its shifted copy have
 * the same GPU model, slowdown and expert load, and reach their TP peers, pipeline neighbours
 * (both ways; the wrap under the interleaved schedule), context ring neighbours, DP ring
 * neighbours and expert peers (which stay in one group) by routes of the same bottleneck
 * bandwidth and latency, on one node or not alike. Then the shifted rank runs the same timeline
 * and its traffic is the shifted copy of the other's. */
static int shift_alike(const compile_ctx *cx, int a, int b, route_cache *rc)
{
    const strategy *s = cx->s;
    const cluster *c = cx->c;
    int n = cx->tp * cx->dp, wrap = s->schedule == SCHED_INTERLEAVED && s->virtual_stages > 1;
    for (int p = 0; p < cx->pp; p++)
        for (int i = 0; i < n; i++) {
            int j = compile_shift_index(cx, i, a, b), t = i % cx->tp, d = i / cx->tp;
            int r = compile_stage_rank(cx, i, p), rj = compile_stage_rank(cx, j, p);
            if (c->device[r] != c->device[rj] || (c->slowdown && c->slowdown[r] != c->slowdown[rj]))
                return 0;
            if (compile_expert_load(cx, i) != compile_expert_load(cx, j))
                return 0;
            for (int u = 0; u < cx->tp; u++)
                if (!pair_alike(cx, rc, i, p, i - t + u, p, a, b))
                    return 0;
            int q = p + 1 < cx->pp ? p + 1 : (wrap ? 0 : -1);
            if (q >= 0 && q != p && !pair_alike(cx, rc, i, p, i, q, a, b))
                return 0;
            int mq = cx->pp - 1 - p; /* DualPipe's mirror stage */
            if (strategy_two_copies(s) && mq != p && !pair_alike(cx, rc, i, p, i, mq, a, b))
                return 0;
            int cn = d - d % cx->cp + (d % cx->cp + 1) % cx->cp;
            if (!pair_alike(cx, rc, i, p, t + cx->tp * cn, p, a, b))
                return 0;
            if (!pair_alike(cx, rc, i, p, t + cx->tp * ((d + 1) % cx->dp), p, a, b))
                return 0;
            if (cx->expert_layout && !expert_peers_alike(cx, rc, i, p, a, b))
                return 0;
        }
    return 1;
}

/* Folding inside replica 0 (compile_ctx.inner), tried once replica 0 alone is simulated under
 * context or expert parallelism: tensor index 0 alone when a shift by one tensor index maps the
 * plan onto itself, and the context indices below the least k dividing cp for which a shift by
 * k does. Not with FSDP or an uneven expert load (the twins would differ). */
static void choose_inner(compile_ctx *cx, route_cache *rc)
{
    const strategy *s = cx->s;
    if (cx->dp_sim != cx->cp || (cx->cp == 1 && !cx->expert_layout))
        return;
    if ((s->zero == 3 && cx->dp > 1) || cx->n_shard_groups > 1)
        return;
    if (cx->expert_layout && compile_expert_load(cx, 0) != compile_expert_load(cx, cx->etp))
        return;
    int ts = cx->tp > 1 && shift_alike(cx, 1, 0, rc) ? 1 : cx->tp, k = cx->cp;
    for (int m = 1; m < cx->cp; m++)
        if (cx->cp % m == 0 && shift_alike(cx, 0, m, rc)) {
            k = m;
            break;
        }
    if (ts == cx->tp && k == cx->cp)
        return;
    int n = cx->tp * cx->dp, B = cx->tp * cx->cp;
    cx->inner = 1;
    cx->ep_stand_in = 0;
    cx->tp_sim = ts;
    cx->dp_sim = k;
    cx->n_sim = ts * k;
    cx->twin_index = xmalloc((size_t)n * sizeof *cx->twin_index);
    cx->member_of = xmalloc((size_t)n * sizeof *cx->member_of);
    for (int i = 0; i < n; i++) {
        int ib = i % B, t = ib % cx->tp, c = ib / cx->tp, d = i / cx->tp;
        cx->twin_index[i] = (ts == 1 ? 0 : t) + cx->tp * (c % k);
        cx->member_of[i] = t < ts && d < k ? d * ts + t : -1;
    }
}

/* Replicas simulated: all, or with folding one (its cp context ranks) when the replicas provably
 * behave alike. With an expert layout: one, the other members of its EP groups joining their
 * all-to-alls as stand-ins (ep_stand_in_fits), or else the first block of replicas closed under
 * the EP and ETP groups, lcm(tp, ep x etp) / tp of them. */
void compile_choose_simulated(compile_ctx *cx, const compile_options *opt)
{
    const strategy *s = cx->s;
    /* a simulated block holds whole context rings (cp consecutive data-context indices) and
     * whole expert groups (lcm(tp, ep x etp) / tp of them) or stand-ins for them */
    int block = cx->cp, stand_in = 0;
    if (cx->expert_layout) {
        int g = cx->ep * cx->etp;
        int eb = g / gcd(cx->tp, g); /* lcm(tp, g) / tp */
        stand_in = ep_stand_in_fits(cx);
        if (!stand_in)
            block = block / gcd(block, eb) * eb;
    }
    assert(cx->dp % block == 0);
    cx->dp_sim = cx->dp;
    cx->tp_sim = cx->tp;
    cx->n_sim = cx->dp * cx->tp;
    cx->ep_stand_in = 0;
    cx->inner = 0;
    if (!opt->fold_data_parallel)
        return;
    route_cache rc;
    cache_init(&rc, cx->c);
    if (replicas_alike(s, &rc)) {
        cx->dp_sim = block;
        cx->n_sim = block * cx->tp;
        cx->ep_stand_in = stand_in;
        if (cx->expert_layout &&
            !expert_routes_alike(cx, stand_in ? cx->ep * cx->etp : cx->n_sim, &rc)) {
            cx->dp_sim = cx->dp;
            cx->n_sim = cx->dp * cx->tp;
            cx->ep_stand_in = 0;
        }
    }
    /* tensor-parallel peers of the simulated replicas: dense plans without context parallelism
     * (expert and context parallelism keep every TP index: their groups mix them) */
    if (cx->tp > 1 && !cx->expert_layout && cx->cp == 1 && tp_peers_alike(cx, &rc)) {
        cx->tp_sim = 1;
        cx->n_sim = cx->dp_sim;
    }
    choose_inner(cx, &rc);
    cache_free(&rc);
}
