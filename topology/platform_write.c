/* platform_write.c: the one writer of SimGrid platforms: node models (node_model.h) joined by a
 * fabric. Used by the DGX templates (generate.c) and the hwloc import.
 *
 *   <zone id="cluster" routing="DijkstraCache">   nodes, leaves and the spine, as a tree
 *     <zone id="node0" routing="Full">            GPU hosts n0g0.., router node0_gw, the node's
 *     ...                                         links n0<id>, GPU-GPU and GPU-gateway routes
 *     <zone id="leaf0"><router id="leaf0_sw"/>    one per leaf switch (group of nodes)
 *     <zone id="spine"><router id="spine_sw"/>    when there are several leaves
 *     <link id="node0_fabric"/> ...               a node's port: its NICs' bandwidth
 *     <link id="leaf0_up"/> ...                   a leaf's uplink: its nodes' NIC bandwidth / X
 *     <zoneRoute src="node0" dst="leaf0" ...>     node0_fabric
 *     <zoneRoute src="leaf0" dst="spine" ...>     leaf0_up
 *
 * Why this shape: SimGrid's Dijkstra routing computes a route from the declared edges on demand
 * (DijkstraCache keeps each source's shortest-path tree), so the file holds one edge per node and
 * per leaf and grows linearly with the node count; the former Full top zone held one route per
 * node pair (2,048 nodes: 415 MB). Edges cost their link count, and the graph is a tree, so
 * every route is the unique path node -> leaf [-> spine -> leaf] -> node.
 *
 * Every link is SPLITDUPLEX (each direction has the full bandwidth); fabric links have no
 * latency (switch hops are folded into the NIC links). A GPU's route to its node's gateway is
 * the model's gpu_nic path (its NIC's link last).
 *
 * Fabrics (--fabric):
 * - fat-tree (default): every NIC of a node on the node's leaf; K nodes per leaf (default: as
 *   many as fill 32 NIC ports, a 64-port switch with half its ports up: 4 DGX nodes of 8 NICs),
 *   leaves joined by the spine. A leaf's uplink carries K nodes' NIC bandwidth / X
 *   (--oversubscription X): X = 1 never binds; X = 2 halves what crosses leaves.
 * - rail (rail-optimized, as DGX SuperPOD): NIC i of every node of a scalable unit of K nodes
 *   (default 32) on that unit's rail-i leaf, spines above. GPUs of one rail reach each other in
 *   one switch hop; between rails NCCL moves data over NVLink to the GPU of the destination's
 *   rail first (PXN, on by default since NCCL 2.12), so within a unit every NIC reaches every
 *   other NIC of the unit without the spine: the unit is written as one non-blocking leaf. The
 *   unit's rail uplinks are one link of K nodes' NIC bandwidth / X: exact when the rails carry
 *   alike (NCCL's channels spread a collective over all rails), optimistic for traffic on one
 *   rail only. The NVLink hop of PXN is not added to the route (its bytes are a small share of
 *   NVLink's bandwidth).
 * Oversubscription shapes leaf uplinks only: with every node on one leaf it changes nothing and
 * is refused. */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"

static void write_link(FILE *out, const char *indent, const char *id, double GBps, double latency_s)
{
    fprintf(out,
            "%s<link id=\"%s\" bandwidth=\"%.10gGBps\" latency=\"%.10gus\" "
            "sharing_policy=\"SPLITDUPLEX\"/>\n",
            indent, id, GBps, latency_s * 1e6);
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

/* Node `node` of model m; its GPUs have ranks rank0, rank0 + 1, ... */
static void write_node(FILE *out, const node_model *m, int node, int rank0)
{
    char id[64];
    fprintf(out, "  <zone id=\"node%d\" routing=\"Full\">\n", node);
    for (int g = 0; g < m->gpus; g++) {
        fprintf(out, "    <host id=\"n%dg%d\" speed=\"%.10gTf\">\n", node, g, m->flops / 1e12);
        fprintf(out, "      <prop id=\"gpu\" value=\"%s\"/>\n", m->gpu);
        fprintf(out, "      <prop id=\"rank\" value=\"%d\"/>\n", rank0 + g);
        fprintf(out, "    </host>\n");
    }
    fprintf(out, "    <router id=\"node%d_gw\"/>\n", node);
    for (int l = 0; l < m->n_links; l++) {
        snprintf(id, sizeof id, "n%d%s", node, m->links[l].id);
        write_link(out, "    ", id, m->links[l].GBps, m->links[l].latency_s);
    }
    /* Routes are symmetrical: SimGrid derives j -> i by reversing i -> j. */
    for (int g = 0; g < m->gpus; g++)
        for (int h = g + 1; h < m->gpus; h++) {
            fprintf(out, "    <route src=\"n%dg%d\" dst=\"n%dg%d\">", node, g, node, h);
            write_hops(out, m, node, &m->gpu_gpu[g * m->gpus + h], 0);
            fprintf(out, "</route>\n");
        }
    for (int g = 0; g < m->gpus; g++) {
        fprintf(out, "    <route src=\"n%dg%d\" dst=\"node%d_gw\">", node, g, node);
        write_hops(out, m, node, &m->gpu_nic[g], 0);
        fprintf(out, "</route>\n");
    }
    fprintf(out, "  </zone>\n");
}

/* The fabric's shape: K nodes per leaf, the leaves' uplink share. */
typedef struct fabric_shape {
    int rail;           /* rail-optimized, else fat-tree */
    int nodes_per_leaf; /* K */
    int leaves;
    double oversubscription;
} fabric_shape;

#define FAT_TREE_LEAF_PORTS 32 /* NIC ports per leaf (a 64-port switch, half its ports up) */
#define RAIL_UNIT_NODES     32 /* nodes per scalable unit (DGX SuperPOD) */
#define POD_LEAVES          32 /* leaves under one pod zone: keeps every zone's route table small */

static int fabric_shape_of(const cluster_gen_opts *opts, const node_model *first, int nodes,
                           fabric_shape *f, ps_error *err)
{
    memset(f, 0, sizeof *f);
    const char *name = opts && opts->fabric ? opts->fabric : "fat-tree";
    if (!strcmp(name, "rail"))
        f->rail = 1;
    else if (strcmp(name, "fat-tree"))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "fabric",
                            "--fabric: unknown fabric '%s' (known: fat-tree, rail)", name);
    f->oversubscription = opts && opts->oversubscription > 0 ? opts->oversubscription : 1.0;
    if (f->oversubscription < 1)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "oversubscription",
                            "oversubscription must be at least 1 (1 = non-blocking), not %g",
                            f->oversubscription);
    if (opts && opts->nodes_per_leaf < 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "nodes_per_leaf",
                            "--nodes-per-leaf must be at least 1, not %d", opts->nodes_per_leaf);
    int k = opts && opts->nodes_per_leaf > 0 ? opts->nodes_per_leaf : 0;
    if (!k)
        k = f->rail
                ? RAIL_UNIT_NODES
                : (FAT_TREE_LEAF_PORTS / first->nics > 0 ? FAT_TREE_LEAF_PORTS / first->nics : 1);
    f->nodes_per_leaf = k;
    f->leaves = (nodes + k - 1) / k;
    if (f->leaves > POD_LEAVES * POD_LEAVES)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "nodes_per_leaf",
                            "%d nodes at %d per leaf make %d leaves; the fabric has at most %d "
                            "(give a larger --nodes-per-leaf)",
                            nodes, k, f->leaves, POD_LEAVES * POD_LEAVES);
    if (f->oversubscription > 1 && f->leaves < 2)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "oversubscription",
                            "--oversubscription %g shapes the uplinks between leaves, but all %d "
                            "node%s are on one leaf of %d: give --nodes-per-leaf below %d",
                            f->oversubscription, nodes, nodes > 1 ? "s" : "", k, nodes);
    return 0;
}

/* The XML prologue and the comment saying what was generated. */
static void write_header(FILE *out, const node_model *const *models, const int *group_nodes, int n,
                         int nodes, const fabric_shape *f)
{
    int mixed = 0;
    for (int i = 1; i < n; i++)
        mixed |= strcmp(models[i]->kind, models[0]->kind) || models[i]->gpus != models[0]->gpus ||
                 models[i]->nics != models[0]->nics || models[i]->nic_GBps != models[0]->nic_GBps;
    fprintf(out, "<?xml version='1.0'?>\n");
    fprintf(out, "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    if (!mixed) {
        const node_model *m = models[0];
        fprintf(out,
                "<!-- Generated by protosim: %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per "
                "node,\n     %s fabric, %d node%s per leaf, oversubscription %g. Model: see "
                "topology/%s\n     and platform_write.c. -->\n",
                m->kind, nodes, nodes > 1 ? "s" : "", m->gpus, m->gpu, m->nics,
                m->nics > 1 ? "s" : "", m->nic_GBps * 8, f->rail ? "rail" : "fat-tree",
                f->nodes_per_leaf, f->nodes_per_leaf > 1 ? "s" : "", f->oversubscription,
                strncmp(m->kind, "hwloc:", 6) ? "generate.c" : "hwloc_import.c");
        return;
    }
    fprintf(out, "<!-- Generated by protosim: mixed cluster of %d nodes:\n", nodes);
    for (int i = 0; i < n; i++)
        fprintf(out, "     %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per node;\n", models[i]->kind,
                group_nodes[i], group_nodes[i] > 1 ? "s" : "", models[i]->gpus, models[i]->gpu,
                models[i]->nics, models[i]->nics > 1 ? "s" : "", models[i]->nic_GBps * 8);
    fprintf(out,
            "     %s fabric, %d node%s per leaf, oversubscription %g. Model: see "
            "topology/generate.c\n     and platform_write.c. -->\n",
            f->rail ? "rail" : "fat-tree", f->nodes_per_leaf, f->nodes_per_leaf > 1 ? "s" : "",
            f->oversubscription);
}

/* Where each node comes from: its model, its first rank, its fabric port (GB/s). */
typedef struct layout {
    const node_model **model;
    int *rank0;
    double *port;
    int nodes;
} layout;

/* zoneRoute from zone <kind_a><a> to <kind_b><b> (to its switch zone when to_switch), up
 * through link <kind_a><a>_<link_a>, then down <kind_b><b>_<link_b> when link_b is given. */
static void zone_route(FILE *out, const char *kind_a, int a, const char *kind_b, int b,
                       int to_switch, const char *link_a, const char *link_b)
{
    const char *gw_a = strcmp(kind_a, "node") ? "sw" : "gw";
    const char *gw_b = to_switch || strcmp(kind_b, "node") ? "sw" : "gw";
    fprintf(out,
            "  <zoneRoute src=\"%s%d\" dst=\"%s%d%s\" gw_src=\"%s%d_%s\" gw_dst=\"%s%d_%s\">"
            "<link_ctn id=\"%s%d_%s\" direction=\"UP\"/>",
            kind_a, a, kind_b, b, to_switch ? "_swz" : "", kind_a, a, gw_a, kind_b, b, gw_b, kind_a,
            a, link_a);
    if (link_b)
        fprintf(out, "<link_ctn id=\"%s%d_%s\" direction=\"DOWN\"/>", kind_b, b, link_b);
    fprintf(out, "</zoneRoute>\n");
}

/* A switch as a zone of one router: a zoneRoute may only join zones, and a parent zone reaches
 * its children through a gateway inside them. */
static void switch_zone(FILE *out, const char *kind, int i)
{
    fprintf(out, "  <zone id=\"%s%d_swz\" routing=\"Full\"><router id=\"%s%d_sw\"/></zone>\n", kind,
            i, kind, i);
}

/* Leaf l: its nodes, each pair joined through their ports, and (below a parent) its switch. */
static void write_leaf(FILE *out, const layout *ly, const fabric_shape *f, int l, int nested)
{
    int first = l * f->nodes_per_leaf;
    int last = first + f->nodes_per_leaf < ly->nodes ? first + f->nodes_per_leaf : ly->nodes;
    char id[64];
    if (nested)
        fprintf(out, "<zone id=\"leaf%d\" routing=\"Full\">\n", l);
    for (int n = first; n < last; n++)
        write_node(out, ly->model[n], n, ly->rank0[n]);
    if (nested)
        switch_zone(out, "leaf", l);
    for (int n = first; n < last && (nested || last - first > 1); n++) {
        snprintf(id, sizeof id, "node%d_fabric", n);
        write_link(out, "  ", id, ly->port[n], 0.0);
    }
    for (int a = first; a < last; a++) {
        for (int b = a + 1; b < last; b++)
            zone_route(out, "node", a, "node", b, 0, "fabric", "fabric");
        if (nested)
            zone_route(out, "node", a, "leaf", l, 1, "fabric", NULL);
    }
    if (nested)
        fprintf(out, "</zone>\n");
}

/* Pod p: leaves [first, last), their uplinks, each pair joined through them. */
static void write_pod(FILE *out, const layout *ly, const fabric_shape *f, int p, int nested,
                      double *pod_up)
{
    int first = p * POD_LEAVES;
    int last = first + POD_LEAVES < f->leaves ? first + POD_LEAVES : f->leaves;
    char id[64];
    if (nested)
        fprintf(out, "<zone id=\"pod%d\" routing=\"Full\">\n", p);
    for (int l = first; l < last; l++)
        write_leaf(out, ly, f, l, 1);
    if (nested)
        switch_zone(out, "pod", p);
    *pod_up = 0.0;
    for (int l = first; l < last; l++) {
        double up = 0.0;
        for (int n = l * f->nodes_per_leaf; n < ly->nodes && n < (l + 1) * f->nodes_per_leaf; n++)
            up += ly->port[n] / f->oversubscription;
        *pod_up += up; /* the core above the leaves is non-blocking */
        snprintf(id, sizeof id, "leaf%d_up", l);
        write_link(out, "  ", id, up, 0.0);
    }
    for (int a = first; a < last; a++) {
        for (int b = a + 1; b < last; b++)
            zone_route(out, "leaf", a, "leaf", b, 0, "up", "up");
        if (nested)
            zone_route(out, "leaf", a, "pod", p, 1, "up", NULL);
    }
    if (nested)
        fprintf(out, "</zone>\n");
}

/* Every zone below the cluster's: one leaf, the leaves, or pods of leaves. */
static void write_fabric(FILE *out, const layout *ly, const fabric_shape *f)
{
    if (f->leaves == 1) {
        write_leaf(out, ly, f, 0, 0);
        return;
    }
    int pods = (f->leaves + POD_LEAVES - 1) / POD_LEAVES;
    if (pods == 1) {
        double up;
        write_pod(out, ly, f, 0, 0, &up);
        return;
    }
    double *up = calloc((size_t)pods, sizeof *up);
    char id[64];
    for (int p = 0; p < pods; p++)
        write_pod(out, ly, f, p, 1, &up[p]);
    for (int p = 0; p < pods; p++) {
        snprintf(id, sizeof id, "pod%d_up", p);
        write_link(out, "  ", id, up[p], 0.0);
    }
    free(up);
    for (int a = 0; a < pods; a++)
        for (int b = a + 1; b < pods; b++)
            zone_route(out, "pod", a, "pod", b, 0, "up", "up");
}

int cluster_write_platform(const node_model *const *models, const int *group_nodes, int n_groups,
                           const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    int nodes = 0;
    for (int i = 0; i < n_groups; i++)
        nodes += group_nodes[i];
    fabric_shape f;
    int rc = fabric_shape_of(opts, models[0], nodes, &f, err);
    if (rc)
        return rc;
    layout ly = {xcalloc((size_t)nodes, sizeof *ly.model), xcalloc((size_t)nodes, sizeof *ly.rank0),
                 xcalloc((size_t)nodes, sizeof *ly.port), nodes};
    for (int i = 0, node = 0, rank = 0; i < n_groups; i++)
        for (int j = 0; j < group_nodes[i]; j++, node++, rank += models[i]->gpus) {
            ly.model[node] = models[i];
            ly.rank0[node] = rank;
            ly.port[node] = models[i]->nics * models[i]->nic_GBps;
        }
    write_header(out, models, group_nodes, n_groups, nodes, &f);
    fprintf(out, "<platform version=\"4.1\">\n");
    fprintf(out, "<zone id=\"cluster\" routing=\"Full\">\n");
    /* SimGrid wants a zone's sub-zones before its own links and zoneRoutes. */
    write_fabric(out, &ly, &f);
    fprintf(out, "</zone>\n</platform>\n");
    free(ly.model);
    free(ly.rank0);
    free(ly.port);
    if (ferror(out))
        return ps_error_set(err, PS_EINTERNAL, "", 0, 0, "", "cannot write the platform");
    return 0;
}
