/* generate.c: `protosim cluster KIND --nodes N`: SimGrid platforms for DGX-1 V100, DGX A100 and
 * DGX H100 nodes joined by an InfiniBand fabric, so users rarely write platform XML by hand.
 *
 * The model, and why it has this shape (SimGrid 3.32, ptask_L07, every link SPLITDUPLEX so each
 * direction has the full bandwidth):
 *
 *   <zone id="cluster" routing="Full">            one zone per node, then the fabric
 *     <zone id="node0" routing="Full">            GPU hosts n0g0.., router node0_gw, links, routes
 *     ...
 *     <link id="node0_fabric"/> ...               per-node port into the fabric
 *     <zoneRoute src="node0" dst="node1" gw_src="node0_gw" gw_dst="node1_gw">
 *       node0_fabric UP, node1_fabric DOWN
 *
 * - NVSwitch nodes (A100, H100): a non-blocking switch is no link at all; each GPU has one NVLink
 *   port link n0gI_nvl with its total NVLink bandwidth per direction (A100: 12 NVLink3 x 25 GB/s
 *   = 300 GB/s; H100: 18 NVLink4 x 25 GB/s = 450 GB/s), and GPU i -> GPU j = [nvl_i UP, nvl_j
 *   DOWN]. The switch latency is folded into the ports (0.7 us each).
 * - DGX-1 V100 is a hybrid cube-mesh, not a switch: each GPU has 6 NVLink2 links (25 GB/s per
 *   direction each) to 4 neighbours, two of them doubled (nvidia-smi topo -m of a DGX-1V; the
 *   same counts appear in NCCL's topology dump, NVIDIA/nccl#671). Each neighbour pair gets one
 *   link n0gI_n0gJ_nvl of links x 25 GB/s; other pairs go over PCIe Gen3 x16 (15.75 GB/s), one
 *   link n0gI_pcie per GPU: [pcie_i UP, pcie_j DOWN]. The CPU and QPI hop is not modelled.
 * - NICs: the GPU -> node gateway route is the GPU's NIC port. A100/H100 have one NIC per GPU
 *   (HDR 200 Gb/s, NDR 400 Gb/s) behind a PCIe switch that is faster than the NIC (Gen4 x16
 *   31.5 GB/s, Gen5 x16 63 GB/s), so PCIe is folded into the NIC (2.5 us). DGX-1 has 4 EDR NICs
 *   (100 Gb/s), one per PCIe switch shared by two GPUs: route [pcie_i UP, n0_nicK UP], K = i/2.
 *   With --nics >= GPUs each GPU's port carries nics/gpus NICs; with fewer, GPUs share them in
 *   blocks.
 * - Fabric: one link per node, NICs x NIC bandwidth / oversubscription, latency 0 (switch hops
 *   folded into the NIC ports). Non-blocking by default (it then never binds); an oversubscribed
 *   fat tree limits what a node can push into the spine.
 * - Heterogeneous clusters (--nodes KIND:N[,KIND:N...]): node groups numbered in the order given,
 *   ranks node-major; each node is written exactly as for its kind alone, its fabric port from
 *   its own NICs. A list of one kind writes the same platform as KIND --nodes N.
 * Host speed is the GPU's dense bf16 (V100: fp16) peak; the cost model uses device specs, this
 * only matters to tasks given in FLOPs.
 */
#include "cluster.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"

typedef struct dgx_kind {
    const char *kind;
    const char *gpu;    /* device table name, the hosts' gpu property */
    const char *speed;  /* dense bf16/fp16 peak */
    int gpus;           /* per node */
    double nvlink_GBps; /* per GPU per direction (NVSwitch kinds) */
    int cube_mesh;      /* DGX-1: explicit GPU pair links instead of a switch */
    int gpus_per_nic;   /* default NIC count is gpus / gpus_per_nic */
    double nic_gbps;    /* Gb/s per NIC per direction */
} dgx_kind;

static const dgx_kind dgx_kinds[] = {
    {"dgx-v100", "V100-SXM2-32GB", "125Tf", 8, 150, 1, 2, 100},
    {"dgx-a100", "A100-SXM4-80GB", "312Tf", 8, 300, 0, 1, 200},
    {"dgx-h100", "H100-SXM5-80GB", "989.4Tf", 8, 450, 0, 1, 400},
};

#define NVLINK_LATENCY "0.7us"
#define NIC_LATENCY    "2.5us"
#define PCIE_LATENCY   "1us"
#define NVLINK2_GBPS   25.0 /* one NVLink2 link, per direction */
#define PCIE3_X16_GBPS 15.75

/* NVLink2 links between GPU pairs of a DGX-1V (hybrid cube-mesh); 0 = none (PCIe). */
static const int dgx1_nvlinks[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

/* The parameters of one group of nodes of a kind (all nodes for a single-kind cluster). */
typedef struct gen_params {
    const dgx_kind *k;
    int nodes, gpus, nics;
    double nic_GBps; /* bytes/s per NIC / 1e9 */
    double oversubscription;
} gen_params;

static void write_link(FILE *out, const char *indent, const char *id, double GBps,
                       const char *latency)
{
    fprintf(out,
            "%s<link id=\"%s\" bandwidth=\"%.10gGBps\" latency=\"%s\" "
            "sharing_policy=\"SPLITDUPLEX\"/>\n",
            indent, id, GBps, latency);
}

/* NIC link of local GPU g: its own when there are at least as many NICs as GPUs, else shared
 * by a block of GPUs. */
static void nic_link_name(const gen_params *p, int node, int g, char *buf, size_t cap)
{
    if (p->nics >= p->gpus)
        snprintf(buf, cap, "n%dg%d_nic", node, g);
    else
        snprintf(buf, cap, "n%d_nic%d", node, (int)((long)g * p->nics / p->gpus));
}

/* Node `node` of group p; its GPUs have ranks rank0, rank0 + 1, ... */
static void write_node(FILE *out, const gen_params *p, int node, int rank0)
{
    const dgx_kind *k = p->k;
    char id[96], id2[96];

    fprintf(out, "  <zone id=\"node%d\" routing=\"Full\">\n", node);
    for (int g = 0; g < p->gpus; g++) {
        fprintf(out, "    <host id=\"n%dg%d\" speed=\"%s\">\n", node, g, k->speed);
        fprintf(out, "      <prop id=\"gpu\" value=\"%s\"/>\n", k->gpu);
        fprintf(out, "      <prop id=\"rank\" value=\"%d\"/>\n", rank0 + g);
        fprintf(out, "    </host>\n");
    }
    fprintf(out, "    <router id=\"node%d_gw\"/>\n", node);

    /* Links: GPU-side ports first, then NICs. */
    for (int g = 0; g < p->gpus; g++) {
        if (k->cube_mesh) {
            for (int h = g + 1; h < p->gpus; h++) {
                if (!dgx1_nvlinks[g][h])
                    continue;
                snprintf(id, sizeof id, "n%dg%d_n%dg%d_nvl", node, g, node, h);
                write_link(out, "    ", id, dgx1_nvlinks[g][h] * NVLINK2_GBPS, NVLINK_LATENCY);
            }
            snprintf(id, sizeof id, "n%dg%d_pcie", node, g);
            write_link(out, "    ", id, PCIE3_X16_GBPS, PCIE_LATENCY);
        } else {
            snprintf(id, sizeof id, "n%dg%d_nvl", node, g);
            write_link(out, "    ", id, k->nvlink_GBps, NVLINK_LATENCY);
        }
    }
    if (p->nics >= p->gpus) {
        for (int g = 0; g < p->gpus; g++) {
            nic_link_name(p, node, g, id, sizeof id);
            write_link(out, "    ", id, p->nic_GBps * p->nics / p->gpus, NIC_LATENCY);
        }
    } else {
        for (int n = 0; n < p->nics; n++) {
            snprintf(id, sizeof id, "n%d_nic%d", node, n);
            write_link(out, "    ", id, p->nic_GBps, NIC_LATENCY);
        }
    }

    /* Routes are symmetrical: the reverse direction swaps UP and DOWN. */
    for (int g = 0; g < p->gpus; g++) {
        for (int h = g + 1; h < p->gpus; h++) {
            fprintf(out, "    <route src=\"n%dg%d\" dst=\"n%dg%d\">", node, g, node, h);
            if (k->cube_mesh && dgx1_nvlinks[g][h])
                fprintf(out, "<link_ctn id=\"n%dg%d_n%dg%d_nvl\" direction=\"UP\"/>", node, g, node,
                        h);
            else if (k->cube_mesh)
                fprintf(out,
                        "<link_ctn id=\"n%dg%d_pcie\" direction=\"UP\"/>"
                        "<link_ctn id=\"n%dg%d_pcie\" direction=\"DOWN\"/>",
                        node, g, node, h);
            else
                fprintf(out,
                        "<link_ctn id=\"n%dg%d_nvl\" direction=\"UP\"/>"
                        "<link_ctn id=\"n%dg%d_nvl\" direction=\"DOWN\"/>",
                        node, g, node, h);
            fprintf(out, "</route>\n");
        }
    }
    for (int g = 0; g < p->gpus; g++) {
        nic_link_name(p, node, g, id2, sizeof id2);
        fprintf(out, "    <route src=\"n%dg%d\" dst=\"node%d_gw\">", node, g, node);
        if (k->cube_mesh)
            fprintf(out, "<link_ctn id=\"n%dg%d_pcie\" direction=\"UP\"/>", node, g);
        fprintf(out, "<link_ctn id=\"%s\" direction=\"UP\"/></route>\n", id2);
    }
    fprintf(out, "  </zone>\n");
}

#define N_KINDS       (sizeof dgx_kinds / sizeof dgx_kinds[0])
#define KNOWN_KINDS   "dgx-v100, dgx-a100, dgx-h100"
#define GROUPS_SYNTAX "KIND:N[,KIND:N...]"

static const dgx_kind *find_kind(const char *name, size_t len)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (strlen(dgx_kinds[i].kind) == len && !strncmp(name, dgx_kinds[i].kind, len))
            return &dgx_kinds[i];
    return NULL;
}

/* The count of group text[0..len): a positive decimal integer, or -1. */
static long group_count(const char *text, size_t len)
{
    long v = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        v = v * 10 + (text[i] - '0');
        if (v > INT_MAX)
            return -1;
    }
    return v > 0 ? v : -1;
}

/* Parse the --nodes group list "KIND:N[,KIND:N...]" into groups[] (allocated, *n of them). */
static int parse_groups(const char *list, gen_params **groups, int *n, ps_error *err)
{
    *groups = NULL;
    *n = 0;
    size_t cap = 0;
    long total = 0;
    for (const char *s = list;; s++) {
        size_t len = strcspn(s, ",");
        const char *colon = memchr(s, ':', len);
        int rc = 0;
        if (len == 0)
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--nodes: empty group in '%s' (expected " GROUPS_SYNTAX ")", list);
        else if (!colon)
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--nodes: group '%.*s' is not KIND:N (expected " GROUPS_SYNTAX ")",
                              (int)len, s);
        const dgx_kind *k = rc ? NULL : find_kind(s, (size_t)(colon - s));
        if (!rc && !k)
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--nodes: unknown cluster kind '%.*s' (known: " KNOWN_KINDS ")",
                              (int)(colon - s), s);
        long count = rc ? 0 : group_count(colon + 1, len - (size_t)(colon + 1 - s));
        if (!rc && (count < 1 || total + count > INT_MAX))
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--nodes: bad node count '%.*s' in group '%.*s' (expected an "
                              "integer >= 1)",
                              (int)(len - (size_t)(colon + 1 - s)), colon + 1, (int)len, s);
        if (rc) {
            free(*groups);
            *groups = NULL;
            *n = 0;
            return rc;
        }
        xgrow(groups, sizeof **groups, (size_t)*n + 1, &cap);
        (*groups)[(*n)++] = (gen_params){.k = k, .nodes = (int)count};
        total += count;
        s += len;
        if (!*s)
            return 0;
    }
}

/* Fill group p's figures (p->k and p->nodes set) from opts and its kind's defaults. */
static int group_params(gen_params *p, const cluster_gen_opts *opts, ps_error *err)
{
    const dgx_kind *k = p->k;
    p->gpus = opts && opts->gpus_per_node > 0 ? opts->gpus_per_node : k->gpus;
    if (k->cube_mesh && p->gpus > 8)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "gpus_per_node",
                            "%s has at most 8 GPUs per node (hybrid cube-mesh), not %d", k->kind,
                            p->gpus);
    int default_nics = (p->gpus + k->gpus_per_nic - 1) / k->gpus_per_nic;
    p->nics = opts && opts->nics_per_node > 0 ? opts->nics_per_node : default_nics;
    p->nic_GBps = (opts && opts->nic_gbps > 0 ? opts->nic_gbps : k->nic_gbps) / 8;
    p->oversubscription = opts && opts->oversubscription > 0 ? opts->oversubscription : 1;
    if (p->oversubscription < 1)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "oversubscription",
                            "oversubscription must be at least 1 (1 = non-blocking), not %g",
                            p->oversubscription);
    return 0;
}

/* The groups of the request: those of opts->node_groups, or opts->nodes nodes of `kind`. */
static int request_groups(const char *kind, const cluster_gen_opts *opts, gen_params **groups,
                          int *n, ps_error *err)
{
    int rc;
    *groups = NULL;
    *n = 0;
    if (opts && opts->node_groups) {
        if (kind)
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                                "--nodes: the group list '%s' names the kinds; give no KIND "
                                "'%s' with it",
                                opts->node_groups, kind);
        rc = parse_groups(opts->node_groups, groups, n, err);
    } else {
        const dgx_kind *k = kind ? find_kind(kind, strlen(kind)) : NULL;
        if (!k)
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "kind",
                                "unknown cluster kind '%s' (known: " KNOWN_KINDS ")",
                                kind ? kind : "");
        int nodes = opts ? opts->nodes : 1;
        if (nodes < 1)
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "nodes", "need at least one node, not %d",
                                nodes);
        *groups = xmalloc(sizeof **groups);
        (*groups)[0] = (gen_params){.k = k, .nodes = nodes};
        *n = 1;
        rc = 0;
    }
    for (int i = 0; !rc && i < *n; i++)
        rc = group_params(&(*groups)[i], opts, err);
    if (rc) {
        free(*groups);
        *groups = NULL;
        *n = 0;
    }
    return rc;
}

/* The XML prologue and the comment saying what was generated. */
static void write_header(FILE *out, const gen_params *g, int n, int nodes)
{
    int mixed = 0;
    for (int i = 1; i < n; i++)
        mixed |= g[i].k != g[0].k || g[i].gpus != g[0].gpus || g[i].nics != g[0].nics ||
                 g[i].nic_GBps != g[0].nic_GBps;
    fprintf(out, "<?xml version='1.0'?>\n");
    fprintf(out, "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    if (!mixed) {
        fprintf(out,
                "<!-- Generated by protosim: %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per "
                "node,\n     fabric oversubscription %g. Model: see topology/generate.c. -->\n",
                g->k->kind, nodes, nodes > 1 ? "s" : "", g->gpus, g->k->gpu, g->nics,
                g->nics > 1 ? "s" : "", g->nic_GBps * 8, g->oversubscription);
        return;
    }
    fprintf(out, "<!-- Generated by protosim: mixed cluster of %d nodes:\n", nodes);
    for (int i = 0; i < n; i++)
        fprintf(out, "     %s, %d node%s x %d %s, %d NIC%s of %g Gb/s per node;\n", g[i].k->kind,
                g[i].nodes, g[i].nodes > 1 ? "s" : "", g[i].gpus, g[i].k->gpu, g[i].nics,
                g[i].nics > 1 ? "s" : "", g[i].nic_GBps * 8);
    fprintf(out, "     fabric oversubscription %g. Model: see topology/generate.c. -->\n",
            g->oversubscription);
}

/* The nodes' ports into the fabric and the routes between nodes. */
static void write_fabric(FILE *out, const gen_params *g, int n, int nodes)
{
    char id[64];
    for (int i = 0, node = 0; i < n; i++)
        for (int j = 0; j < g[i].nodes; j++, node++) {
            snprintf(id, sizeof id, "node%d_fabric", node);
            write_link(out, "  ", id, g[i].nics * g[i].nic_GBps / g[i].oversubscription, "0us");
        }
    for (int a = 0; a < nodes; a++)
        for (int b = a + 1; b < nodes; b++)
            fprintf(out,
                    "  <zoneRoute src=\"node%d\" dst=\"node%d\" gw_src=\"node%d_gw\" "
                    "gw_dst=\"node%d_gw\"><link_ctn id=\"node%d_fabric\" "
                    "direction=\"UP\"/><link_ctn id=\"node%d_fabric\" "
                    "direction=\"DOWN\"/></zoneRoute>\n",
                    a, b, a, b, a, b);
}

int cluster_generate(const char *kind, const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    gen_params *groups;
    int n;
    int rc = request_groups(kind, opts, &groups, &n, err);
    if (rc)
        return rc;
    int nodes = 0;
    for (int i = 0; i < n; i++)
        nodes += groups[i].nodes;

    write_header(out, groups, n, nodes);
    fprintf(out, "<platform version=\"4.1\">\n");
    fprintf(out, "<zone id=\"cluster\" routing=\"Full\">\n");
    for (int i = 0, node = 0, rank = 0; i < n; i++)
        for (int j = 0; j < groups[i].nodes; j++, node++, rank += groups[i].gpus)
            write_node(out, &groups[i], node, rank);
    /* SimGrid wants the sub-zones before the top zone's own links and zoneRoutes. */
    if (nodes > 1)
        write_fabric(out, groups, n, nodes);
    fprintf(out, "</zone>\n</platform>\n");
    free(groups);
    if (ferror(out))
        return ps_error_set(err, PS_EINTERNAL, "", 0, 0, "", "cannot write the platform");
    return 0;
}
