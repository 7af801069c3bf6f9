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
#include "fabric.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"

static const char *const fabric_table[] = {"fat-tree", "rail"};
const enum_names cluster_fabric_names = ENUM_NAMES(fabric_table);

#define HAIRPIN_LINKS 3 /* rail up, spine port, rail down: cross-rail through the spine */

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
static int check_unit_routes(const fabric *f, int u, const int *models_in, int n_in, ps_error *err)
{
    const int *rail_used = &f->rail_used[u * f->rails];
    for (int a = 0; a < n_in; a++) {
        const node_model *m = f->models[models_in[a]];
        for (int i = 0; i < m->gpus; i++)
            for (int r = 0; r < f->rails; r++) {
                if (!rail_used[r] || m->nic_of_gpu[i] == r ||
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

/* Unit u's uplinks (pass 0), routers (pass 1) and their routes (pass 2). */
static void write_unit_switches(FILE *out, const fabric *f, int u, int pass)
{
    char id[64];
    if (f->kind == CLUSTER_FABRIC_FAT_TREE) {
        int link = fabric_unit_link(f, u, 0);
        fabric_link_name(f, link, id, sizeof id);
        if (pass == 0 && fabric_link_exists(f, link))
            write_link(out, id, fabric_link_GBps(f, link), 0.0);
        else if (pass == 1)
            fprintf(out, "    <router id=\"leaf%d_sw\"/>\n", u);
        return;
    }
    for (int r = 0; r < f->rails; r++) {
        int link = fabric_unit_link(f, u, r);
        if (!fabric_link_exists(f, link))
            continue;
        fabric_link_name(f, link, id, sizeof id);
        if (pass == 0) {
            write_link(out, id, fabric_link_GBps(f, link), 0.0);
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
    int spine = fabric_unit_link(f, u, f->rails);
    fabric_link_name(f, spine, id, sizeof id);
    if (pass == 0)
        write_link(out, id, fabric_link_GBps(f, spine), 0.0);
    else if (pass == 1)
        fprintf(out, "    <router id=\"su%d_out\"/>\n    <router id=\"su%d_in\"/>\n", u, u);
    else
        fprintf(out,
                "    <route src=\"su%d_out\" dst=\"su%d_in\" symmetrical=\"NO\"><link_ctn "
                "id=\"%s\" direction=\"UP\"/></route>\n",
                u, u, id);
}

/* The distinct models of nodes first..last-1 into in[]; returns their number. */
static int unit_models(const fabric *f, int first, int last, int *in)
{
    int n = 0;
    for (int node = first; node < last; node++) {
        int k = f->model_of[node], seen = 0;
        for (int j = 0; j < n && !seen; j++)
            seen = in[j] == k;
        if (!seen)
            in[n++] = k;
    }
    return n;
}

/* Unit u: its zone with its nodes' hosts, links and routes, its switches and uplinks. */
static int write_unit(FILE *out, const fabric *f, int u, ps_error *err)
{
    int first = u * f->per_unit, last = first + f->per_unit;
    if (last > f->nodes)
        last = f->nodes;
    int *in = xcalloc((size_t)f->n_models, sizeof *in);
    int n_in = unit_models(f, first, last, in);
    int rc = f->kind == CLUSTER_FABRIC_RAIL ? check_unit_routes(f, u, in, n_in, err) : 0;
    free(in);
    if (rc)
        return rc;
    fprintf(out, "  <zone id=\"%s%d\" routing=\"DijkstraCache\">\n",
            f->kind == CLUSTER_FABRIC_RAIL ? "su" : "leaf", u);
    for (int node = first; node < last; node++)
        write_node_hosts(out, f->models[f->model_of[node]], node, f->rank0[node]);
    write_unit_switches(out, f, u, 1);
    for (int node = first; node < last; node++)
        write_node_routes(out, f, node, u);
    write_unit_switches(out, f, u, 2);
    fprintf(out, "  </zone>\n");
    return 0;
}

/* Every link, in one zone written first: SimGrid finds a link a route names by searching the
 * zone tree from the top, child by child, so links spread over many zones cost a walk over them
 * (a 2,048-node fat tree loaded in 12 s instead of 3). */
static void write_links(FILE *out, const fabric *f)
{
    fprintf(out, "  <zone id=\"links\" routing=\"None\">\n");
    for (int u = 0; u < f->units; u++) {
        int first = u * f->per_unit,
            last = first + f->per_unit < f->nodes ? first + f->per_unit : f->nodes;
        for (int node = first; node < last; node++)
            write_node_links(out, f->models[f->model_of[node]], node);
        write_unit_switches(out, f, u, 0);
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

int cluster_write_platform(const node_model *const *models, const int *group_nodes, int n_groups,
                           const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    fabric f;
    int rc = fabric_init(&f, models, n_groups, NULL, group_nodes, n_groups, opts, err);
    if (!rc)
        rc = fabric_check_pairs(models, group_nodes, n_groups, err);
    if (rc) {
        fabric_free(&f);
        return rc;
    }
    write_header(out, &f, group_nodes, n_groups);
    fprintf(out, "<platform version=\"4.1\">\n");
    fprintf(out, "<zone id=\"cluster\" routing=\"%s\">\n", f.units > 1 ? "DijkstraCache" : "Full");
    write_links(out, &f);
    for (int u = 0; u < f.units && !rc; u++)
        rc = write_unit(out, &f, u, err);
    if (!rc && f.units > 1)
        write_spine(out, &f);
    fprintf(out, "</zone>\n</platform>\n");
    fabric_free(&f);
    if (!rc && ferror(out))
        rc = ps_error_set(err, PS_EINTERNAL, "", 0, 0, "", "cannot write the platform");
    return rc;
}
