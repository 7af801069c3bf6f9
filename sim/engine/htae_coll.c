/* htae_coll.c: NCCL's collective algorithms on a group (see htae_coll.h): the group and its
 * constants, the choice of algorithm, and the runs of a collective's flows as SimGrid tasks
 * (or as timed waits, htae_timed.c, and lean tasks, htae_lean.c). The flows of each algorithm,
 * its pattern, are built in htae_pattern.c.
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

#include "../base/xalloc.h"
#include "htae_blocks.h"
#include "htae_clock.h"
#include "htae_fast.h"
#include "htae_solo.h"

/* The tree's algorithm bandwidth relative to the ring's bus bandwidth in NCCL's tuner: 92% of
 * the channels' bandwidth, halved (every byte goes up and down the tree). For choosing only. */
static const double HTAE_TREE_SELECT_BW = 0.46;

static const char *const algo_table[] = {"auto", "ring", "tree", "nvls", "direct"};
const enum_names coll_algo_names = ENUM_NAMES(algo_table);

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
    gp->gid = -1;
    gp->owners = &gp->gid;
    gp->n_owners = 1;
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
    htae_pattern_build_ring(gp);
    /* the tree inside one node (NCCL runs it there too: a chain) only when asked for: NCCL's
     * tuner never prefers it there, and auto leaves it out (see the header comment) */
    if (gp->k >= 1 && (gp->m >= 2 || opt->algo == COLL_ALGO_TREE)) {
        htae_pattern_build_tree(gp);
        gp->has_tree = 1;
    }
    if (gp->m == 1 && gp->eff_nvls > 0.0) {
        htae_pattern_build_nvls(gp);
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
    free(gp->relay);
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
                            "the tree algorithm needs as many members on each node of the "
                            "group; this %d-GPU group has unequal nodes",
                            gp->n);
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
            htae_pattern_build_direct(gp);
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

void htae_coll_group_set_id(coll_group *gp, int32_t id)
{
    gp->gid = id;
}

double htae_coll_least_wait(coll_group *gp)
{
    if (gp->n < 2)
        return INFINITY;
    /* the all-to-all's (direct, -v, lean): its latency terms are these plus its worst route */
    double least = gp->launch_s + gp->step_s + (gp->m > 1 ? gp->net_step_s : 0.0);
    static const coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int a = 0; a < 3; a++) {
            coll_algo algo = a == 0 ? COLL_ALGO_RING : a == 1 ? COLL_ALGO_TREE : COLL_ALGO_NVLS;
            if ((algo == COLL_ALGO_TREE && !gp->has_tree) ||
                (algo == COLL_ALGO_NVLS && !gp->has_nvls))
                continue;
            double factor, latency;
            const pattern *p = algo_terms(gp, kinds[k], algo, &factor, &latency);
            least = fmin(least, fmax(latency - p->max_lat, 0.0));
        }
    return least;
}

typedef struct block_run {
    sg_exec_t task;
    int first, count; /* its started edges: started[first .. first + count) */
} block_run;

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
static void run_pattern_with(coll_group *gp, pattern *p, const pattern *ghost, double scale,
                             double latency, int span, const uint64_t *key, coll_run_ctx *cx);

static void run_pattern(coll_group *gp, pattern *p, double scale, double latency, int span,
                        const uint64_t *key, coll_run_ctx *cx)
{
    run_pattern_with(gp, p, NULL, scale, latency, span, key, cx);
}

/* run_pattern, and with `ghost` (not NULL: one task only) edges left out of the task whose
 * bytes count on their links as if they ran in it (htae_prune.h). Timed while alone on its
 * links (htae_solo.h), its shape cached under *key (NULL: none). */
static void run_pattern_with(coll_group *gp, pattern *p, const pattern *ghost, double scale,
                             double latency, int span, const uint64_t *key, coll_run_ctx *cx)
{
    /* SimGrid charges each task its worst route latency itself; an empty one runs no task */
    int empty = scale <= 0.0 || p->n_edges == 0;
    double wait = empty ? latency : latency - p->max_lat;
    int real = -1;
    if (!empty && htae_coll_solo(gp, p, ghost, scale, wait, span, key, 1, cx, &real))
        return;
    if (wait > 0.0)
        htae_wait_until(simgrid_get_clock() + wait);
    if (empty)
        return;
    /* Everything here is this call's own: SimGrid calls may yield to other actors. */
    int n = gp->n, ne = p->n_edges;
    int *order = xmalloc((size_t)ne * sizeof *order), *slot = xmalloc((size_t)n * sizeof *slot);
    int *started = xmalloc((size_t)ne * sizeof *started), n_started = 0, *bound;
    memset(slot, 0xff, (size_t)n * sizeof *slot); /* -1: no slot */
    size_t n_blocks = (size_t)htae_blocks_of(gp, p, span, order, &bound);
    block_run *blocks = xmalloc((n_blocks + 1) * sizeof *blocks);
    for (size_t k = 0; k < n_blocks; k++) {
        block_run *b = &blocks[k];
        b->first = n_started;
        b->task =
            start_block(gp, p, scale, order, bound[k], bound[k + 1], slot, started, &n_started, cx);
        b->count = n_started - b->first;
    }
    free(bound);
    sg_exec_t *tasks = xmalloc(n_blocks * sizeof *tasks);
    for (size_t b = 0; b < n_blocks; b++) {
        tasks[b] = blocks[b].task;
        sg_exec_start(tasks[b]);
        (*cx->activities)++;
    }
    assert(!ghost || n_blocks == 1);
    for (int e = 0; ghost && e < ghost->n_edges; e++)
        if (scale * ghost->w[e] > 0.0)
            htae_links_start(cx->links, gp->hosts[ghost->src[e]], gp->hosts[ghost->dst[e]],
                             scale * ghost->w[e], simgrid_get_clock());
    for (size_t left = n_blocks; left > 0; left--) { /* each block's flows end when it does */
        ssize_t i = sg_exec_wait_any(tasks, left);
        assert(i >= 0 && (size_t)i < left);
        double now = simgrid_get_clock();
        for (int k = 0; k < blocks[i].count; k++) {
            int e = started[blocks[i].first + k];
            htae_links_end(cx->links, gp->hosts[p->src[e]], gp->hosts[p->dst[e]], now);
        }
        for (int e = 0; ghost && e < ghost->n_edges; e++)
            if (scale * ghost->w[e] > 0.0)
                htae_links_end(cx->links, gp->hosts[ghost->src[e]], gp->hosts[ghost->dst[e]], now);
        tasks[i] = tasks[left - 1];
        blocks[i] = blocks[left - 1];
    }
    htae_solo_real_end(cx->solo, real);
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
        htae_pattern_build_alltoallv(gp, matrix, &v);
        double latency = gp->launch_s + gp->step_s + (gp->m > 1 ? gp->net_step_s : 0.0) + v.max_lat;
        run_pattern(gp, &v, 1.0, latency, 0, NULL, cx);
        htae_pattern_free(&v);
        return;
    }
    coll_algo algo = htae_coll_choose(gp, kind, bytes, cx->opt);
    double factor, latency;
    const pattern *p = algo_terms(gp, kind, algo, &factor, &latency);
    if (cx->timed_now && gp->n <= HTAE_PTASK_MAX_HOSTS)
        htae_coll_run_timed(gp, (pattern *)p, factor * bytes, latency, cx);
    else if (cx->timed_now &&
             htae_coll_run_blocks_timed(gp, (pattern *)p, factor * bytes, latency, 0, NULL, cx))
        ;
    else if (lean && gp->lean.n_edges && p == &gp->direct && factor * bytes > 0.0)
        htae_coll_run_lean(gp, factor * bytes, latency, cx);
    else {
        uint64_t key = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull | 1; /* own: odd */
        run_pattern(gp, (pattern *)p, factor * bytes, latency, 0, &key, cx);
    }
}

/* Whether htae_prune left out any of the companion groups comp[0 .. n). */
static int any_dropped(const int32_t *comp, int n, const coll_run_ctx *cx)
{
    for (int k = 0; k < n; k++)
        if (cx->drop_group[comp[k]])
            return 1;
    return 0;
}

void htae_coll_run_with(coll_group *const *groups, int first, const int32_t *comp, int n,
                        coll_kind kind, double bytes, coll_run_ctx *cx)
{
    assert(isfinite(bytes) && bytes >= 0.0 && n > 0);
    int m = groups[first]->n, total = m * (n + 1);
    if (m < 2) /* one member: nothing moves, as htae_coll_run */
        return;
    sg_host_t *hosts = xmalloc((size_t)total * sizeof *hosts);
    /* kept, ghost: with companion groups htae_prune leaves out (one SimGrid task only), the
     * edges of the task and those that only count on their links */
    pattern all = {0}, kept = {0}, ghost = {0};
    int prune = total <= HTAE_PTASK_MAX_HOSTS && cx->drop_group && any_dropped(comp, n, cx);
    double latency = 0.0;
    uint64_t key = (uint64_t)(uint32_t)first * 0x9E3779B97F4A7C15ull ^ (uint64_t)kind;
    for (int k = 0; k <= n; k++) { /* group k's members are all's k * m .. k * m + m - 1 */
        coll_group *g = groups[k ? comp[k - 1] : first];
        assert(g->n == m);
        double factor, lat;
        coll_algo algo = htae_coll_choose(g, kind, bytes, cx->opt);
        const pattern *p = algo_terms(g, kind, algo, &factor, &lat);
        key = (key ^ (uint64_t)(uint32_t)(k ? comp[k - 1] : first) << 8 ^ (uint64_t)algo) *
              0xBF58476D1CE4E5B9ull;
        memcpy(hosts + (size_t)k * m, g->hosts, (size_t)m * sizeof *hosts);
        pattern *to = prune && k && cx->drop_group[comp[k - 1]] ? &ghost : &kept;
        for (int e = 0; e < p->n_edges && factor > 0.0; e++) {
            htae_pattern_add_edge(&all, p->src[e] + k * m, p->dst[e] + k * m, factor * p->w[e]);
            if (prune)
                htae_pattern_add_edge(to, p->src[e] + k * m, p->dst[e] + k * m, factor * p->w[e]);
        }
        latency = lat > latency ? lat : latency;
        all.max_lat = p->max_lat > all.max_lat ? p->max_lat : all.max_lat;
        if (to == &kept) /* SimGrid charges the kept flows' worst route latency */
            kept.max_lat = p->max_lat > kept.max_lat ? p->max_lat : kept.max_lat;
    }
    int32_t *owners = xmalloc(((size_t)n + 1) * sizeof *owners);
    owners[0] = first;
    memcpy(owners + 1, comp, (size_t)n * sizeof *owners);
    coll_group merged = {.n = total, .hosts = hosts, .owners = owners, .n_owners = n + 1};
    /* run_pattern reads only these */
    if (cx->timed_now && htae_merged_alone(&merged, &all, key, cx))
        htae_coll_run_timed(&merged, &all, bytes, latency, cx);
    else if (cx->timed_now && total > HTAE_PTASK_MAX_HOSTS &&
             htae_coll_run_blocks_timed(&merged, &all, bytes, latency, m, &key, cx))
        ;
    else if (prune) {
        uint64_t kept_key = (key & ~3ull) | 2; /* merged: even, the kept flows' apart */
        run_pattern_with(&merged, &kept, &ghost, bytes, latency, 0, &kept_key, cx);
    } else {
        uint64_t all_key = key & ~3ull;
        run_pattern(&merged, &all, bytes, latency, total > HTAE_PTASK_MAX_HOSTS ? m : 0, &all_key,
                    cx);
    }
    htae_pattern_free(&all);
    htae_pattern_free(&kept);
    htae_pattern_free(&ghost);
    free(owners);
    free(hosts);
}
