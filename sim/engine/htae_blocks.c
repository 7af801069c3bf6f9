/* htae_blocks.c: a large pattern's blocks, and whether they may be timed (htae_blocks.h). */
#include "htae_blocks.h"

#include <stdint.h>
#include <stdlib.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"

static const pattern *sort_pattern; /* for by_lower_member: qsort has no context argument */

static int by_lower_member(const void *a, const void *b)
{
    const pattern *p = sort_pattern;
    int x = *(const int *)a, y = *(const int *)b;
    int lx = p->src[x] < p->dst[x] ? p->src[x] : p->dst[x];
    int ly = p->src[y] < p->dst[y] ? p->src[y] : p->dst[y];
    return lx != ly ? (lx > ly) - (lx < ly) : (x > y) - (x < y);
}

int htae_blocks_of(const coll_group *gp, const pattern *p, int span, int *order, int **bound)
{
    int n = gp->n, ne = p->n_edges;
    for (int e = 0; e < ne; e++)
        order[e] = e;
    if (n > HTAE_PTASK_MAX_HOSTS) {
        sort_pattern = p;
        qsort(order, (size_t)ne, sizeof *order, by_lower_member);
    }
    int *b = NULL;
    size_t nb = 0, cap = 0;
    uint8_t *seen = xcalloc((size_t)n + 1, 1);
    for (int from = 0; from < ne;) {
        int to = from, hosts = 0;
        for (; to < ne; to++) {
            int a = p->src[order[to]], d = p->dst[order[to]];
            int more = !seen[a] + (!seen[d] && d != a);
            if (hosts + more > HTAE_PTASK_MAX_HOSTS ||
                (span && a / span != p->src[order[from]] / span))
                break;
            hosts += more;
            seen[a] = seen[d] = 1;
        }
        for (int i = from; i < to; i++)
            seen[p->src[order[i]]] = seen[p->dst[order[i]]] = 0;
        xgrow(&b, sizeof *b, nb + 1, &cap);
        b[nb++] = from;
        from = to;
    }
    xgrow(&b, sizeof *b, nb + 1, &cap);
    b[nb] = ne;
    free(seen);
    *bound = b;
    return (int)nb;
}

/* An edge of a block: its host pair and its position in the block. */
typedef struct pair_edge {
    uint64_t pair;
    int pos;
} pair_edge;

/* A pair merged: its first edge's position and its edges' weights summed. */
typedef struct pair_sum {
    int pos;
    double w;
} pair_sum;

static int by_pair_then_pos(const void *a, const void *b)
{
    const pair_edge *x = a, *y = b;
    if (x->pair != y->pair)
        return (x->pair > y->pair) - (x->pair < y->pair);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int by_pos(const void *a, const void *b)
{
    const pair_sum *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The block of edges[0 .. m)'s pairs appended to out, each once, in order of first edge (as
 * start_block starts their flows), weights summed in edge order. edges_s, sums: scratch of m. */
static void block_pairs(const coll_group *gp, const pattern *p, const int *edges, int m,
                        pair_edge *edges_s, pair_sum *sums, htae_blocks *out)
{
    for (int i = 0; i < m; i++)
        edges_s[i] = (pair_edge){
            (uint64_t)p->src[edges[i]] * (uint64_t)gp->n + (uint64_t)p->dst[edges[i]], i};
    qsort(edges_s, (size_t)m, sizeof *edges_s, by_pair_then_pos);
    int n_sums = 0;
    for (int i = 0; i < m;) {
        pair_sum *u = &sums[n_sums++];
        *u = (pair_sum){edges_s[i].pos, 0.0}; /* the smallest position of the run */
        int j = i;
        for (; j < m && edges_s[j].pair == edges_s[i].pair; j++)
            u->w += p->w[edges[edges_s[j].pos]];
        i = j;
    }
    qsort(sums, (size_t)n_sums, sizeof *sums, by_pos);
    int np = out->first[out->n];
    for (int i = 0; i < n_sums; i++, np++) {
        int e = edges[sums[i].pos];
        out->src[np] = p->src[e];
        out->dst[np] = p->dst[e];
        out->w[np] = sums[i].w;
    }
    out->first[++out->n] = np;
}

typedef struct block_load {
    sg_link_t link;
    int block;
    double w;
} block_load;

static int by_link_then_block(const void *a, const void *b)
{
    const block_load *x = a, *y = b;
    uintptr_t lx = (uintptr_t)x->link, ly = (uintptr_t)y->link;
    if (lx != ly)
        return (lx > ly) - (lx < ly);
    return (x->block > y->block) - (x->block < y->block);
}

/* Each block's worst route latency and unit time, and whether their lone rates fit together. */
static void block_times(const coll_group *gp, htae_blocks *b)
{
    block_load *loads = NULL;
    size_t n = 0, cap = 0;
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int k = 0; k < b->n; k++)
        for (int i = b->first[k]; i < b->first[k + 1]; i++) {
            if (!(b->w[i] > 0.0)) /* no flow: SimGrid starts none, charges no latency */
                continue;
            sg_host_t from = gp->hosts[b->src[i]], to = gp->hosts[b->dst[i]];
            double lat = htae_route_latency(from, to);
            b->lat[k] = lat > b->lat[k] ? lat : b->lat[k];
            xbt_dynar_reset(d);
            sg_host_get_route(from, to, d);
            for (unsigned r = 0; r < xbt_dynar_length(d); r++) {
                xgrow(&loads, sizeof *loads, n + 1, &cap);
                loads[n++] = (block_load){xbt_dynar_get_as(d, r, sg_link_t), k, b->w[i]};
            }
        }
    xbt_dynar_free(&d);
    if (n)
        qsort(loads, n, sizeof *loads, by_link_then_block);
    size_t m = 0; /* one entry per (link, block), its load summed */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double sum = 0.0;
        for (; j < n && loads[j].link == loads[i].link && loads[j].block == loads[i].block; j++)
            sum += loads[j].w;
        loads[m++] = (block_load){loads[i].link, loads[i].block, sum};
        i = j;
    }
    for (size_t i = 0; i < m; i++) {
        double u = loads[i].w / sg_link_get_bandwidth(loads[i].link);
        if (u > b->unit[loads[i].block])
            b->unit[loads[i].block] = u;
    }
    b->alone = 1;
    for (size_t i = 0; i < m && b->alone;) { /* every link: the blocks' lone rates' bytes */
        size_t j = i;
        double rate = 0.0;
        for (; j < m && loads[j].link == loads[i].link; j++)
            rate += loads[j].w / b->unit[loads[j].block];
        b->alone = sg_link_is_shared(loads[i].link) &&
                   rate <= sg_link_get_bandwidth(loads[i].link) * (1.0 + 1e-9);
        i = j;
    }
    free(loads);
}

htae_blocks *htae_blocks_alone(const coll_group *gp, const pattern *p, int span)
{
    int ne = p->n_edges;
    int *order = xmalloc(((size_t)ne + 1) * sizeof *order), *bound;
    int nb = htae_blocks_of(gp, p, span, order, &bound);
    htae_blocks *b = xcalloc(1, sizeof *b);
    b->first = xcalloc((size_t)nb + 1, sizeof *b->first);
    b->src = xmalloc(((size_t)ne + 1) * sizeof *b->src);
    b->dst = xmalloc(((size_t)ne + 1) * sizeof *b->dst);
    b->w = xmalloc(((size_t)ne + 1) * sizeof *b->w);
    b->lat = xcalloc((size_t)nb + 1, sizeof *b->lat);
    b->unit = xcalloc((size_t)nb + 1, sizeof *b->unit);
    pair_edge *edges_s = xmalloc(((size_t)ne + 1) * sizeof *edges_s);
    pair_sum *sums = xmalloc(((size_t)ne + 1) * sizeof *sums);
    for (int k = 0; k < nb; k++)
        block_pairs(gp, p, order + bound[k], bound[k + 1] - bound[k], edges_s, sums, b);
    free(sums);
    free(edges_s);
    free(bound);
    free(order);
    block_times(gp, b);
    return b;
}

void htae_blocks_free(htae_blocks *b)
{
    if (!b)
        return;
    free(b->first);
    free(b->src);
    free(b->dst);
    free(b->w);
    free(b->lat);
    free(b->unit);
    free(b);
}
