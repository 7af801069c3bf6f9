/* htae_rings.c: choosing rings the way NCCL's channels do on multi-link topologies: search the
 * ring whose tightest link (residual capacity / edges crossing it) is widest, take it, repeat. */
#include "htae_rings.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"

/* A further ring is worth a channel only if it adds this fraction of the first one. */
static const double RING_MIN_GAIN = 0.05;
enum { RING_MAX = 16 }; /* NCCL uses at most 16-32 channels */

typedef struct search {
    int n, n_links;
    int **route;      /* route[i * n + j]: link indices, -1 terminated */
    double *residual; /* per link */
    int *usage;       /* per link, in the ring being built */
    int order[HTAE_RING_SEARCH_MAX], best[HTAE_RING_SEARCH_MAX];
    int used[HTAE_RING_SEARCH_MAX];
    double best_bottleneck;
} search;

static double bottleneck_after(search *s, int i, int j)
{
    double b = 1e300;
    for (int *l = s->route[i * s->n + j]; *l >= 0; l++)
        s->usage[*l]++;
    for (int a = 0; a < s->n_links; a++)
        if (s->usage[a] && s->residual[a] / s->usage[a] < b)
            b = s->residual[a] / s->usage[a];
    return b;
}

static void undo(search *s, int i, int j)
{
    for (int *l = s->route[i * s->n + j]; *l >= 0; l++)
        s->usage[*l]--;
}

/* Depth-first over orders starting at member 0, pruning orders already no better than the best. */
static void dfs(search *s, int depth)
{
    int prev = s->order[depth - 1];
    if (depth == s->n) {
        double b = bottleneck_after(s, prev, s->order[0]);
        if (b > s->best_bottleneck * (1 + 1e-12)) {
            s->best_bottleneck = b;
            memcpy(s->best, s->order, sizeof s->best);
        }
        undo(s, prev, s->order[0]);
        return;
    }
    for (int k = 1; k < s->n; k++) {
        if (s->used[k])
            continue;
        double b = bottleneck_after(s, prev, k);
        if (b > s->best_bottleneck * (1 + 1e-12)) {
            s->used[k] = 1;
            s->order[depth] = k;
            dfs(s, depth + 1);
            s->used[k] = 0;
        }
        undo(s, prev, k);
    }
}

static void push_ring(ring_set *rs, const int *order, double weight)
{
    assert(weight > 0.0 && weight <= 1.0);
    int n = rs->n, base = rs->n_edges;
    rs->n_edges += n;
    rs->n_rings++;
    rs->src = xreallocarray(rs->src, (size_t)rs->n_edges, sizeof *rs->src);
    rs->dst = xreallocarray(rs->dst, (size_t)rs->n_edges, sizeof *rs->dst);
    rs->share = xreallocarray(rs->share, (size_t)rs->n_edges, sizeof *rs->share);
    for (int i = 0; i < n; i++) {
        assert(order[i] >= 0 && order[i] < n && order[i] != order[(i + 1) % n]);
        rs->src[base + i] = order[i];
        rs->dst[base + i] = order[(i + 1) % n];
        rs->share[base + i] = weight;
    }
}

/* Routes of every ordered pair of members, as indices into one table of distinct links, and
 * each link's capacity as the starting residual. */
static void search_init(search *s, const sg_host_t *hosts, int n)
{
    assert(n >= 2 && n <= HTAE_RING_SEARCH_MAX);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->route = xcalloc((size_t)n * n, sizeof *s->route);
    sg_link_t *links = NULL;
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            xbt_dynar_reset(d);
            sg_host_get_route(hosts[i], hosts[j], d);
            int len = (int)xbt_dynar_length(d);
            int *r = xmalloc((size_t)(len + 1) * sizeof *r);
            for (int k = 0; k < len; k++) {
                sg_link_t l = xbt_dynar_get_as(d, (unsigned)k, sg_link_t);
                int a;
                for (a = 0; a < s->n_links && links[a] != l; a++)
                    ;
                if (a == s->n_links) {
                    links = xreallocarray(links, (size_t)s->n_links + 1, sizeof *links);
                    links[s->n_links++] = l;
                }
                r[k] = a;
            }
            r[len] = -1;
            s->route[i * n + j] = r;
        }
    xbt_dynar_free(&d);
    s->residual = xmalloc((size_t)s->n_links * sizeof *s->residual);
    s->usage = xcalloc((size_t)s->n_links, sizeof *s->usage);
    for (int a = 0; a < s->n_links; a++)
        s->residual[a] = sg_link_get_bandwidth(links[a]);
    free(links);
}

static void search_free(search *s)
{
    for (int i = 0; i < s->n * s->n; i++)
        free(s->route[i]);
    free(s->route);
    free(s->residual);
    free(s->usage);
}

void htae_rings_build(const sg_host_t *hosts, int n, ring_set *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->n = n;
    if (n < 2 || n > HTAE_RING_SEARCH_MAX) {
        int *order = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *order);
        for (int i = 0; i < n; i++)
            order[i] = i;
        if (n >= 2)
            push_ring(rs, order, 1.0);
        free(order);
        return;
    }

    search s;
    search_init(&s, hosts, n);
    double first = 0, total = 0;
    double weights[RING_MAX];
    int orders[RING_MAX][HTAE_RING_SEARCH_MAX];
    int rings = 0;
    while (rings < RING_MAX) {
        s.best_bottleneck = 0;
        memset(s.used, 0, sizeof s.used);
        s.order[0] = 0;
        s.used[0] = 1;
        dfs(&s, 1);
        double b = s.best_bottleneck;
        if (b <= 0 || (rings > 0 && b < RING_MIN_GAIN * first))
            break;
        if (rings == 0)
            first = b;
        memcpy(orders[rings], s.best, sizeof orders[rings]);
        weights[rings++] = b;
        total += b;
        for (int i = 0; i < n; i++) /* take its capacity */
            for (int *l = s.route[s.best[i] * n + s.best[(i + 1) % n]]; *l >= 0; l++)
                s.residual[*l] -= b;
    }
    assert(rings > 0);
    /* data divides in proportion to each ring's bandwidth, so all finish together */
    for (int r = 0; r < rings; r++)
        push_ring(rs, orders[r], weights[r] / total);
    search_free(&s);
}

void htae_rings_free(ring_set *rs)
{
    free(rs->src);
    free(rs->dst);
    free(rs->share);
    memset(rs, 0, sizeof *rs);
}
