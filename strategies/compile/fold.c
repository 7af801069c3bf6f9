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
 * is the first under the interleaved schedule) and to its next context rank (both ways), with
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
    cache_free(&rc);
}
