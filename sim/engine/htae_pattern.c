/* htae_pattern.c: NCCL's algorithms as flows on the platform, the patterns htae_coll.c runs.
 *
 * Every algorithm is a pattern: edges (member -> member) with a weight w, the bytes the edge
 * carries per byte of the collective's buffer S, the protocol efficiency of its link type
 * already divided in (an edge inside a node pays the intra-node efficiency, one between nodes
 * the network efficiency). A collective of kind `kind` puts factor(kind) * w * S bytes on each
 * edge, all in one parallel task, after its latency terms. The patterns, per channel share:
 *
 * - ring: inside one node, the rings htae_rings_build searches (several on multi-link nodes).
 *   Across m nodes with k members each, k channels (NCCL opens one per NIC): channel c visits
 *   every node's members from local index c on (c, c+1, ..., c-1 mod k) and leaves the node from
 *   local index c-1 to local index c of the next node, so each NIC carries one channel out and
 *   one in and each GPU's NVLink k-1 of them; weight 1/k. Nodes with unequal member counts: one
 *   ring in group order. All-reduce moves 2(n-1)/n S per edge in 2(n-1) steps, reduce-scatter
 *   and all-gather (n-1)/n S in n-1; of the steps, 2(m-1) (or m-1) cross nodes, as NCCL's tuner
 *   counts them. Each step costs coll_step_s plus its route's latency.
 * - tree (all-reduce over m nodes of k members each): NCCL's double binary tree: two
 *   binary trees over the nodes, the second the mirror image of the first (node i -> m-1-i), so
 *   a node that is inner in one is mostly a leaf in the other; each carries half the buffer,
 *   reduced up and broadcast down at once (pipelined). Inside each node a chain from the tree's
 *   head. k channels: channel c's chain starts at local index c and its tree edges join the
 *   local-c GPUs (one NIC per channel). Weights: chain edges 1/k each way, tree edges 1/(2k)
 * *   each way per tree. Latency: 2((k-1) intra steps + floor(log2 m) inter steps). On one
 *   node (m = 1; built when --nccl-algo tree forces it) only the chains remain: k chains, each
 *   edge 1/k each way, 2(k-1) steps.
 * - NVLS (all-reduce inside one NVSwitch node of NVLS-capable GPUs, k members): the switch
 *   reduces. Member i owns S/k: the switch pulls every member's copy of each share (S out of
 *   each GPU), hands i the reduced share (S/k in), i multicasts it back (S/k out, S in each).
 *   So each GPU's port carries S (k+1)/k each way; a uniform matrix of (k+1)/(k(k-1)) per pair
 *   loads every port exactly so. Latency: a fixed cost (nvls_latency_s, multicast setup) and two
 *   steps (reduce, multicast).
 * - direct (all-to-all): every member sends S/n to every other, all at once; one step. */
#include "htae_pattern.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"
#include "htae_rings.h"

void htae_pattern_add_edge(pattern *p, int src, int dst, double w)
{
    assert(src != dst && w > 0.0);
    if (p->n_edges == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->src = xreallocarray(p->src, (size_t)p->cap, sizeof *p->src);
        p->dst = xreallocarray(p->dst, (size_t)p->cap, sizeof *p->dst);
        p->w = xreallocarray(p->w, (size_t)p->cap, sizeof *p->w);
    }
    p->src[p->n_edges] = src;
    p->dst[p->n_edges] = dst;
    p->w[p->n_edges++] = w;
}

void htae_pattern_free(pattern *p)
{
    free(p->src);
    free(p->dst);
    free(p->w);
    free(p->pair_src);
    free(p->pair_dst);
    free(p->pair_w);
    memset(p, 0, sizeof *p);
}

double htae_route_latency(sg_host_t a, sg_host_t b)
{
    return cluster_host_route_latency(a, b);
}

/* An edge's weight for a channel share: the share over its link type's efficiency. */
static void add_flow(coll_group *gp, pattern *p, int src, int dst, double share)
{
    int same = gp->node[src] == gp->node[dst];
    htae_pattern_add_edge(p, src, dst, share / (same ? gp->eff_intra : gp->eff_net));
}

/* Route latencies of the finished pattern's edges; its unit time is computed when needed. */
static void pattern_close(coll_group *gp, pattern *p)
{
    p->unit_s = -1.0;
    for (int e = 0; e < p->n_edges; e++) {
        double l = htae_route_latency(gp->hosts[p->src[e]], gp->hosts[p->dst[e]]);
        double *slot = gp->node[p->src[e]] == gp->node[p->dst[e]] ? &p->lat_intra : &p->lat_inter;
        if (l > *slot)
            *slot = l;
        if (l > p->max_lat)
            p->max_lat = l;
    }
}

typedef struct link_load {
    sg_link_t link;
    double w;
} link_load;

static int by_link(const void *a, const void *b)
{
    const link_load *x = a, *y = b;
    return x->link < y->link ? -1 : x->link > y->link;
}

/* Every link p's edges cross, with the bytes (per byte of S) each carries in all, sorted by
 * link, one entry a link, into *out (malloc'ed; NULL when none); returns the count. *shared: 0
 * when some link is not shared (a fatpipe loads its flows' largest, not their sum). */
static size_t pattern_link_loads(const coll_group *gp, const pattern *p, link_load **out,
                                 int *shared)
{
    link_load *loads = NULL;
    size_t n = 0, cap = 0;
    *shared = 1;
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int e = 0; e < p->n_edges; e++) {
        xbt_dynar_reset(d);
        sg_host_get_route(gp->hosts[p->src[e]], gp->hosts[p->dst[e]], d);
        for (unsigned i = 0; i < xbt_dynar_length(d); i++) {
            xgrow(&loads, sizeof *loads, n + 1, &cap);
            loads[n++] = (link_load){xbt_dynar_get_as(d, i, sg_link_t), p->w[e]};
        }
    }
    xbt_dynar_free(&d);
    if (n)
        qsort(loads, n, sizeof *loads, by_link);
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        double sum = 0.0;
        size_t j = i;
        for (; j < n && loads[j].link == loads[i].link; j++)
            sum += loads[j].w;
        *shared = *shared && sg_link_is_shared(loads[i].link);
        loads[m++] = (link_load){loads[i].link, sum};
        i = j;
    }
    *out = loads;
    return m;
}

/* The busiest link's load per byte of S over its bandwidth: the pattern's time per byte alone
 * on the platform, as the fluid model shares the links. */
double htae_pattern_unit(const coll_group *gp, pattern *p)
{
    if (p->unit_s >= 0.0)
        return p->unit_s;
    link_load *loads;
    int shared;
    size_t n = pattern_link_loads(gp, p, &loads, &shared);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double t = loads[i].w / sg_link_get_bandwidth(loads[i].link);
        if (t > worst)
            worst = t;
    }
    free(loads);
    p->unit_s = worst;
    return worst;
}

/* Members of node `node` in group order into out[], returning their count. */
static int members_of(const coll_group *gp, int node, int *out)
{
    int c = 0;
    for (int i = 0; i < gp->n; i++)
        if (gp->node[i] == node)
            out[c++] = i;
    return c;
}

void htae_pattern_build_ring(coll_group *gp)
{
    pattern *p = &gp->ring;
    int n = gp->n, k = gp->k, m = gp->m;
    if (m == 1) { /* searched rings over the node's links */
        ring_set rs;
        htae_rings_build(gp->hosts, n, &rs);
        for (int e = 0; e < rs.n_edges; e++)
            add_flow(gp, p, rs.src[e], rs.dst[e], rs.share[e]);
        htae_rings_free(&rs);
    } else if (k == 0) { /* unequal nodes: one ring in group order */
        for (int i = 0; i < n; i++)
            add_flow(gp, p, i, (i + 1) % n, 1.0);
    } else {
        int *by_node = xmalloc((size_t)n * sizeof *by_node);
        for (int j = 0; j < m; j++)
            members_of(gp, j, &by_node[j * k]);
        for (int c = 0; c < k; c++)
            for (int j = 0; j < m; j++)
                for (int i = 0; i < k; i++) {
                    int from = by_node[j * k + (c + i) % k];
                    int to = i + 1 < k ? by_node[j * k + (c + i + 1) % k]
                                       : by_node[((j + 1) % m) * k + c];
                    add_flow(gp, p, from, to, 1.0 / k);
                }
        free(by_node);
    }
    pattern_close(gp, p);
}

/* Parent of node position i in binary tree `t` (0: heap order, 1: its mirror image); -1 for
 * the root. */
static int tree_parent(int t, int i, int m)
{
    int pos = t ? m - 1 - i : i;
    if (pos == 0)
        return -1;
    int parent = (pos - 1) / 2;
    return t ? m - 1 - parent : parent;
}

void htae_pattern_build_tree(coll_group *gp)
{
    pattern *p = &gp->tree;
    int n = gp->n, k = gp->k, m = gp->m;
    int *by_node = xmalloc((size_t)n * sizeof *by_node);
    for (int j = 0; j < m; j++)
        members_of(gp, j, &by_node[j * k]);
    for (int c = 0; c < k; c++) {
        for (int j = 0; j < m; j++)
            for (int i = 0; i + 1 < k; i++) { /* the chain from the head, both ways */
                int a = by_node[j * k + (c + i) % k], b = by_node[j * k + (c + i + 1) % k];
                add_flow(gp, p, a, b, 1.0 / k);
                add_flow(gp, p, b, a, 1.0 / k);
            }
        for (int t = 0; t < 2; t++)
            for (int j = 0; j < m; j++) {
                int up = tree_parent(t, j, m);
                if (up < 0)
                    continue;
                int a = by_node[j * k + c], b = by_node[up * k + c];
                add_flow(gp, p, a, b, 0.5 / k);
                add_flow(gp, p, b, a, 0.5 / k);
            }
    }
    free(by_node);
    pattern_close(gp, p);
}

void htae_pattern_build_nvls(coll_group *gp)
{
    pattern *p = &gp->nvls;
    int n = gp->n;
    double w = (double)(n + 1) / ((double)n * (n - 1)) / gp->eff_nvls;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                htae_pattern_add_edge(p, i, j, w);
    pattern_close(gp, p);
}

/* Whether patterns a and b load every link alike (the same links, the same bytes to 1e-12,
 * every one shared) and have the same worst route latency. */
static int same_link_loads(const coll_group *gp, const pattern *a, const pattern *b)
{
    if (fabs(a->max_lat - b->max_lat) > 1e-12 * a->max_lat)
        return 0;
    link_load *la, *lb;
    int sa, sb;
    size_t na = pattern_link_loads(gp, a, &la, &sa), nb = pattern_link_loads(gp, b, &lb, &sb);
    int same = sa && sb && na == nb;
    for (size_t i = 0; same && i < na; i++)
        same = la[i].link == lb[i].link && fabs(la[i].w - lb[i].w) <= 1e-12 * la[i].w;
    free(la);
    free(lb);
    return same;
}

/* A route's links and its narrowest bandwidth (0 for a host and itself). */
static int route_of(sg_host_t a, sg_host_t b, xbt_dynar_t d, double *narrowest)
{
    xbt_dynar_reset(d);
    *narrowest = 0.0;
    if (a == b)
        return 0;
    sg_host_get_route(a, b, d);
    int len = (int)xbt_dynar_length(d);
    for (int i = 0; i < len; i++) {
        double bw = sg_link_get_bandwidth(xbt_dynar_get_as(d, i, sg_link_t));
        if (i == 0 || bw < *narrowest)
            *narrowest = bw;
    }
    return len;
}

/* NCCL's P2P transport (point-to-point and all-to-all, not the rings) sends between two GPUs of
 * a node without an NVLink path through a third GPU linked to both (its topology's NVB path,
 * ranked above PCIe: "via P2P/indirect", the sender writing into a buffer on the intermediate
 * GPU, which forwards it). Here: a member pair of one node whose route is not one direct link
 * goes through the member k of that node whose two routes are single links and whose narrower
 * one is widest, if wider than the pair's own route (the first such k in group order on ties).
 * A node whose GPUs reach each other through switch ports (NVSwitch) has no single-link routes
 * and never relays. */
static void build_relays(coll_group *gp)
{
    if (gp->relay_built)
        return;
    gp->relay_built = 1;
    int n = gp->n;
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    double *direct = NULL; /* [n * n]: a pair's single-link bandwidth, 0: not one link */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double bw;
            if (i == j || gp->node[i] != gp->node[j] ||
                route_of(gp->hosts[i], gp->hosts[j], d, &bw) != 1)
                continue;
            if (!direct)
                direct = xcalloc((size_t)n * n, sizeof *direct);
            direct[(size_t)i * n + j] = bw;
        }
    for (int i = 0; direct && i < n; i++)
        for (int j = 0; j < n; j++) {
            double own;
            if (i == j || gp->node[i] != gp->node[j] || direct[(size_t)i * n + j] > 0.0)
                continue;
            /* queried again rather than kept for every pair: nothing n x n is held for the
             * groups that never relay (NVSwitch nodes, nodes of one GPU) */
            route_of(gp->hosts[i], gp->hosts[j], d, &own);
            int best = -1;
            double wide = own;
            for (int k = 0; k < n; k++) {
                double a = direct[(size_t)i * n + k], b = direct[(size_t)k * n + j];
                double w = a < b ? a : b;
                if (w > wide) {
                    wide = w;
                    best = k;
                }
            }
            if (best < 0)
                continue;
            if (!gp->relay) {
                gp->relay = xmalloc((size_t)n * n * sizeof *gp->relay);
                for (size_t x = 0; x < (size_t)n * n; x++)
                    gp->relay[x] = -1;
            }
            gp->relay[(size_t)i * n + j] = best;
        }
    free(direct);
    xbt_dynar_free(&d);
}

/* An all-to-all's bytes from i to j: one flow, or two through the pair's relay. */
static void add_p2p_flow(coll_group *gp, pattern *p, int i, int j, double share)
{
    int k = gp->relay ? gp->relay[(size_t)i * gp->n + j] : -1;
    if (k < 0) {
        add_flow(gp, p, i, j, share);
        return;
    }
    add_flow(gp, p, i, k, share);
    add_flow(gp, p, k, j, share);
}

/* The all-to-all: every member sends S/n to every other. Run as n (n - 1) flows, or as fewer
 * that SimGrid cannot tell from them: ptask_L07 loads each link of a parallel task with the
 * sum of the bytes of the host pairs routed over it and charges the task its worst route
 * latency (no per-pair bound: TCP-gamma is 0), so flows with the same bytes on every link and
 * the same worst latency run the same. With k members on each of m nodes, the candidates send
 * each member's bytes for its node's peers to the next member on its node, and its bytes for
 * the other nodes to the member at its own position on the next node (2n flows instead of
 * n (n - 1): 64 against 992 for EP32 over 4 DGX nodes on one leaf), or failing that its bytes
 * for each other node to the member at its position there (n m flows). One is taken only when its
 * per-link loads and worst latency match the full pattern's (same_link_loads): on a fabric
 * whose routes between two nodes differ by destination GPU beyond its own links, the full
 * pattern runs. The link statistics (htae_links) see the same bytes per link over the same
 * span. */
void htae_pattern_build_direct(coll_group *gp)
{
    pattern *p = &gp->direct;
    int n = gp->n, k = gp->k, m = gp->m;
    build_relays(gp);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                add_p2p_flow(gp, p, i, j, 1.0 / n);
    pattern_close(gp, p);
    gp->has_direct = 1;
    if (k == 0 || n - 1 <= (k > 1) + m - 1 || gp->relay)
        return;
    int *pos = xmalloc((size_t)n * sizeof *pos), *at = xmalloc((size_t)m * k * sizeof *at);
    for (int a = 0; a < m; a++) { /* at[a * k + q]: member at position q of node a */
        int c = members_of(gp, a, at + (size_t)a * k);
        assert(c == k);
        for (int q = 0; q < k; q++)
            pos[at[a * k + q]] = q;
    }
    /* first each member's bytes for all other nodes to its position on the next node (when
     * routes between nodes cross no links but the GPUs' own), else per node */
    for (int per_node = 0; per_node < 2; per_node++) {
        pattern c = {0};
        for (int i = 0; i < n; i++) {
            int a = gp->node[i], q = pos[i];
            if (k > 1)
                add_flow(gp, &c, i, at[a * k + (q + 1) % k], (double)(k - 1) / n);
            for (int b = 0; b < m; b++)
                if (b != a && (per_node || b == (a + 1) % m))
                    add_flow(gp, &c, i, at[b * k + q], (double)k / n * (per_node ? 1 : m - 1));
        }
        pattern_close(gp, &c);
        if (same_link_loads(gp, p, &c)) {
            c.lat_intra = p->lat_intra;
            c.lat_inter = p->lat_inter;
            c.max_lat = p->max_lat;
            htae_pattern_free(p);
            *p = c;
            break;
        }
        htae_pattern_free(&c);
    }
    free(pos);
    free(at);
}

void htae_pattern_build_alltoallv(coll_group *gp, const double *m, pattern *p)
{
    int n = gp->n;
    build_relays(gp);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && m[(size_t)i * n + j] > 0.0)
                add_p2p_flow(gp, p, i, j, m[(size_t)i * n + j]);
    pattern_close(gp, p);
}
