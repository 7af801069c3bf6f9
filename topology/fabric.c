/* fabric.c: the layout of node models on a fat-tree or rail-optimized fabric, the PXN relays,
 * and every GPU pair's route by the fabric's rules (platform_write.c has the model in words). */
#include "fabric.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"

#define PXN_EXTRA_LINKS 2 /* most links a PXN relay may add to a GPU's route out */

static double path_bottleneck(const node_model *m, const node_path *p)
{
    double bw = 0.0;
    for (int h = 0; h < p->n; h++)
        if (h == 0 || m->links[p->hop[h].link].GBps < bw)
            bw = m->links[p->hop[h].link].GBps;
    return bw;
}

double fabric_nic_capacity(const node_model *m, int r)
{
    double sum = 0.0;
    for (int g = 0; g < m->gpus; g++) {
        int link = m->gpu_nic[g].hop[m->gpu_nic[g].n - 1].link, seen = 0;
        if (r >= 0 && m->nic_of_gpu[g] != r)
            continue;
        for (int h = 0; h < g && !seen; h++)
            seen = m->gpu_nic[h].hop[m->gpu_nic[h].n - 1].link == link;
        if (!seen)
            sum += m->links[link].GBps;
    }
    return sum;
}

/* The PXN relay of GPU i towards rail r: the GPU on that rail with the widest path from i, then
 * the fewest links, then the lowest index; only if that path is no narrower than the relay's
 * route out and adds 1 to PXN_EXTRA_LINKS links to i's own route out. -1: none. */
static int choose_relay(const node_model *m, int i, int r)
{
    int best = -1, best_links = 0, own = m->gpu_nic[i].n;
    double best_bw = 0.0;
    for (int g = 0; g < m->gpus; g++) {
        if (m->nic_of_gpu[g] != r || g == i)
            continue;
        const node_path *p = &m->gpu_gpu[i * m->gpus + g];
        int links = p->n + m->gpu_nic[g].n;
        double bw = path_bottleneck(m, p);
        if (bw < path_bottleneck(m, &m->gpu_nic[g]) || links <= own ||
            links > own + PXN_EXTRA_LINKS)
            continue;
        if (best < 0 || bw > best_bw || (bw == best_bw && links < best_links)) {
            best = g;
            best_bw = bw;
            best_links = links;
        }
    }
    return best;
}

/* Whether any route of a one-unit platform crosses the spine: on a rail fabric, a GPU with no
 * relay towards a rail some node has (a fat tree's single leaf routes nothing through it). */
static int crosses_spine(const fabric *f)
{
    int *used = xcalloc((size_t)f->rails, sizeof *used), found = 0;
    for (int i = 0; f->kind == CLUSTER_FABRIC_RAIL && i < f->n_models; i++)
        for (int g = 0; g < f->models[i]->gpus; g++)
            used[f->models[i]->nic_of_gpu[g]] = 1;
    for (int i = 0; f->kind == CLUSTER_FABRIC_RAIL && i < f->n_models && !found; i++)
        for (int g = 0; g < f->models[i]->gpus && !found; g++)
            for (int r = 0; r < f->rails && !found; r++)
                found = used[r] && r != f->models[i]->nic_of_gpu[g] &&
                        f->relay[i][g * f->rails + r] < 0;
    free(used);
    return found;
}

/* Invariants of a node model the fabric relies on (node_model.h). */
static void assert_model(const node_model *m)
{
    assert(m->gpus >= 1 && m->nics >= 1);
    for (int g = 0; g < m->gpus; g++) {
        assert(m->gpu_nic[g].n >= 1 && m->gpu_nic[g].n <= NODE_MAX_HOPS);
        assert(m->nic_of_gpu[g] >= 0);
        for (int h = 0; h < m->gpus; h++)
            assert(g == h || (m->gpu_gpu[g * m->gpus + h].n >= 1 &&
                              m->gpu_gpu[g * m->gpus + h].n <= NODE_MAX_HOPS));
    }
    (void)m;
}

/* The platform's size against sim/base/limits.h: GPUs per node and GPUs in all (at most
 * PS_MAX_GPUS). */
static int check_size(const node_model *const *models, const int *group_model,
                      const int *group_nodes, int n_groups, ps_error *err)
{
    int64_t gpus = 0;
    for (int g = 0; g < n_groups; g++) {
        const node_model *m = models[group_model ? group_model[g] : g];
        int64_t n = group_nodes[g], k = m->gpus;
        if (k > PS_MAX_GPUS_PER_NODE)
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                                "--gpus-per-node: %s nodes have %lld GPUs, more than %d "
                                "(protosim's limit)",
                                m->kind, (long long)k, PS_MAX_GPUS_PER_NODE);
        gpus += n * k; /* n <= INT_MAX and k <= 72: no overflow */
    }
    if (gpus > PS_MAX_GPUS)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                            "--nodes: the cluster would have %lld GPUs, more than %d (protosim's "
                            "limit)",
                            (long long)gpus, PS_MAX_GPUS);
    return 0;
}

/* The platform's links (the nodes', then each unit's uplinks and spine port) against
 * PS_MAX_PLATFORM_LINKS; f's kind, units and rails set. */
static int check_link_count(const fabric *f, const int *group_model, const int *group_nodes,
                            int n_groups, ps_error *err)
{
    int64_t links = (int64_t)f->units * fabric_unit_links(f);
    for (int g = 0; g < n_groups; g++)
        links += (int64_t)group_nodes[g] * f->models[group_model ? group_model[g] : g]->n_links;
    if (links <= PS_MAX_PLATFORM_LINKS)
        return 0;
    return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                        "--nodes: the cluster would have %lld links, more than %d (protosim's "
                        "limit): fewer nodes, or fewer links per node",
                        (long long)links, PS_MAX_PLATFORM_LINKS);
}

int fabric_check_pairs(const node_model *const *models, const int *group_nodes, int n_groups,
                       ps_error *err)
{
    int64_t pairs = 0;
    for (int g = 0; g < n_groups; g++) /* fabric_init checked the GPU counts: no overflow */
        pairs += (int64_t)group_nodes[g] * models[g]->gpus * (models[g]->gpus - 1);
    if (pairs > PS_MAX_NODE_PAIRS)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                            "--nodes: the nodes would hold %lld ordered GPU pairs (a route each in "
                            "the platform), more than %d (protosim's limit): fewer nodes or GPUs "
                            "per node",
                            (long long)pairs, PS_MAX_NODE_PAIRS);
    return 0;
}

/* Options: 0, or a PS_EINPUT error naming the option. */
static int check_options(const fabric *f, ps_error *err)
{
    if ((int)f->kind < 0 || (int)f->kind >= cluster_fabric_names.count)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "fabric",
                            "--fabric: unknown fabric %d (known: fat-tree, rail)", (int)f->kind);
    if (f->over < 1)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "oversubscription",
                            "--oversubscription must be at least 1 (1 = non-blocking), not %g",
                            f->over);
    if (f->per_unit < 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "nodes_per_leaf",
                            "--nodes-per-leaf must be at least 1, not %d", f->per_unit);
    return 0;
}

/* The relays (rail), the rails each unit has and the fabric links' numbers and bandwidths: a
 * unit's uplinks carry its nodes' NICs / oversubscription, its spine port (rail) the sum of its
 * rails' uplinks. */
static void layout_links(fabric *f)
{
    int n = f->n_models;
    if (f->kind == CLUSTER_FABRIC_RAIL) {
        f->relay = xcalloc((size_t)n, sizeof *f->relay);
        for (int i = 0; i < n; i++) {
            const node_model *m = f->models[i];
            f->relay[i] = xcalloc((size_t)m->gpus * (size_t)f->rails, sizeof **f->relay);
            for (int g = 0; g < m->gpus; g++)
                for (int r = 0; r < f->rails; r++)
                    f->relay[i][g * f->rails + r] =
                        r == m->nic_of_gpu[g] ? -1 : choose_relay(m, g, r);
        }
    }
    f->link0 = xcalloc((size_t)f->nodes, sizeof *f->link0);
    f->rank0 = xcalloc((size_t)f->nodes, sizeof *f->rank0);
    for (int node = 0, link = 0, rank = 0; node < f->nodes; node++) {
        f->link0[node] = link;
        f->rank0[node] = rank;
        link += f->models[f->model_of[node]]->n_links;
        rank += f->models[f->model_of[node]]->gpus;
        f->up0 = link;
        f->gpus = rank;
    }
    f->node_of_rank = xcalloc((size_t)f->gpus, sizeof *f->node_of_rank);
    for (int node = 0; node < f->nodes; node++)
        for (int g = 0; g < f->models[f->model_of[node]]->gpus; g++)
            f->node_of_rank[f->rank0[node] + g] = node;
    int per_unit_links = fabric_unit_links(f);
    f->n_links = f->up0 + f->units * per_unit_links;
    f->up_GBps = xcalloc((size_t)(f->units * per_unit_links), sizeof *f->up_GBps);
    f->rail_used = xcalloc((size_t)f->units * (size_t)f->rails, sizeof *f->rail_used);
    for (int u = 0; u < f->units; u++) {
        int first = u * f->per_unit, last = first + f->per_unit;
        last = last < f->nodes ? last : f->nodes;
        int *used = &f->rail_used[u * f->rails];
        double *up = &f->up_GBps[u * per_unit_links];
        for (int node = first; node < last; node++) {
            const node_model *m = f->models[f->model_of[node]];
            for (int g = 0; g < m->gpus; g++)
                used[m->nic_of_gpu[g]] = 1;
        }
        if (f->kind == CLUSTER_FABRIC_FAT_TREE) {
            double cap = 0.0;
            for (int node = first; node < last; node++)
                cap += fabric_nic_capacity(f->models[f->model_of[node]], -1);
            up[0] = f->units > 1 ? cap / f->over : 0.0;
            continue;
        }
        double spine = 0.0;
        for (int r = 0; r < f->rails; r++) {
            double cap = 0.0;
            for (int node = first; node < last && used[r]; node++)
                cap += fabric_nic_capacity(f->models[f->model_of[node]], r);
            spine += cap / f->over;
            up[r] = used[r] ? cap / f->over : 0.0;
        }
        up[f->rails] = spine;
    }
}

int fabric_init(fabric *f, const node_model *const *models, int n_models, const int *group_model,
                const int *group_nodes, int n_groups, const cluster_gen_opts *opts, ps_error *err)
{
    memset(f, 0, sizeof *f);
    f->kind = opts ? opts->fabric : CLUSTER_FABRIC_FAT_TREE;
    f->over = opts && opts->oversubscription > 0 ? opts->oversubscription : 1.0;
    f->per_unit = opts ? opts->nodes_per_leaf : 0;
    int rc = check_size(models, group_model, group_nodes, n_groups, err);
    if (rc || (rc = check_options(f, err)))
        return rc;
    f->models = models;
    f->n_models = n_models;
    int max_nics = 1;
    for (int i = 0; i < n_groups; i++)
        f->nodes += group_nodes[i];
    for (int i = 0; i < n_models; i++) {
        assert_model(models[i]);
        max_nics = models[i]->nics > max_nics ? models[i]->nics : max_nics;
        for (int g = 0; g < models[i]->gpus; g++)
            if (models[i]->nic_of_gpu[g] + 1 > f->rails)
                f->rails = models[i]->nic_of_gpu[g] + 1;
    }
    if (f->per_unit == 0)
        f->per_unit =
            f->kind == CLUSTER_FABRIC_RAIL
                ? FABRIC_RAIL_UNIT_NODES
                : (FABRIC_LEAF_PORTS_DOWN / max_nics > 1 ? FABRIC_LEAF_PORTS_DOWN / max_nics : 1);
    f->units = (f->nodes + f->per_unit - 1) / f->per_unit;
    if ((rc = check_link_count(f, group_model, group_nodes, n_groups, err)))
        return rc;
    f->model_of = xcalloc((size_t)f->nodes, sizeof *f->model_of);
    for (int i = 0, node = 0; i < n_groups; i++)
        for (int j = 0; j < group_nodes[i]; j++)
            f->model_of[node++] = group_model ? group_model[i] : i;
    layout_links(f);
    if (f->units == 1 && f->over > 1 && !crosses_spine(f))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "oversubscription",
                            "--oversubscription %g: all %d nodes are on one %s (--nodes-per-leaf "
                            "%d), so no traffic crosses an uplink: give more nodes or fewer per "
                            "%s",
                            f->over, f->nodes,
                            f->kind == CLUSTER_FABRIC_RAIL ? "scalable unit" : "leaf", f->per_unit,
                            f->kind == CLUSTER_FABRIC_RAIL ? "unit" : "leaf");
    return 0;
}

void fabric_free(fabric *f)
{
    for (int i = 0; f->relay && i < f->n_models; i++)
        free(f->relay[i]);
    free(f->relay);
    free(f->model_of);
    free(f->rank0);
    free(f->node_of_rank);
    free(f->rail_used);
    free(f->link0);
    free(f->up_GBps);
    memset(f, 0, sizeof *f);
}

/* ---- routes ---- */

/* Node `node`'s path p into out at *n, forwards or reversed (directions swapped). */
static void add_path(const fabric *f, int node, const node_path *p, int reverse, fabric_hop *out,
                     int *n)
{
    for (int h = 0; h < p->n; h++) {
        const node_hop *hop = &p->hop[reverse ? p->n - 1 - h : h];
        out[*n].link = f->link0[node] + hop->link;
        out[(*n)++].up = reverse ? !hop->up : hop->up;
    }
}

static void add_link(fabric_hop *out, int *n, int link, int up)
{
    out[*n].link = link;
    out[(*n)++].up = up;
}

int fabric_unit_links(const fabric *f)
{
    return f->kind == CLUSTER_FABRIC_RAIL ? f->rails + 1 : 1;
}

int fabric_unit_link(const fabric *f, int u, int k)
{
    assert(u >= 0 && u < f->units && k >= 0 && k < fabric_unit_links(f));
    return f->up0 + u * fabric_unit_links(f) + k;
}

int fabric_route(const fabric *f, int a, int b, fabric_hop *out)
{
    assert(a != b && a >= 0 && b >= 0 && a < f->gpus && b < f->gpus);
    int na = f->node_of_rank[a], nb = f->node_of_rank[b], n = 0;
    int ga = a - f->rank0[na], gb = b - f->rank0[nb];
    const node_model *ma = f->models[f->model_of[na]], *mb = f->models[f->model_of[nb]];
    if (na == nb) { /* j -> i is i -> j reversed, as a symmetrical route */
        if (ga < gb)
            add_path(f, na, &ma->gpu_gpu[ga * ma->gpus + gb], 0, out, &n);
        else
            add_path(f, na, &ma->gpu_gpu[gb * ma->gpus + ga], 1, out, &n);
        return n;
    }
    int ua = na / f->per_unit, ub = nb / f->per_unit;
    if (f->kind == CLUSTER_FABRIC_FAT_TREE) {
        add_path(f, na, &ma->gpu_nic[ga], 0, out, &n);
        if (ua != ub) {
            add_link(out, &n, fabric_unit_link(f, ua, 0), 1);
            add_link(out, &n, fabric_unit_link(f, ub, 0), 0);
        }
        add_path(f, nb, &mb->gpu_nic[gb], 1, out, &n);
        return n;
    }
    int ra = ma->nic_of_gpu[ga], rb = mb->nic_of_gpu[gb];
    int x = ua == ub && ra != rb ? f->relay[f->model_of[na]][ga * f->rails + rb] : -1;
    if (x >= 0) { /* PXN: over NVLink to the relay on rail rb, out through its NIC */
        add_path(f, na, &ma->gpu_gpu[ga * ma->gpus + x], 0, out, &n);
        add_path(f, na, &ma->gpu_nic[x], 0, out, &n);
    } else {
        add_path(f, na, &ma->gpu_nic[ga], 0, out, &n);
    }
    if (x < 0 && (ra != rb || ua != ub)) { /* up rail ra, through the spine, down rail rb */
        add_link(out, &n, fabric_unit_link(f, ua, ra), 1);
        add_link(out, &n, fabric_unit_link(f, ua, f->rails), 1);
        if (ua != ub)
            add_link(out, &n, fabric_unit_link(f, ub, f->rails), 0);
        add_link(out, &n, fabric_unit_link(f, ub, rb), 0);
    }
    add_path(f, nb, &mb->gpu_nic[gb], 1, out, &n);
    assert(n <= FABRIC_MAX_HOPS);
    return n;
}

/* ---- links ---- */

/* The node holding global link `link` (< up0), by binary search of link0. */
static int node_of_link(const fabric *f, int link)
{
    int lo = 0, hi = f->nodes - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (f->link0[mid] <= link)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int fabric_link_exists(const fabric *f, int link)
{
    assert(link >= 0 && link < f->n_links);
    if (link < f->up0)
        return 1;
    if (f->kind == CLUSTER_FABRIC_FAT_TREE)
        return f->units > 1;
    int u = (link - f->up0) / fabric_unit_links(f), r = (link - f->up0) % fabric_unit_links(f);
    return r == f->rails || f->rail_used[u * f->rails + r];
}

void fabric_link_name(const fabric *f, int link, char *buf, size_t cap)
{
    if (link < f->up0) {
        int node = node_of_link(f, link);
        const node_model *m = f->models[f->model_of[node]];
        snprintf(buf, cap, "n%d%s", node, m->links[link - f->link0[node]].id);
    } else if (f->kind == CLUSTER_FABRIC_FAT_TREE) {
        snprintf(buf, cap, "leaf%d_up", link - f->up0);
    } else {
        int u = (link - f->up0) / fabric_unit_links(f), r = (link - f->up0) % fabric_unit_links(f);
        if (r == f->rails)
            snprintf(buf, cap, "su%d_spine", u);
        else
            snprintf(buf, cap, "su%d_rail%d_up", u, r);
    }
}

double fabric_link_GBps(const fabric *f, int link)
{
    if (link >= f->up0)
        return f->up_GBps[link - f->up0];
    int node = node_of_link(f, link);
    return f->models[f->model_of[node]]->links[link - f->link0[node]].GBps;
}

double fabric_link_latency(const fabric *f, int link)
{
    if (link >= f->up0)
        return 0.0;
    int node = node_of_link(f, link);
    return f->models[f->model_of[node]]->links[link - f->link0[node]].latency_s;
}
