/* htae_timed.c: collectives that run alone on their links as timed waits of the time their
 * SimGrid tasks would take (htae_dyn: from the start, or from some point on). */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>

#include "../base/xalloc.h"
#include "htae_blocks.h"
#include "htae_clock.h"
#include "htae_fast.h"
#include "htae_solo.h"

/* p's host pairs, each once, as start_block starts their flows (pattern.pair_*): in order of
 * first edge, through a dense table (a timed task spans at most HTAE_PTASK_MAX_HOSTS members;
 * more run block by block, htae_coll_run_blocks_timed). */
static void pattern_pairs(const coll_group *gp, pattern *p)
{
    int n = gp->n;
    assert(n <= HTAE_PTASK_MAX_HOSTS);
    p->pair_src = xmalloc((size_t)p->n_edges * sizeof *p->pair_src);
    p->pair_dst = xmalloc((size_t)p->n_edges * sizeof *p->pair_dst);
    p->pair_w = xmalloc((size_t)p->n_edges * sizeof *p->pair_w);
    p->n_pairs = 0;
    int *at = xmalloc((size_t)n * (size_t)n * sizeof *at); /* pair index + 1, 0 none */
    memset(at, 0, (size_t)n * (size_t)n * sizeof *at);
    for (int e = 0; e < p->n_edges; e++) {
        int *slot = &at[(size_t)p->src[e] * n + (size_t)p->dst[e]];
        if (*slot == 0) {
            *slot = ++p->n_pairs;
            p->pair_src[*slot - 1] = p->src[e];
            p->pair_dst[*slot - 1] = p->dst[e];
            p->pair_w[*slot - 1] = 0.0;
        }
        p->pair_w[*slot - 1] += p->w[e];
    }
    free(at);
}

/* run_pattern's time without its SimGrid task, for a group alone on its links: the task would
 * run alone, and ptask_L07 gives a lone task its worst route latency (p->max_lat), then moves
 * its flows at the rate of its busiest link: every link's load is the sum of the bytes of the
 * host pairs crossing it (the links are shared, not fatpipes), so the task takes scale times
 * the pattern's unit time (htae_pattern_unit). The flows start in the link statistics when the task
 * would have started and end when it would have ended. */
void htae_coll_run_timed(coll_group *gp, pattern *p, double scale, double latency, coll_run_ctx *cx)
{
    int empty = scale <= 0.0 || p->n_edges == 0;
    double wait = empty ? latency : latency - p->max_lat;
    if (empty) {
        if (wait > 0.0)
            htae_wait_until(simgrid_get_clock() + wait);
        return;
    }
    if (!p->pair_w)
        pattern_pairs(gp, p);
    if (wait < 0.0)
        wait = 0.0;
    double start = simgrid_get_clock() + wait;
    for (int i = 0; i < p->n_pairs; i++)
        htae_links_start(cx->links, gp->hosts[p->pair_src[i]], gp->hosts[p->pair_dst[i]],
                         scale * p->pair_w[i], start);
    htae_wait_until(simgrid_get_clock() + wait + p->max_lat + scale * htae_pattern_unit(gp, p));
    (*cx->activities)++;
    (*cx->timed)++;
    double now = simgrid_get_clock();
    for (int i = 0; i < p->n_pairs; i++)
        htae_links_end(cx->links, gp->hosts[p->pair_src[i]], gp->hosts[p->pair_dst[i]], now);
}

/* Merged companion patterns' unit times, and large patterns' blocks, by key. */
typedef struct unit_entry {
    uint64_t key;
    double unit;
} unit_entry;

typedef struct blocks_entry {
    uint64_t key;
    htae_blocks *b;
} blocks_entry;

struct htae_unit_cache {
    unit_entry *v;
    size_t n, cap;
    blocks_entry *bv;
    size_t n_b, cap_b;
};

struct htae_unit_cache *htae_unit_cache_create(void)
{
    return xcalloc(1, sizeof(struct htae_unit_cache));
}

void htae_unit_cache_free(struct htae_unit_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_b; i++)
        htae_blocks_free(c->bv[i].b);
    free(c->bv);
    free(c->v);
    free(c);
}

int htae_merged_alone(coll_group *merged, pattern *p, uint64_t key, coll_run_ctx *cx)
{
    if (p->n_edges == 0 || !cx->units || merged->n > HTAE_PTASK_MAX_HOSTS)
        return 0;
    struct htae_unit_cache *c = cx->units;
    double unit = -1.0;
    for (size_t i = 0; i < c->n && unit < 0.0; i++)
        if (c->v[i].key == key)
            unit = c->v[i].unit;
    if (unit < 0.0) {
        p->unit_s = -1.0; /* a pattern built in place starts at 0: not computed */
        unit = htae_pattern_unit(merged, p);
        xgrow(&c->v, sizeof *c->v, c->n + 1, &c->cap);
        c->v[c->n++] = (unit_entry){key, unit};
    }
    p->unit_s = unit;
    return 1;
}

int htae_coll_run_blocks_timed(coll_group *gp, pattern *p, double scale, double latency, int span,
                               const uint64_t *merged_key, coll_run_ctx *cx)
{
    struct htae_unit_cache *c = cx->units;
    if (!c || p->n_edges == 0 || !(scale > 0.0))
        return 0;
    /* a group's own pattern by its address (odd keys), merged companions by theirs (even) */
    uint64_t key =
        merged_key ? *merged_key & ~1ull : (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull | 1;
    htae_blocks *b = NULL;
    for (size_t i = 0; i < c->n_b && !b; i++)
        if (c->bv[i].key == key)
            b = c->bv[i].b;
    if (!b) {
        b = htae_blocks_alone(gp, p, span);
        xgrow(&c->bv, sizeof *c->bv, c->n_b + 1, &c->cap_b);
        c->bv[c->n_b++] = (blocks_entry){key, b};
    }
    if (!b->alone)
        return 0;
    /* as run_pattern: the latency terms SimGrid does not charge, then every block at once */
    double wait = latency - p->max_lat;
    double start = simgrid_get_clock() + (wait > 0.0 ? wait : 0.0);
    int *by_end = xmalloc(((size_t)b->n + 1) * sizeof *by_end);
    for (int k = 0; k < b->n; k++) {
        by_end[k] = k;
        for (int i = b->first[k]; i < b->first[k + 1]; i++)
            if (b->w[i] > 0.0)
                htae_links_start(cx->links, gp->hosts[b->src[i]], gp->hosts[b->dst[i]],
                                 scale * b->w[i], start);
    }
    for (int k = 1; k < b->n; k++) /* by end: insertion, blocks are few */
        for (int j = k; j > 0; j--) {
            int x = by_end[j - 1], y = by_end[j];
            if (b->lat[x] + scale * b->unit[x] <= b->lat[y] + scale * b->unit[y])
                break;
            by_end[j - 1] = y;
            by_end[j] = x;
        }
    for (int q = 0; q < b->n; q++) { /* each block's flows end when it would */
        int k = by_end[q];
        htae_wait_until(start + b->lat[k] + scale * b->unit[k]);
        double now = simgrid_get_clock();
        for (int i = b->first[k]; i < b->first[k + 1]; i++)
            if (b->w[i] > 0.0)
                htae_links_end(cx->links, gp->hosts[b->src[i]], gp->hosts[b->dst[i]], now);
    }
    free(by_end);
    *cx->activities += (uint64_t)b->n;
    (*cx->timed)++;
    return 1;
}

/* A pattern's blocks (htae_blocks), and for each turned block the host pairs its task keeps
 * (lean_pairs), found at its first turn. */
typedef struct pattern_aux {
    htae_blocks *b;
    int **kept, *n_kept;
} pattern_aux;

static void free_aux(void *p)
{
    pattern_aux *x = p;
    for (int k = 0; k < x->b->n; k++)
        free(x->kept[k]);
    free(x->kept);
    free(x->n_kept);
    htae_blocks_free(x->b);
    free(x);
}

/* A pattern as an act of htae_solo: its shape and blocks, and the ghost edges that only count
 * in the link statistics (with one block only). */
typedef struct pattern_act {
    coll_group *gp;
    const solo_shape *sh;
    pattern_aux *x;
    const pattern *ghost;
    double scale;
    coll_run_ctx *cx;
} pattern_act;

static void act_flows(const pattern_act *a, int k, double now, int start)
{
    const htae_blocks *b = a->x->b;
    sg_host_t *h = a->gp->hosts;
    for (int i = b->first[k]; i < b->first[k + 1]; i++)
        if (b->w[i] > 0.0) {
            if (start)
                htae_links_start(a->cx->links, h[b->src[i]], h[b->dst[i]], a->scale * b->w[i], now);
            else
                htae_links_end(a->cx->links, h[b->src[i]], h[b->dst[i]], now);
        }
    const pattern *g = a->ghost;
    for (int e = 0; g && k == 0 && e < g->n_edges; e++)
        if (a->scale * g->w[e] > 0.0) {
            if (start)
                htae_links_start(a->cx->links, h[g->src[e]], h[g->dst[e]], a->scale * g->w[e], now);
            else
                htae_links_end(a->cx->links, h[g->src[e]], h[g->dst[e]], now);
        }
}

static void act_begin(void *ctx, int k, double now)
{
    act_flows(ctx, k, now, 1);
}

static void act_end(void *ctx, int k, double now)
{
    act_flows(ctx, k, now, 0);
}

static int by_int(const void *pa, const void *pb)
{
    int x = *(const int *)pa, y = *(const int *)pb;
    return (x > y) - (x < y);
}

/* Block k's links only its own flows may ever cross: in no other block of the act, and no
 * activity but the act's groups' may cross them (coll_run_ctx.theirs). mine[j] for its j-th
 * link (sh->bids order, by index). */
static void private_links(const pattern_act *a, int k, uint8_t *mine)
{
    const solo_shape *sh = a->sh;
    const int *ids = sh->bids + sh->bfirst[k];
    int n = sh->bfirst[k + 1] - sh->bfirst[k];
    for (int j = 0; j < n; j++)
        mine[j] = a->cx->theirs(a->cx->theirs_arg, htae_links_link(a->cx->links, ids[j]),
                                a->gp->owners, a->gp->n_owners);
    for (int o = 0; o < sh->n; o++) /* a block's ids are sorted (htae_solo_shape) */
        for (int i = sh->bfirst[o]; o != k && i < sh->bfirst[o + 1]; i++) {
            const int *hit = bsearch(&sh->bids[i], ids, (size_t)n, sizeof *ids, by_int);
            if (hit)
                mine[hit - ids] = 0;
        }
}

/* The host pairs block k's task keeps when it is turned (lean, as an all-to-all's lean task):
 * every pair crossing a link another task may cross, every pair on its busiest private link
 * (load over bandwidth: what bounds it there; the other private links then carry no more than
 * they did, each only this task, so they bound it no tighter), and one with its worst route
 * latency (what SimGrid charges it). Its rate and latency are the whole block's: its time too
 * (with TCP-gamma 0, topology/platform.cpp: ptask_L07 then puts no latency-bytes bound on a
 * task, which the flows left out would have changed).
 * Without the links' owners (htae_dyn off), every pair. */
static void lean_pairs(const pattern_act *a, int k)
{
    pattern_aux *x = a->x;
    const htae_blocks *b = x->b;
    const solo_shape *sh = a->sh;
    int from = b->first[k], to = b->first[k + 1], nb = sh->bfirst[k + 1] - sh->bfirst[k];
    const int *bids = sh->bids + sh->bfirst[k];
    uint8_t *keep = xcalloc((size_t)(to - from) + 1, 1), *mine = xcalloc((size_t)nb + 1, 1);
    double *load = xcalloc((size_t)nb + 1, sizeof *load);
    if (a->cx->theirs)
        private_links(a, k, mine);
    sg_host_t *h = a->gp->hosts;
    int worst = -1;
    double worst_lat = -1.0;
    for (int i = from; i < to; i++) {
        if (!(b->w[i] > 0.0))
            continue;
        int len;
        const int *r = htae_links_route(a->cx->links, h[b->src[i]], h[b->dst[i]], &len);
        for (int e = 0; e < len; e++) {
            const int *j = bsearch(&r[e], bids, (size_t)nb, sizeof *bids, by_int);
            assert(j);
            if (!mine[j - bids])
                keep[i - from] = 1;
            else
                load[j - bids] += b->w[i];
        }
        double lat = htae_route_latency(h[b->src[i]], h[b->dst[i]]);
        if (lat > worst_lat) {
            worst_lat = lat;
            worst = i;
        }
    }
    int tight = -1;
    double most = -1.0;
    for (int j = 0; j < nb; j++)
        if (mine[j] && load[j] / htae_links_bandwidth(a->cx->links, bids[j]) > most) {
            most = load[j] / htae_links_bandwidth(a->cx->links, bids[j]);
            tight = j;
        }
    if (worst >= 0)
        keep[worst - from] = 1;
    for (int i = from; tight >= 0 && i < to; i++) {
        if (!(b->w[i] > 0.0) || keep[i - from])
            continue;
        int len;
        const int *r = htae_links_route(a->cx->links, h[b->src[i]], h[b->dst[i]], &len);
        for (int e = 0; e < len; e++)
            if (r[e] == bids[tight])
                keep[i - from] = 1;
    }
    x->kept[k] = xmalloc(((size_t)(to - from) + 1) * sizeof **x->kept);
    for (int i = from; i < to; i++)
        if (keep[i - from])
            x->kept[k][x->n_kept[k]++] = i;
    free(keep);
    free(mine);
    free(load);
}

/* Block k's task over `share` of its bytes: its kept host pairs' cells (lean_pairs), as
 * start_block fills them. */
static sg_exec_t act_task(void *ctx, int k, double share)
{
    const pattern_act *a = ctx;
    const htae_blocks *b = a->x->b;
    if (!a->x->kept[k])
        lean_pairs(a, k);
    const int *kept = a->x->kept[k];
    int n_kept = a->x->n_kept[k];
    htae_solo_left_out(a->cx->solo, (uint32_t)(b->first[k + 1] - b->first[k] - n_kept));
    int *slot = xmalloc(((size_t)a->gp->n + 1) * sizeof *slot);
    memset(slot, 0xff, ((size_t)a->gp->n + 1) * sizeof *slot);
    sg_host_t hosts[HTAE_PTASK_MAX_HOSTS];
    int h = 0;
    for (int q = 0; q < n_kept; q++)
        for (int end = 0; end < 2; end++) {
            int i = kept[q], m = end ? b->dst[i] : b->src[i];
            if (slot[m] < 0) {
                assert(h < HTAE_PTASK_MAX_HOSTS);
                slot[m] = h;
                hosts[h++] = a->gp->hosts[m];
            }
        }
    double *mx = xcalloc((size_t)h * (size_t)h, sizeof *mx);
    for (int q = 0; q < n_kept; q++) {
        int i = kept[q];
        mx[(size_t)slot[b->src[i]] * h + (size_t)slot[b->dst[i]]] = a->scale * share * b->w[i];
    }
    sg_exec_t task = sg_actor_parallel_exec_init(h, hosts, NULL, mx);
    sg_exec_start(task); /* counted with the act (htae_coll_solo) */
    free(mx);
    free(slot);
    return task;
}

/* p's blocks (run_pattern's) and their shape. */
static solo_shape *pattern_shape(coll_group *gp, const pattern *p, int span, htae_links *L)
{
    pattern_aux *x = xcalloc(1, sizeof *x);
    htae_blocks *b = x->b = htae_blocks_alone(gp, p, span);
    x->kept = xcalloc((size_t)b->n + 1, sizeof *x->kept);
    x->n_kept = xcalloc((size_t)b->n + 1, sizeof *x->n_kept);
    int np = b->first[b->n];
    sg_host_t *src = xmalloc(((size_t)np + 1) * sizeof *src);
    sg_host_t *dst = xmalloc(((size_t)np + 1) * sizeof *dst);
    for (int i = 0; i < np; i++) {
        src[i] = gp->hosts[b->src[i]];
        dst[i] = gp->hosts[b->dst[i]];
    }
    solo_shape *sh = htae_solo_shape(L, b->n, b->first, src, dst, b->w);
    free(src);
    free(dst);
    sh->aux = x;
    sh->aux_free = free_aux;
    return sh;
}

int htae_coll_solo(coll_group *gp, pattern *p, const pattern *ghost, double scale, double wait,
                   int span, const uint64_t *key, int may_time, coll_run_ctx *cx, int *real)
{
    *real = -1;
    if (!cx->solo)
        return 0;
    solo_shape *sh = key ? htae_solo_cached(cx->solo, *key) : NULL;
    int own = !sh;
    if (!sh) {
        sh = pattern_shape(gp, p, span, cx->links);
        if (key) {
            htae_solo_cache(cx->solo, *key, sh);
            own = 0;
        }
    }
    pattern_aux *x = sh->aux;
    assert(!ghost || x->b->n == 1);
    pattern_act a = {gp, sh, x, ghost, scale, cx};
    solo_ops ops = {act_begin, act_task, act_end, &a};
    int timed = htae_solo_run(cx->solo, sh, wait, may_time ? scale : 0.0, &ops, real);
    if (timed) /* the tasks it would have been, as run_pattern counts them */
        *cx->activities += (uint64_t)x->b->n;
    if (own)
        htae_solo_shape_free(sh);
    return timed;
}
