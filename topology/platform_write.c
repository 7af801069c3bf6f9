/* platform_write.c: the one writer of SimGrid platforms: node models (node_model.h) joined by a
 * fat-tree or rail-optimized fabric. Used by the DGX templates (generate.c) and the hwloc import.
 *
 * Shape (every link SPLITDUPLEX: each direction has the full bandwidth):
 *
 *   <zone id="cluster" routing="DijkstraCache">    (Full when there is one unit)
 *     <zone id="links" routing="None">             every link: the nodes' n0<id>, the uplinks
 *     <zone id="leaf0" routing="DijkstraCache">    a unit: one leaf switch (fat tree), or one
 *       hosts n0g0.. (props gpu, rank, node)       scalable unit "su0" of a rail fabric
 *       leaf router(s)
 *       <route> GPU -> leaf: the GPU's route out of its node (gpu_nic), symmetrical
 *       <bypassRoute> GPU -> GPU of the same node: the model's gpu_gpu route
 *     <zone id="spine" routing="Full"> <router id="spine_sw"/>
 *     <zoneRoute src="leaf0" dst="spine" gw_src="leaf0_sw" gw_dst="spine_sw"> leaf0_up
 *
 * Why this shape: SimGrid 3.32 routes between zones through ONE gateway per (source zone,
 * destination zone) pair, so a zone per node cannot send GPU i's traffic out through rail i and
 * GPU j's through rail j to the same destination node; and a Full top zone needs one zoneRoute
 * per node pair (2,048 DGX H100 nodes wrote 415 MB and took 39 s to load). Here the GPUs of a
 * unit sit directly in a graph zone: DijkstraCache computes a source's shortest paths once (about
 * 0.1-0.4 ms for a 32-node rail unit of 266 vertices) and keeps them (8 bytes per vertex of the
 * unit per source), so later queries walk the cached tree (1-6 us). Routes inside a node are
 * bypass routes (a map lookup; checked before the graph), so the graph holds no GPU-GPU edge and
 * cannot send inter-node traffic through a neighbour's NVLink on its own. Above the units, a
 * DijkstraCache zone over the units and a spine zone: 2 edges per unit. The file grows linearly
 * with the node count (docs/design-notes.md has the sizes and times). Two SimGrid 3.32 facts the
 * shape relies on: Dijkstra costs a path by its number of links (not bandwidth or latency), and
 * a graph zone is only correct when every vertex is reachable from every other (an unreachable
 * vertex with out-edges corrupts the search); both fabrics are strongly connected by design.
 * SimGrid also forbids routes without links and returns a graph route's links in reverse order
 * (the set, and so every bandwidth and latency, is exact).
 *
 * Fat tree (default): a unit is one leaf switch with K nodes (--nodes-per-leaf; default 32 / NICs
 * per node: a 64-port leaf, as NVIDIA Quantum-2's, with half its ports facing the nodes and half
 * the spine, i.e. non-blocking). GPU -> GPU of another node on the leaf: the source's route out,
 * then the destination's route in (the leaf is a non-blocking switch: no link), exact. Across
 * leaves the route also crosses both leaves' uplink leafL_up: the leaf's nodes' NIC bandwidth /
 * oversubscription. Spines (and any tier above them) are one non-blocking switch. With X = 1 an
 * uplink carries at most what its nodes' NICs send, so it never binds.
 *
 * Rail-optimized (--fabric rail, as DGX SuperPOD): a unit is a scalable unit of K nodes (default
 * 32). NIC r of every node of the unit is on leaf suU_railR (the rail of a GPU is its
 * nic_of_gpu); each leaf has its uplink suU_railR_up (its NICs' bandwidth / oversubscription).
 * - Rail-aligned traffic (GPU i to a GPU on the same rail of another node of the unit): its NIC
 *   link out and the destination's NIC link in, nothing else. Exact.
 * - Cross-rail traffic inside a unit: NCCL's PXN. The data first moves inside the source node to
 *   the relay, a GPU on the destination's rail, then leaves through the relay's NIC: route =
 *   gpu_gpu(source, relay) + gpu_nic(relay) + the destination's route in. The relay is the GPU
 *   on that rail with the widest path from the source (then fewer links, then the lower index),
 *   used only if that path is no narrower than the relay's route out (NVLink on every DGX; PCIe
 *   15.75 GB/s against an EDR NIC's 12.5 GB/s on the DGX-1) and adds at most 2 links to the
 *   source's own route out (so that SimGrid's link-counting search prefers it unambiguously).
 *   Without such a relay, the traffic leaves on its own rail, goes up to the spine and down the
 *   destination's rail (railup UP, railup DOWN: what a rail fabric does without PXN).
 * - Across units: out on the source GPU's own rail, through the spine, in on the destination's
 *   rail: both rails' uplinks. The spine joins every leaf, so the network needs no PXN there.
 *   NCCL's PXN would still move the data to the GPU on the destination's rail first and send it
 *   through that GPU's NIC and rail uplink; here the source GPU's own NIC and rail uplink carry
 *   it (approximation: the route to another unit is chosen per zone pair, not per GPU; the
 *   bandwidths are the same on a uniform fabric, the NVLink hop's latency is missing).
 * - SimGrid forbids routes without links: the hop from a unit to the spine is charged on its
 *   spine port suU_spine (the sum of its rails' uplinks, so it never binds), and so is the
 *   turn from the spine back into the same unit of cross-rail traffic without PXN.
 * The writer checks that no path through a third GPU ties with or beats a designed route
 * (possible only with unusual node models, e.g. from hwloc) and refuses such a platform.
 */
#include "cluster.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"

static const char *const fabric_table[] = {"fat-tree", "rail"};
const enum_names cluster_fabric_names = ENUM_NAMES(fabric_table);

#define LEAF_PORTS_DOWN 32 /* fat tree: a 64-port leaf, half its ports facing the nodes */
#define RAIL_UNIT_NODES 32 /* rail: a DGX SuperPOD scalable unit */
#define PXN_EXTRA_LINKS 2  /* most links a PXN relay may add to a GPU's route out */
#define HAIRPIN_LINKS   3  /* rail up, spine port, rail down: cross-rail through the spine */

/* The layout: which model each node has, how nodes group into units, each model's relays. */
typedef struct fabric {
    cluster_fabric kind;
    int nodes, per_unit, units, rails;
    double over;
    const node_model *const *models;
    int n_models;
    int *model_of;  /* [nodes]: index into models */
    int **relay;    /* rail: [model][gpu * rails + rail]: PXN relay GPU, -1 none (or own rail) */
    int *rail_used; /* rail: [rails], scratch: rails present in the unit being written */
} fabric;

static void write_link(FILE *out, const char *id, double GBps, double latency_s)
{
    fprintf(out,
            "    <link id=\"%s\" bandwidth=\"%.10gGBps\" latency=\"%.10gus\" "
            "sharing_policy=\"SPLITDUPLEX\"/>\n",
            id, GBps, latency_s * 1e6);
}

static void write_hops(FILE *out, const node_model *m, int node, const node_path *p, int reverse)
{
    for (int h = 0; h < p->n; h++) {
        const node_hop *hop = &p->hop[reverse ? p->n - 1 - h : h];
        int up = reverse ? !hop->up : hop->up;
        fprintf(out, "<link_ctn id=\"n%d%s\" direction=\"%s\"/>", node, m->links[hop->link].id,
                up ? "UP" : "DOWN");
    }
}

static double path_bottleneck(const node_model *m, const node_path *p)
{
    double bw = 0.0;
    for (int h = 0; h < p->n; h++)
        if (h == 0 || m->links[p->hop[h].link].GBps < bw)
            bw = m->links[p->hop[h].link].GBps;
    return bw;
}

/* The NIC links (last hop of each GPU's route out) on rail r, each counted once, in GB/s; every
 * rail for r < 0. */
static double nic_capacity(const node_model *m, int r)
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

/* The PXN relay of GPU i towards rail r (header comment), or -1. */
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

/* Links of GPU i's route to rail r's leaf: its own route out, or through its relay; -1 none. */
static int links_to_rail(const fabric *f, int model, int i, int r)
{
    const node_model *m = f->models[model];
    if (m->nic_of_gpu[i] == r)
        return m->gpu_nic[i].n;
    int g = f->relay[model][i * f->rails + r];
    return g < 0 ? -1 : m->gpu_gpu[i * m->gpus + g].n + m->gpu_nic[g].n;
}

/* A cross-rail route without PXN goes over the spine: n_i + HAIRPIN_LINKS + n_j links. A path
 * entering a third GPU h on the source's rail and leaving through h's relay costs n_i + n_h +
 * x_h + n_j: it must cost more, or SimGrid's search may take it. (A designed PXN route, at most
 * n_i + PXN_EXTRA_LINKS + n_j, is always shorter than both.) */
static int check_unit_routes(const fabric *f, const int *models_in, int n_in, ps_error *err)
{
    for (int a = 0; a < n_in; a++) {
        const node_model *m = f->models[models_in[a]];
        for (int i = 0; i < m->gpus; i++)
            for (int r = 0; r < f->rails; r++) {
                if (!f->rail_used[r] || m->nic_of_gpu[i] == r ||
                    links_to_rail(f, models_in[a], i, r) >= 0)
                    continue;
                for (int c = 0; c < n_in; c++) {
                    const node_model *mc = f->models[models_in[c]];
                    for (int h = 0; h < mc->gpus; h++) {
                        int x = links_to_rail(f, models_in[c], h, r);
                        if (mc->nic_of_gpu[h] != m->nic_of_gpu[i] || x < 0 ||
                            mc->gpu_nic[h].n + x > HAIRPIN_LINKS)
                            continue;
                        return ps_error_set(
                            err, PS_EINPUT, "", 0, 0, "fabric",
                            "--fabric rail: GPU %d of %s reaches rail %d only over the spine "
                            "(%d links), but the route through GPU %d of %s and its relay has "
                            "no more links, and SimGrid's routing counts links: it could pick "
                            "either (use --fabric fat-tree)",
                            i, m->kind, r, m->gpu_nic[i].n + HAIRPIN_LINKS, h, mc->kind);
                    }
                }
            }
    }
    return 0;
}

/* Node `node`'s hosts (model m, GPUs ranked from rank0). */
static void write_node_hosts(FILE *out, const node_model *m, int node, int rank0)
{
    for (int g = 0; g < m->gpus; g++) {
        fprintf(out, "    <host id=\"n%dg%d\" speed=\"%.10gTf\">\n", node, g, m->flops / 1e12);
        fprintf(out, "      <prop id=\"gpu\" value=\"%s\"/>\n", m->gpu);
        fprintf(out, "      <prop id=\"rank\" value=\"%d\"/>\n", rank0 + g);
        fprintf(out, "      <prop id=\"node\" value=\"%d\"/>\n", node);
        fprintf(out, "    </host>\n");
    }
}

/* Node `node`'s links. */
static void write_node_links(FILE *out, const node_model *m, int node)
{
    char id[64];
    for (int l = 0; l < m->n_links; l++) {
        snprintf(id, sizeof id, "n%d%s", node, m->links[l].id);
        write_link(out, id, m->links[l].GBps, m->links[l].latency_s);
    }
}

/* The leaf router GPU g of node `node` sends through in unit u. */
static void leaf_name(const fabric *f, const node_model *m, int u, int g, char *buf, size_t cap)
{
    if (f->kind == CLUSTER_FABRIC_RAIL)
        snprintf(buf, cap, "su%d_rail%d", u, m->nic_of_gpu[g]);
    else
        snprintf(buf, cap, "leaf%d_sw", u);
}

/* Node `node`'s routes: to its leaf (symmetrical), PXN edges (rail), and GPU-GPU bypass routes
 * (j -> i is i -> j reversed, as SimGrid reverses a symmetrical route). */
static void write_node_routes(FILE *out, const fabric *f, int node, int u)
{
    const node_model *m = f->models[f->model_of[node]];
    const int *relay = f->kind == CLUSTER_FABRIC_RAIL ? f->relay[f->model_of[node]] : NULL;
    char leaf[48];
    for (int g = 0; g < m->gpus; g++) {
        leaf_name(f, m, u, g, leaf, sizeof leaf);
        fprintf(out, "    <route src=\"n%dg%d\" dst=\"%s\">", node, g, leaf);
        write_hops(out, m, node, &m->gpu_nic[g], 0);
        fprintf(out, "</route>\n");
        for (int r = 0; relay && r < f->rails; r++) {
            int x = relay[g * f->rails + r];
            if (x < 0)
                continue;
            fprintf(out, "    <route src=\"n%dg%d\" dst=\"su%d_rail%d\" symmetrical=\"NO\">", node,
                    g, u, r);
            write_hops(out, m, node, &m->gpu_gpu[g * m->gpus + x], 0);
            write_hops(out, m, node, &m->gpu_nic[x], 0);
            fprintf(out, "</route>\n");
        }
    }
    for (int g = 0; g < m->gpus; g++)
        for (int h = 0; h < m->gpus; h++) {
            if (g == h)
                continue;
            fprintf(out, "    <bypassRoute src=\"n%dg%d\" dst=\"n%dg%d\">", node, g, node, h);
            if (g < h)
                write_hops(out, m, node, &m->gpu_gpu[g * m->gpus + h], 0);
            else
                write_hops(out, m, node, &m->gpu_gpu[h * m->gpus + g], 1);
            fprintf(out, "</bypassRoute>\n");
        }
}

/* Unit u's uplinks (pass 0), routers (pass 1) and their routes (pass 2). Needs f->rail_used
 * filled for the unit. */
static void write_unit_switches(FILE *out, const fabric *f, int u, int first, int last, int pass)
{
    char id[64];
    if (f->kind == CLUSTER_FABRIC_FAT_TREE) {
        double cap = 0.0;
        for (int node = first; node < last; node++)
            cap += nic_capacity(f->models[f->model_of[node]], -1);
        snprintf(id, sizeof id, "leaf%d_up", u);
        if (pass == 0 && f->units > 1)
            write_link(out, id, cap / f->over, 0.0);
        else if (pass == 1)
            fprintf(out, "    <router id=\"leaf%d_sw\"/>\n", u);
        return;
    }
    double spine = 0.0;
    for (int r = 0; r < f->rails; r++) {
        double cap = 0.0;
        for (int node = first; node < last && f->rail_used[r]; node++)
            cap += nic_capacity(f->models[f->model_of[node]], r);
        spine += cap / f->over;
        snprintf(id, sizeof id, "su%d_rail%d_up", u, r);
        if (!f->rail_used[r])
            continue;
        if (pass == 0) {
            write_link(out, id, cap / f->over, 0.0);
        } else if (pass == 1) {
            fprintf(out, "    <router id=\"su%d_rail%d\"/>\n", u, r);
        } else {
            fprintf(out,
                    "    <route src=\"su%d_rail%d\" dst=\"su%d_out\" symmetrical=\"NO\"><link_ctn "
                    "id=\"%s\" direction=\"UP\"/></route>\n",
                    u, r, u, id);
            fprintf(out,
                    "    <route src=\"su%d_in\" dst=\"su%d_rail%d\" symmetrical=\"NO\"><link_ctn "
                    "id=\"%s\" direction=\"DOWN\"/></route>\n",
                    u, u, r, id);
        }
    }
    snprintf(id, sizeof id, "su%d_spine", u);
    if (pass == 0)
        write_link(out, id, spine, 0.0);
    else if (pass == 1)
        fprintf(out, "    <router id=\"su%d_out\"/>\n    <router id=\"su%d_in\"/>\n", u, u);
    else
        fprintf(out,
                "    <route src=\"su%d_out\" dst=\"su%d_in\" symmetrical=\"NO\"><link_ctn "
                "id=\"%s\" direction=\"UP\"/></route>\n",
                u, u, id);
}

/* The models of nodes first..last-1 (distinct, into in[]), and their rails into f->rail_used. */
static int unit_models(fabric *f, int first, int last, int *in)
{
    int n = 0;
    for (int r = 0; r < f->rails; r++)
        f->rail_used[r] = 0;
    for (int node = first; node < last; node++) {
        int k = f->model_of[node], seen = 0;
        for (int j = 0; j < n && !seen; j++)
            seen = in[j] == k;
        if (seen)
            continue;
        in[n++] = k;
        for (int g = 0; f->kind == CLUSTER_FABRIC_RAIL && g < f->models[k]->gpus; g++)
            f->rail_used[f->models[k]->nic_of_gpu[g]] = 1;
    }
    return n;
}

/* Unit u: its zone with its nodes' hosts, links and routes, its switches and uplinks. */
static int write_unit(FILE *out, fabric *f, int u, const int *rank0, ps_error *err)
{
    int first = u * f->per_unit, last = first + f->per_unit;
    if (last > f->nodes)
        last = f->nodes;
    int *in = xcalloc((size_t)f->n_models, sizeof *in);
    int n_in = unit_models(f, first, last, in);
    int rc = f->kind == CLUSTER_FABRIC_RAIL ? check_unit_routes(f, in, n_in, err) : 0;
    free(in);
    if (rc)
        return rc;
    fprintf(out, "  <zone id=\"%s%d\" routing=\"DijkstraCache\">\n",
            f->kind == CLUSTER_FABRIC_RAIL ? "su" : "leaf", u);
    for (int node = first; node < last; node++)
        write_node_hosts(out, f->models[f->model_of[node]], node, rank0[node]);
    write_unit_switches(out, f, u, first, last, 1);
    for (int node = first; node < last; node++)
        write_node_routes(out, f, node, u);
    write_unit_switches(out, f, u, first, last, 2);
    fprintf(out, "  </zone>\n");
    return 0;
}

/* Every link, in one zone written first: SimGrid finds a link a route names by searching the
 * zone tree from the top, child by child, so links spread over many zones cost a walk over them
 * (a 2,048-node fat tree loaded in 12 s instead of 3). */
static void write_links(FILE *out, fabric *f, int *in)
{
    fprintf(out, "  <zone id=\"links\" routing=\"None\">\n");
    for (int u = 0; u < f->units; u++) {
        int first = u * f->per_unit,
            last = first + f->per_unit < f->nodes ? first + f->per_unit : f->nodes;
        unit_models(f, first, last, in);
        for (int node = first; node < last; node++)
            write_node_links(out, f->models[f->model_of[node]], node);
        write_unit_switches(out, f, u, first, last, 0);
    }
    fprintf(out, "  </zone>\n");
}

/* The spine zone and the routes between it and the units (more than one unit). */
static void write_spine(FILE *out, const fabric *f)
{
    fprintf(out, "  <zone id=\"spine\" routing=\"Full\">\n    <router id=\"spine_sw\"/>\n"
                 "  </zone>\n");
    for (int u = 0; u < f->units; u++)
        if (f->kind == CLUSTER_FABRIC_RAIL) {
            fprintf(out,
                    "  <zoneRoute src=\"su%d\" dst=\"spine\" gw_src=\"su%d_out\" "
                    "gw_dst=\"spine_sw\" symmetrical=\"NO\"><link_ctn id=\"su%d_spine\" "
                    "direction=\"UP\"/></zoneRoute>\n",
                    u, u, u);
            fprintf(out,
                    "  <zoneRoute src=\"spine\" dst=\"su%d\" gw_src=\"spine_sw\" "
                    "gw_dst=\"su%d_in\" symmetrical=\"NO\"><link_ctn id=\"su%d_spine\" "
                    "direction=\"DOWN\"/></zoneRoute>\n",
                    u, u, u);
        } else {
            fprintf(out,
                    "  <zoneRoute src=\"leaf%d\" dst=\"spine\" gw_src=\"leaf%d_sw\" "
                    "gw_dst=\"spine_sw\"><link_ctn id=\"leaf%d_up\" direction=\"UP\"/>"
                    "</zoneRoute>\n",
                    u, u, u);
        }
}

/* The XML prologue and the comment saying what was generated. */
static void write_header(FILE *out, const fabric *f, const int *group_nodes, int n)
{
    const node_model *const *models = f->models;
    int mixed = 0;
    for (int i = 1; i < n; i++)
        mixed |= strcmp(models[i]->kind, models[0]->kind) || models[i]->gpus != models[0]->gpus ||
                 models[i]->nics != models[0]->nics || models[i]->nic_GBps != models[0]->nic_GBps;
    fprintf(out, "<?xml version='1.0'?>\n");
    fprintf(out, "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    if (!mixed) {
        const node_model *m = models[0];
        fprintf(
            out,
            "<!-- Generated by protosim: %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per node;\n",
            m->kind, f->nodes, f->nodes > 1 ? "s" : "", m->gpus, m->gpu, m->nics,
            m->nics > 1 ? "s" : "", m->nic_GBps * 8);
    } else {
        fprintf(out, "<!-- Generated by protosim: mixed cluster of %d nodes:\n", f->nodes);
        for (int i = 0; i < n; i++)
            fprintf(out, "     %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per node;\n",
                    models[i]->kind, group_nodes[i], group_nodes[i] > 1 ? "s" : "", models[i]->gpus,
                    models[i]->gpu, models[i]->nics, models[i]->nics > 1 ? "s" : "",
                    models[i]->nic_GBps * 8);
    }
    fprintf(out,
            "     %s fabric, %d node%s per %s, oversubscription %g. Model: see topology/%s\n"
            "     and topology/platform_write.c. -->\n",
            enum_name(cluster_fabric_names, f->kind), f->per_unit, f->per_unit > 1 ? "s" : "",
            f->kind == CLUSTER_FABRIC_RAIL ? "scalable unit" : "leaf", f->over,
            strncmp(models[0]->kind, "hwloc:", 6) ? "generate.c" : "hwloc_import.c");
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

/* Invariants of a node model the writer relies on (node_model.h). */
static void assert_model(const node_model *m)
{
    assert(m->gpus >= 1 && m->nics >= 1);
    for (int g = 0; g < m->gpus; g++) {
        assert(m->gpu_nic[g].n >= 1 && m->gpu_nic[g].n <= NODE_MAX_HOPS);
        assert(m->nic_of_gpu[g] >= 0);
        for (int h = 0; h < m->gpus; h++)
            assert(g == h || m->gpu_gpu[g * m->gpus + h].n >= 1);
    }
    (void)m;
}

/* The fabric's options and layout; 0, or a PS_EINPUT error naming the option. */
static int fabric_init(fabric *f, const node_model *const *models, const int *group_nodes, int n,
                       const cluster_gen_opts *opts, ps_error *err)
{
    memset(f, 0, sizeof *f);
    f->kind = opts ? opts->fabric : CLUSTER_FABRIC_FAT_TREE;
    f->over = opts && opts->oversubscription > 0 ? opts->oversubscription : 1.0;
    f->per_unit = opts ? opts->nodes_per_leaf : 0;
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
    f->models = models;
    f->n_models = n;
    int max_nics = 1;
    for (int i = 0; i < n; i++) {
        assert_model(models[i]);
        f->nodes += group_nodes[i];
        max_nics = models[i]->nics > max_nics ? models[i]->nics : max_nics;
        for (int g = 0; g < models[i]->gpus; g++)
            if (models[i]->nic_of_gpu[g] + 1 > f->rails)
                f->rails = models[i]->nic_of_gpu[g] + 1;
    }
    if (f->per_unit == 0)
        f->per_unit = f->kind == CLUSTER_FABRIC_RAIL
                          ? RAIL_UNIT_NODES
                          : (LEAF_PORTS_DOWN / max_nics > 1 ? LEAF_PORTS_DOWN / max_nics : 1);
    f->units = (f->nodes + f->per_unit - 1) / f->per_unit;
    f->model_of = xcalloc((size_t)f->nodes, sizeof *f->model_of);
    for (int i = 0, node = 0; i < n; i++)
        for (int j = 0; j < group_nodes[i]; j++)
            f->model_of[node++] = i;
    f->rail_used = xcalloc((size_t)f->rails, sizeof *f->rail_used);
    if (f->kind == CLUSTER_FABRIC_RAIL) {
        f->relay = xcalloc((size_t)n, sizeof *f->relay);
        for (int i = 0; i < n; i++) {
            const node_model *m = models[i];
            f->relay[i] = xcalloc((size_t)m->gpus * (size_t)f->rails, sizeof **f->relay);
            for (int g = 0; g < m->gpus; g++)
                for (int r = 0; r < f->rails; r++)
                    f->relay[i][g * f->rails + r] =
                        r == m->nic_of_gpu[g] ? -1 : choose_relay(m, g, r);
        }
    }
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

static void fabric_free(fabric *f)
{
    for (int i = 0; f->relay && i < f->n_models; i++)
        free(f->relay[i]);
    free(f->relay);
    free(f->model_of);
    free(f->rail_used);
}

/* The platform's size against sim/base/limits.h, before anything is written: GPUs per node,
 * GPUs in all (at most PS_MAX_GPUS) and the GPU pairs inside nodes (a route each). */
static int check_platform_size(const node_model *const *models, const int *group_nodes,
                               int n_groups, ps_error *err)
{
    int64_t gpus = 0, pairs = 0;
    for (int g = 0; g < n_groups; g++) {
        int64_t n = group_nodes[g], k = models[g]->gpus;
        if (k > PS_MAX_GPUS_PER_NODE)
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                                "--gpus-per-node: %s nodes have %lld GPUs, more than %d "
                                "(protosim's limit)",
                                models[g]->kind, (long long)k, PS_MAX_GPUS_PER_NODE);
        gpus += n * k; /* n <= INT_MAX and k <= 72: no overflow */
        pairs += n * k * (k - 1);
    }
    if (gpus > PS_MAX_GPUS)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                            "--nodes: the cluster would have %lld GPUs, more than %d (protosim's "
                            "limit)",
                            (long long)gpus, PS_MAX_GPUS);
    if (pairs > PS_MAX_NODE_PAIRS)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                            "--nodes: the nodes would hold %lld ordered GPU pairs (a route each in "
                            "the platform), more than %d (protosim's limit): fewer nodes or GPUs "
                            "per node",
                            (long long)pairs, PS_MAX_NODE_PAIRS);
    return 0;
}

int cluster_write_platform(const node_model *const *models, const int *group_nodes, int n_groups,
                           const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    fabric f;
    int rc = check_platform_size(models, group_nodes, n_groups, err);
    if (rc)
        return rc;
    rc = fabric_init(&f, models, group_nodes, n_groups, opts, err);
    if (rc) {
        fabric_free(&f);
        return rc;
    }
    int *rank0 = xcalloc((size_t)f.nodes, sizeof *rank0);
    for (int node = 1; node < f.nodes; node++)
        rank0[node] = rank0[node - 1] + models[f.model_of[node - 1]]->gpus;
    write_header(out, &f, group_nodes, n_groups);
    fprintf(out, "<platform version=\"4.1\">\n");
    fprintf(out, "<zone id=\"cluster\" routing=\"%s\">\n", f.units > 1 ? "DijkstraCache" : "Full");
    int *in = xcalloc((size_t)n_groups, sizeof *in);
    write_links(out, &f, in);
    free(in);
    for (int u = 0; u < f.units && !rc; u++)
        rc = write_unit(out, &f, u, rank0, err);
    if (!rc && f.units > 1)
        write_spine(out, &f);
    fprintf(out, "</zone>\n</platform>\n");
    free(rank0);
    fabric_free(&f);
    if (!rc && ferror(out))
        rc = ps_error_set(err, PS_EINTERNAL, "", 0, 0, "", "cannot write the platform");
    return rc;
}
