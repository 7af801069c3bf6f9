/* htae_coll.c: NCCL's collective algorithms as flows on the platform (see htae_coll.h).
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
 * - tree (all-reduce across m >= 2 nodes of k members each): NCCL's double binary tree: two
 *   binary trees over the nodes, the second the mirror image of the first (node i -> m-1-i), so
 *   a node that is inner in one is mostly a leaf in the other; each carries half the buffer,
 *   reduced up and broadcast down at once (pipelined). Inside each node a chain from the tree's
 *   head. k channels: channel c's chain starts at local index c and its tree edges join the
 *   local-c GPUs (one NIC per channel). Weights: chain edges 1/k each way, tree edges 1/(2k)
 *   each way per tree. Latency: 2((k-1) intra steps + floor(log2 m) inter steps).
 * - NVLS (all-reduce inside one NVSwitch node of NVLS-capable GPUs, k members): the switch
 *   reduces. Member i owns S/k: the switch pulls every member's copy of each share (S out of
 *   each GPU), hands i the reduced share (S/k in), i multicasts it back (S/k out, S in each).
 *   So each GPU's port carries S (k+1)/k each way; a uniform matrix of (k+1)/(k(k-1)) per pair
 *   loads every port exactly so. Latency: a fixed cost (nvls_latency_s, multicast setup) and two
 *   steps (reduce, multicast).
 * - direct (all-to-all): every member sends S/n to every other, all at once; one step.
 *
 * Choosing (COLL_ALGO_AUTO, all-reduce only: the other kinds have one algorithm each): the
 * algorithm with the least predicted time alone on the platform, latency terms plus S times its
 * busiest link's load per byte, like NCCL's tuner (latency + size / bandwidth per algorithm),
 * with one exception, so that protosim picks what NCCL picks: NCCL's tuner credits the tree
 * with 92% of the channels' bandwidth and counts every byte twice (reduce, then broadcast), so
 * it never prefers the tree for bandwidth, only for latency, even on two nodes where the tree's
 * flows move less over the NICs than the ring's (HTAE_TREE_SELECT_BW below: the tree's
 * bandwidth term for choosing is S / (0.46 x the ring's bus bandwidth)). When the tree runs, its
 * own flows set its time. */
#include "htae_coll.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"
#include "htae_clock.h"
#include "htae_pattern.h"
#include "htae_rings.h"

/* The tree's algorithm bandwidth relative to the ring's bus bandwidth in NCCL's tuner: 92% of
 * the channels' bandwidth, halved (every byte goes up and down the tree). For choosing only. */
static const double HTAE_TREE_SELECT_BW = 0.46;

static const char *const algo_table[] = {"auto", "ring", "tree", "nvls", "direct"};
const enum_names coll_algo_names = ENUM_NAMES(algo_table);

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
    return a == b ? 0.0 : sg_host_get_route_latency(a, b);
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

static void build_ring(coll_group *gp)
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

static void build_tree(coll_group *gp)
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

static void build_nvls(coll_group *gp)
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
void htae_coll_build_direct(coll_group *gp)
{
    pattern *p = &gp->direct;
    int n = gp->n, k = gp->k, m = gp->m;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                add_flow(gp, p, i, j, 1.0 / n);
    pattern_close(gp, p);
    gp->has_direct = 1;
    if (k == 0 || n - 1 <= (k > 1) + m - 1)
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

/* The group's constants: the options', or with device_constants each member's device's where
 * it gives them (members of different devices: the largest latencies, the smallest
 * efficiencies). NVLS only if every member's device has it. */
static void resolve_constants(coll_group *gp, const cluster *c, const int32_t *ranks,
                              const htae_options *opt)
{
    int dev = opt->device_constants, nvls_capable = 1;
    gp->launch_s = gp->step_s = 0.0;
    gp->eff_intra = gp->eff_nvls = 1.0;
    for (int i = 0; i < gp->n; i++) {
        const device_spec *d = c->device[ranks[i]];
        nvls_capable &= d->nvls_efficiency > 0.0;
        gp->launch_s = fmax(gp->launch_s,
                            dev && d->coll_launch_s >= 0.0 ? d->coll_launch_s : opt->coll_launch_s);
        gp->step_s =
            fmax(gp->step_s, dev && d->coll_step_s >= 0.0 ? d->coll_step_s : opt->coll_step_s);
        gp->eff_intra =
            fmin(gp->eff_intra,
                 dev && d->coll_efficiency > 0.0 ? d->coll_efficiency : opt->protocol_efficiency);
        gp->eff_nvls = fmin(gp->eff_nvls, dev && d->nvls_efficiency > 0.0 ? d->nvls_efficiency
                                                                          : opt->nvls_efficiency);
    }
    gp->eff_net = opt->net_efficiency;
    gp->net_step_s = opt->coll_net_step_s;
    gp->nvls_latency_s = opt->nvls_latency_s;
    if (!nvls_capable)
        gp->eff_nvls = 0.0;
}

coll_group *htae_coll_group_create(const cluster *c, const sg_host_t *hosts_by_rank,
                                   const int32_t *ranks, int n, const htae_options *opt)
{
    assert(n >= 1);
    coll_group *gp = xcalloc(1, sizeof *gp);
    gp->n = n;
    gp->hosts = xmalloc((size_t)n * sizeof *gp->hosts);
    gp->node = xmalloc((size_t)n * sizeof *gp->node);
    int *node_id = xmalloc((size_t)n * sizeof *node_id), *count = xcalloc((size_t)n, sizeof *count);
    for (int i = 0; i < n; i++) {
        gp->hosts[i] = hosts_by_rank[ranks[i]];
        int node = c->node_of_rank[ranks[i]], j;
        for (j = 0; j < gp->m && node_id[j] != node; j++)
            ;
        if (j == gp->m)
            node_id[gp->m++] = node;
        gp->node[i] = j;
        count[j]++;
    }
    gp->k = count[0];
    for (int j = 1; j < gp->m; j++)
        if (count[j] != count[0])
            gp->k = 0;
    free(node_id);
    free(count);
    resolve_constants(gp, c, ranks, opt);
    if (n < 2)
        return gp;
    build_ring(gp);
    if (gp->m >= 2 && gp->k >= 1) {
        build_tree(gp);
        gp->has_tree = 1;
    }
    if (gp->m == 1 && gp->eff_nvls > 0.0) {
        build_nvls(gp);
        gp->has_nvls = 1;
    }
    return gp;
}

void htae_coll_group_free(coll_group *gp)
{
    if (!gp)
        return;
    htae_pattern_free(&gp->ring);
    htae_pattern_free(&gp->tree);
    htae_pattern_free(&gp->nvls);
    htae_pattern_free(&gp->direct);
    htae_pattern_free(&gp->lean);
    free(gp->lean_hosts);
    free(gp->lean_slot);
    free(gp->hosts);
    free(gp->node);
    free(gp);
}

int htae_coll_check(const coll_group *gp, coll_kind kind, coll_algo algo, ps_error *err)
{
    const char *name = enum_name(coll_algo_names, (int)algo);
    if (algo == COLL_ALGO_AUTO || gp->n < 2)
        return 0;
    if (kind != COLL_ALLREDUCE)
        return 0; /* forcing applies to all-reduce; the others have one algorithm each */
    if (algo == COLL_ALGO_TREE && !gp->has_tree)
        return ps_error_set(err, PS_EINPUT, NULL, 0, 0, "algo",
                            "the tree algorithm needs a group on two nodes or more with as many "
                            "members on each; this %d-GPU group %s",
                            gp->n, gp->m < 2 ? "is on one node" : "has unequal nodes");
    if (algo == COLL_ALGO_NVLS && !gp->has_nvls)
        return ps_error_set(
            err, PS_EINPUT, NULL, 0, 0, "algo",
            "NVLS needs a group inside one NVSwitch node of NVLS-capable GPUs "
            "(Hopper or later, devices.yaml nvls_efficiency); this %d-GPU group "
            "%s",
            gp->n, gp->m > 1 ? "spans nodes (NVLS-tree is not modelled)" : "has GPUs without NVLS");
    if (algo == COLL_ALGO_DIRECT)
        return ps_error_set(err, PS_EINPUT, NULL, 0, 0, "algo",
                            "'%s' is all-to-all's algorithm, not an all-reduce one", name);
    return 0;
}

/* Steps of a ring collective, and how many of them cross nodes. */
static void ring_steps(const coll_group *gp, coll_kind kind, int *steps, int *inter)
{
    int twice = kind == COLL_ALLREDUCE;
    *steps = (twice + 1) * (gp->n - 1);
    *inter = gp->m > 1 ? (twice + 1) * (gp->m - 1) : 0;
}

/* The algorithm's pattern, its bytes factor for `kind`, and its latency terms (with launch). */
static const pattern *algo_terms(coll_group *gp, coll_kind kind, coll_algo algo, double *factor,
                                 double *latency)
{
    double step = gp->step_s, n = gp->n, net = gp->net_step_s;
    switch (algo) {
    case COLL_ALGO_TREE: {
        int depth = 0;
        while ((2 << depth) <= gp->m)
            depth++;
        *factor = 1.0;
        *latency = gp->launch_s + 2.0 * ((gp->k - 1) * (step + gp->tree.lat_intra) +
                                         depth * (step + net + gp->tree.lat_inter));
        return &gp->tree;
    }
    case COLL_ALGO_NVLS:
        *factor = 1.0;
        *latency = gp->launch_s + gp->nvls_latency_s + 2.0 * (step + gp->nvls.lat_intra);
        return &gp->nvls;
    case COLL_ALGO_DIRECT:
        if (!gp->has_direct)
            htae_coll_build_direct(gp);
        *factor = 1.0;
        *latency = gp->launch_s + step + (gp->m > 1 ? net : 0.0) + gp->direct.max_lat;
        return &gp->direct;
    default: {
        int steps, inter;
        ring_steps(gp, kind, &steps, &inter);
        *factor = (kind == COLL_ALLREDUCE ? 2.0 : 1.0) * (n - 1) / n;
        *latency = gp->launch_s + (steps - inter) * (step + gp->ring.lat_intra) +
                   inter * (step + net + gp->ring.lat_inter);
        return &gp->ring;
    }
    }
}

double htae_coll_estimate(coll_group *gp, coll_kind kind, coll_algo algo, double bytes,
                          const htae_options *opt)
{
    (void)opt;
    if (gp->n < 2)
        return 0.0;
    double factor, latency;
    const pattern *p = algo_terms(gp, kind, algo, &factor, &latency);
    return latency + factor * bytes * htae_pattern_unit(gp, (pattern *)p);
}

coll_algo htae_coll_choose(coll_group *gp, coll_kind kind, double bytes, const htae_options *opt)
{
    if (kind == COLL_ALLTOALL)
        return COLL_ALGO_DIRECT;
    if (kind != COLL_ALLREDUCE)
        return COLL_ALGO_RING;
    if (opt->algo != COLL_ALGO_AUTO)
        return opt->algo;
    coll_algo best = COLL_ALGO_RING;
    if (gp->n < 2)
        return best;
    double t = htae_coll_estimate(gp, kind, best, bytes, opt);
    coll_algo others[2] = {COLL_ALGO_TREE, COLL_ALGO_NVLS};
    int have[2] = {gp->has_tree, gp->has_nvls};
    for (int i = 0; i < 2; i++) {
        if (!have[i])
            continue;
        double u;
        if (others[i] == COLL_ALGO_TREE) { /* NCCL's estimate of the tree's bandwidth */
            double factor, latency;
            algo_terms(gp, kind, COLL_ALGO_TREE, &factor, &latency);
            u = latency + bytes * htae_pattern_unit(gp, &gp->ring) / HTAE_TREE_SELECT_BW;
        } else {
            u = htae_coll_estimate(gp, kind, others[i], bytes, opt);
        }
        if (u < t) {
            t = u;
            best = others[i];
        }
    }
    return best;
}

/* The flows of an uneven all-to-all: member i sends m[i * n + j] bytes to member j. */
static void build_alltoallv(coll_group *gp, const double *m, pattern *p)
{
    int n = gp->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && m[(size_t)i * n + j] > 0.0)
                add_flow(gp, p, i, j, m[(size_t)i * n + j]);
    pattern_close(gp, p);
}

typedef struct block_run {
    sg_exec_t task;
    int first, count; /* its started edges: started[first .. first + count) */
} block_run;

static const pattern *sort_pattern; /* for by_lower_member: qsort has no context argument */

static int by_lower_member(const void *a, const void *b)
{
    const pattern *p = sort_pattern;
    int x = *(const int *)a, y = *(const int *)b;
    int lx = p->src[x] < p->dst[x] ? p->src[x] : p->dst[x];
    int ly = p->src[y] < p->dst[y] ? p->src[y] : p->dst[y];
    return lx != ly ? (lx > ly) - (lx < ly) : (x > y) - (x < y);
}

/* Start the task of edges order[from .. to) (at most HTAE_PTASK_MAX_HOSTS hosts), recording
 * the edges whose flows it starts (one per host pair) into started[]. */
static sg_exec_t start_block(coll_group *gp, const pattern *p, double scale, const int *order,
                             int from, int to, int *slot, int *started, int *n_started,
                             coll_run_ctx *cx)
{
    sg_host_t hosts[HTAE_PTASK_MAX_HOSTS];
    int members[HTAE_PTASK_MAX_HOSTS], h = 0;
    for (int i = from; i < to; i++)
        for (int end = 0; end < 2; end++) {
            int m = end ? p->dst[order[i]] : p->src[order[i]];
            if (slot[m] < 0) {
                assert(h < HTAE_PTASK_MAX_HOSTS);
                slot[m] = h;
                members[h] = m;
                hosts[h++] = gp->hosts[m];
            }
        }
    double *mx = xcalloc((size_t)h * (size_t)h, sizeof *mx);
    for (int i = from; i < to; i++) {
        int e = order[i];
        mx[(size_t)slot[p->src[e]] * h + (size_t)slot[p->dst[e]]] += scale * p->w[e];
    }
    sg_exec_t task = sg_actor_parallel_exec_init(h, hosts, NULL, mx);
    double now = simgrid_get_clock();
    for (int i = from; i < to; i++) { /* each host pair once: its matrix cell */
        int e = order[i];
        double *cell = &mx[(size_t)slot[p->src[e]] * h + (size_t)slot[p->dst[e]]];
        if (*cell > 0.0) {
            htae_links_start(cx->links, gp->hosts[p->src[e]], gp->hosts[p->dst[e]], *cell, now);
            *cell = -1.0;
            started[(*n_started)++] = e;
        }
    }
    free(mx);
    for (int k = 0; k < h; k++)
        slot[members[k]] = -1;
    return task;
}

/* Wait out `latency`, then move scale * w bytes on every edge of p: one parallel task, or one
 * per block of hosts in large groups, a block never holding members of two spans (members
 * [k span, (k + 1) span), span > 0). Returns when every flow has ended. */
static void run_pattern(coll_group *gp, const pattern *p, double scale, double latency, int span,
                        coll_run_ctx *cx)
{
    /* SimGrid charges each task its worst route latency itself; an empty one runs no task */
    int empty = scale <= 0.0 || p->n_edges == 0;
    double wait = empty ? latency : latency - p->max_lat;
    if (wait > 0.0)
        htae_wait_until(simgrid_get_clock() + wait);
    if (empty)
        return;
    /* Everything here is this call's own: SimGrid calls may yield to other actors. */
    int n = gp->n, ne = p->n_edges;
    int *order = xmalloc((size_t)ne * sizeof *order), *slot = xmalloc((size_t)n * sizeof *slot);
    int *started = xmalloc((size_t)ne * sizeof *started), n_started = 0;
    for (int e = 0; e < ne; e++)
        order[e] = e;
    memset(slot, 0xff, (size_t)n * sizeof *slot); /* -1: no slot */
    if (n > HTAE_PTASK_MAX_HOSTS) {
        sort_pattern = p;
        qsort(order, (size_t)ne, sizeof *order, by_lower_member);
    }
    block_run *blocks = NULL;
    size_t n_blocks = 0, cap = 0;
    uint8_t *seen = xcalloc((size_t)n, 1);
    for (int from = 0; from < ne;) { /* greedy: the longest run of edges within the host cap */
        int to = from, hosts = 0;
        for (; to < ne; to++) {
            int a = p->src[order[to]], b = p->dst[order[to]];
            int more = !seen[a] + (!seen[b] && b != a);
            if (hosts + more > HTAE_PTASK_MAX_HOSTS ||
                (span && a / span != p->src[order[from]] / span))
                break;
            hosts += more;
            seen[a] = seen[b] = 1;
        }
        for (int i = from; i < to; i++)
            seen[p->src[order[i]]] = seen[p->dst[order[i]]] = 0;
        xgrow(&blocks, sizeof *blocks, n_blocks + 1, &cap);
        block_run *b = &blocks[n_blocks++];
        b->first = n_started;
        b->task = start_block(gp, p, scale, order, from, to, slot, started, &n_started, cx);
        b->count = n_started - b->first;
        from = to;
    }
    free(seen);
    sg_exec_t *tasks = xmalloc(n_blocks * sizeof *tasks);
    for (size_t b = 0; b < n_blocks; b++) {
        tasks[b] = blocks[b].task;
        sg_exec_start(tasks[b]);
        (*cx->activities)++;
    }
    for (size_t left = n_blocks; left > 0; left--) { /* each block's flows end when it does */
        ssize_t i = sg_exec_wait_any(tasks, left);
        assert(i >= 0 && (size_t)i < left);
        double now = simgrid_get_clock();
        for (int k = 0; k < blocks[i].count; k++) {
            int e = started[blocks[i].first + k];
            htae_links_end(cx->links, gp->hosts[p->src[e]], gp->hosts[p->dst[e]], now);
        }
        tasks[i] = tasks[left - 1];
        blocks[i] = blocks[left - 1];
    }
    free(tasks);
    free(blocks);
    free(started);
    free(order);
    free(slot);
}

void htae_coll_run(coll_group *gp, coll_kind kind, double bytes, const double *matrix, int lean,
                   coll_run_ctx *cx)
{
    if (gp->n < 2)
        return;
    assert(isfinite(bytes) && bytes >= 0.0);
    assert(!matrix || kind == COLL_ALLTOALL);
    if (matrix) {
        pattern v = {0};
        build_alltoallv(gp, matrix, &v);
        double latency = gp->launch_s + gp->step_s + (gp->m > 1 ? gp->net_step_s : 0.0) + v.max_lat;
        run_pattern(gp, &v, 1.0, latency, 0, cx);
        htae_pattern_free(&v);
        return;
    }
    coll_algo algo = htae_coll_choose(gp, kind, bytes, cx->opt);
    double factor, latency;
    const pattern *p = algo_terms(gp, kind, algo, &factor, &latency);
    if (cx->timed_now)
        htae_coll_run_timed(gp, (pattern *)p, factor * bytes, latency, cx);
    else if (lean && gp->lean.n_edges && p == &gp->direct && factor * bytes > 0.0)
        htae_coll_run_lean(gp, factor * bytes, latency, cx);
    else
        run_pattern(gp, p, factor * bytes, latency, 0, cx);
}

void htae_coll_run_with(coll_group *const *groups, int first, const int32_t *comp, int n,
                        coll_kind kind, double bytes, coll_run_ctx *cx)
{
    assert(isfinite(bytes) && bytes >= 0.0 && n > 0);
    int m = groups[first]->n, total = m * (n + 1);
    if (m < 2) /* one member: nothing moves, as htae_coll_run */
        return;
    sg_host_t *hosts = xmalloc((size_t)total * sizeof *hosts);
    pattern all = {0};
    double latency = 0.0, u_min = INFINITY; /* u_min: the least of the groups' unit times */
    uint64_t key = (uint64_t)(uint32_t)first * 0x9E3779B97F4A7C15ull ^ (uint64_t)kind;
    for (int k = 0; k <= n; k++) { /* group k's members are all's k * m .. k * m + m - 1 */
        coll_group *g = groups[k ? comp[k - 1] : first];
        assert(g->n == m);
        double factor, lat;
        coll_algo algo = htae_coll_choose(g, kind, bytes, cx->opt);
        const pattern *p = algo_terms(g, kind, algo, &factor, &lat);
        if (cx->timed_now && factor > 0.0)
            u_min = fmin(u_min, factor * htae_pattern_unit(g, (pattern *)p));
        key = (key ^ (uint64_t)(uint32_t)(k ? comp[k - 1] : first) << 8 ^ (uint64_t)algo) *
              0xBF58476D1CE4E5B9ull;
        memcpy(hosts + (size_t)k * m, g->hosts, (size_t)m * sizeof *hosts);
        for (int e = 0; e < p->n_edges && factor > 0.0; e++)
            htae_pattern_add_edge(&all, p->src[e] + k * m, p->dst[e] + k * m, factor * p->w[e]);
        latency = lat > latency ? lat : latency;
        all.max_lat = p->max_lat > all.max_lat ? p->max_lat : all.max_lat;
    }
    coll_group merged = {.n = total, .hosts = hosts}; /* run_pattern reads only these */
    if (cx->timed_now && htae_merged_alone(&merged, &all, u_min, key, cx))
        htae_coll_run_timed(&merged, &all, bytes, latency, cx);
    else
        run_pattern(&merged, &all, bytes, latency, total > HTAE_PTASK_MAX_HOSTS ? m : 0, cx);
    htae_pattern_free(&all);
    free(hosts);
}
