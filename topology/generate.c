/* generate.c: `protosim cluster KIND --nodes N`: SimGrid platforms for DGX-1 V100, DGX-2, DGX A100,
 * DGX H100 and DGX H200 nodes joined by an InfiniBand fabric, so users rarely write platform XML
 * by hand.
 *
 * Each kind builds a node_model (node_model.h) and cluster_write_platform (platform_write.c)
 * writes the nodes and the fabric. The model, and why it has this shape (SimGrid 3.32,
 * ptask_L07, every link SPLITDUPLEX so each direction has the full bandwidth):
 *
 * - NVSwitch nodes (A100, H100): a non-blocking switch is no link at all; each GPU has one NVLink
 *   port link n0gI_nvl with its total NVLink bandwidth per direction (A100: 12 NVLink3 x 25 GB/s
 *   = 300 GB/s; H100: 18 NVLink4 x 25 GB/s = 450 GB/s), and GPU i -> GPU j = [nvl_i UP, nvl_j
 *   DOWN]. The switch latency is folded into the ports (0.7 us each).
 * - DGX-1 V100 is a hybrid cube-mesh, not a switch: each GPU has 6 NVLink2 links (25 GB/s per
 *   direction each) to 4 neighbours, two of them doubled (nvidia-smi topo -m of a DGX-1V; the
 *   same counts appear in NCCL's topology dump, NVIDIA/nccl#671). Each neighbour pair gets one
 *   link n0gI_gJ_nvl of links x 25 GB/s; other pairs go over PCIe Gen3 x16 (15.75 GB/s), one
 *   link n0gI_pcie per GPU: [pcie_i UP, pcie_j DOWN]. The CPU and QPI hop is not modelled.
 * - NICs: the GPU -> node gateway route is the GPU's NIC port. A100/H100 have one NIC per GPU
 *   (HDR 200 Gb/s, NDR 400 Gb/s) behind a PCIe switch that is faster than the NIC (Gen4 x16
 *   31.5 GB/s, Gen5 x16 63 GB/s), so PCIe is folded into the NIC (2.5 us). DGX-1 has 4 EDR NICs
 *   (100 Gb/s), one per PCIe switch shared by two GPUs: route [pcie_i UP, n0_nicK UP], K = i/2.
 *   With --nics >= GPUs each GPU's port carries nics/gpus NICs; with fewer, GPUs share them in
 *   blocks.
 * - DGX-2 (dgx-2): 16 V100-SXM3-32GB behind 12 NVSwitches, 6 NVLink2 x 25 GB/s = 150 GB/s per
 *   GPU per direction, modelled as one port per GPU like the A100/H100 switches; 8 EDR NICs
 *   (100 Gb/s), one per PCIe gen3 switch shared by two GPUs (route [pcie_i UP, nic UP], as
 *   DGX-1). NVIDIA's DGX-2 datasheet and the hwloc export ../shared/hwloc/nvidiaDGX2.xml.
 * - DGX H200 (dgx-h200): the DGX H100's NVLink4/NVSwitch and NDR NICs with H200 GPUs.
 * - DGX B200 (dgx-b200): 8 B200 behind NVSwitches, NVLink 5: 18 links x 50 GB/s = 900 GB/s per
 *   GPU per direction (1.8 TB/s both ways, NVIDIA's DGX B200 datasheet), one port per GPU as the
 *   A100/H100; 8 ConnectX-7 NICs of 400 Gb/s, one per GPU, behind PCIe Gen5 switches (folded).
 * - DGX B300 (dgx-b300): 8 B300 on the same NVLink 5 switches (900 GB/s per GPU per direction);
 *   8 ConnectX-8 SuperNICs of 800 Gb/s, one per GPU (DGX B300 datasheet).
 * - DGX H800 (dgx-h800): the DGX H100 with the export GPU's NVLink: 8 NVLink4 links x 25 GB/s =
 *   200 GB/s per GPU per direction (400 GB/s both ways), 8 NDR NICs of 400 Gb/s (DeepSeek-V3's
 *   nodes: its report gives 8 x 400 Gb/s InfiniBand per node).
 * - NVL72 racks (gb200-nvl72, gb300-nvl72; `--racks N`): a node is a rack of 72 GPUs in one
 *   NVLink domain: 18 compute trays of 4 GPUs (and 2 Grace CPUs) joined through the 9 NVLink
 *   switch trays, NVLink 5 at 900 GB/s per GPU per direction to every other GPU of the rack (the
 *   switch trays are non-blocking: one port per GPU, as the DGX switches). Scale-out: one NIC per
 *   GPU (each compute tray's 4 ConnectX NICs): ConnectX-7 400 Gb/s on GB200, ConnectX-8 800 Gb/s
 *   on GB300 (the GB200/GB300 NVL72 datasheets). The Grace CPUs and their C2C links carry no
 *   GPU traffic here. --gpus-per-node N < 72 uses N GPUs of each rack (a job placed on part of
 *   every rack's NVLink domain, e.g. 64 of 72).
 * - --gpu MODEL replaces the kind's GPU (a devices.yaml name), the node otherwise unchanged: the
 *   hosts' gpu property and speed (the model's dense bf16 peak).
 * - Fabric (--fabric, platform_write.c has the model): a fat tree (default: a node's NICs on one
 *   leaf of K nodes, default K = 32 / NICs, leaves joined by a non-blocking spine through
 *   uplinks of the leaf's NIC bandwidth / --oversubscription) or rail-optimized (NIC i of each
 *   node of a 32-node scalable unit on leaf i; cross-rail traffic over NVLink to the GPU on the
 *   destination's rail first, as NCCL's PXN). Switch hops are folded into the NIC ports (latency
 *   0 elsewhere); with X = 1 no uplink ever binds.
 * - Size and speed, DGX H100 (`protosim cluster dgx-h100 --nodes N`; load = `protosim collective
 *   --gpus 16`, user CPU s; before = one Full zone with a zoneRoute per node pair):
 *       nodes   before: bytes   load      fat tree: bytes   load     rail: bytes   load
 *       2            14 116    0.07 s          22 634    0.06 s          46 466   0.05 s
 *       64          810 521    0.11 s         728 699    0.09 s       1 409 647   0.09 s
 *       512      28 068 914    1.41 s       5 964 668    0.34 s      11 529 204   0.36 s
 *       2048    414 642 211   57.5 s       24 254 189    2.39 s      46 872 197   1.83 s
 *   A 1 GB all-reduce on all 16,384 GPUs of 2,048 nodes crashed SimGrid before (after 130 s,
 *   9 GB); it now runs: 21 s user CPU, 0.5 GB on the fat tree, 16 s on the rail fabric.
 *   Cached route queries cost 1-6 us as before; a source's first one computes its shortest-path
 *   tree (0.1-0.4 ms). scripts/bench.sh: unchanged iteration times, no slower (1024-GPU plan:
 *   10.7-13.5 s user CPU against 12.2-13.7 s before; docs/design-notes.md, "Fabrics").
 * - Heterogeneous clusters (--nodes KIND:N[,KIND:N...]): node groups numbered in the order given,
 *   ranks node-major; each node is written exactly as for its kind alone. A list of one kind
 *   writes the same platform as KIND --nodes N.
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
    double flops;       /* host speed: dense bf16/fp16 peak */
    int gpus;           /* per node */
    double nvlink_GBps; /* per GPU per direction (NVSwitch kinds) */
    int cube_mesh;      /* DGX-1: explicit GPU pair links instead of a switch */
    int pcie_to_nic;    /* a GPU reaches its NIC through its PCIe switch link (DGX-1, DGX-2) */
    int gpus_per_nic;   /* default NIC count is gpus / gpus_per_nic */
    double nic_gbps;    /* Gb/s per NIC per direction */
} dgx_kind;

static const dgx_kind dgx_kinds[] = {
    {"dgx-v100", "V100-SXM2-32GB", 125e12, 8, 150, 1, 1, 2, 100},
    {"dgx-2", "V100-SXM3-32GB", 125e12, 16, 150, 0, 1, 2, 100},
    {"dgx-a100", "A100-SXM4-80GB", 312e12, 8, 300, 0, 0, 1, 200},
    {"dgx-h100", "H100-SXM5-80GB", 989.4e12, 8, 450, 0, 0, 1, 400},
    {"dgx-h200", "H200-SXM-141GB", 989.4e12, 8, 450, 0, 0, 1, 400},
    {"dgx-b200", "B200-SXM-180GB", 2250e12, 8, 900, 0, 0, 1, 400},
    {"dgx-b300", "B300-SXM-288GB", 2250e12, 8, 900, 0, 0, 1, 800},
    {"dgx-h800", "H800-SXM5-80GB", 989.4e12, 8, 200, 0, 0, 1, 400},
    {"gb200-nvl72", "GB200", 2500e12, 72, 900, 0, 0, 1, 400},
    {"gb300-nvl72", "GB300", 2500e12, 72, 900, 0, 0, 1, 800},
};

#define NVLINK_LATENCY 0.7e-6
#define NIC_LATENCY    2.5e-6
#define PCIE_LATENCY   1e-6
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
} gen_params;

static int add_link(node_model *m, const char *id, double GBps, double latency_s)
{
    node_link *l = &m->links[m->n_links];
    snprintf(l->id, sizeof l->id, "%s", id);
    l->GBps = GBps;
    l->latency_s = latency_s;
    return m->n_links++;
}

static void hop(node_path *p, int link, int up)
{
    p->hop[p->n].link = link;
    p->hop[p->n++].up = up;
}

/* i -> j and, reversed, j -> i: the same links backwards with directions swapped. */
static void set_route(node_model *m, int i, int j, const node_path *p)
{
    node_path *back = &m->gpu_gpu[j * m->gpus + i];
    m->gpu_gpu[i * m->gpus + j] = *p;
    back->n = p->n;
    for (int h = 0; h < p->n; h++) {
        back->hop[h].link = p->hop[p->n - 1 - h].link;
        back->hop[h].up = !p->hop[p->n - 1 - h].up;
    }
}

/* The node model of group p's nodes; gpu (when not NULL) replaces the kind's GPU. */
static void build_node(const gen_params *p, const device_spec *gpu, node_model *m)
{
    const dgx_kind *k = p->k;
    int G = p->gpus;
    char id[40];
    memset(m, 0, sizeof *m);
    snprintf(m->kind, sizeof m->kind, "%s", k->kind);
    snprintf(m->gpu, sizeof m->gpu, "%s", gpu ? gpu->name : k->gpu);
    m->flops = gpu ? gpu->peak_flops[PREC_BF16] : k->flops;
    m->gpus = G;
    m->nics = p->nics;
    m->nic_GBps = p->nic_GBps;
    m->links = xcalloc((size_t)(G * G + 2 * G + p->nics), sizeof *m->links);
    m->gpu_gpu = xcalloc((size_t)G * G, sizeof *m->gpu_gpu);
    m->gpu_nic = xcalloc((size_t)G, sizeof *m->gpu_nic);
    m->nic_of_gpu = xcalloc((size_t)G, sizeof *m->nic_of_gpu);
    int *nvl = xmalloc((size_t)G * G * sizeof *nvl), *pcie = xmalloc((size_t)G * sizeof *pcie);
    for (int g = 0; g < G; g++) { /* GPU-side ports first, then NICs */
        if (k->cube_mesh) {
            for (int h = g + 1; h < G; h++) {
                nvl[g * G + h] = -1;
                if (!dgx1_nvlinks[g][h])
                    continue;
                snprintf(id, sizeof id, "g%d_g%d_nvl", g, h);
                nvl[g * G + h] = add_link(m, id, dgx1_nvlinks[g][h] * NVLINK2_GBPS, NVLINK_LATENCY);
            }
        } else {
            snprintf(id, sizeof id, "g%d_nvl", g);
            nvl[g] = add_link(m, id, k->nvlink_GBps, NVLINK_LATENCY);
        }
        if (k->pcie_to_nic) {
            snprintf(id, sizeof id, "g%d_pcie", g);
            pcie[g] = add_link(m, id, PCIE3_X16_GBPS, PCIE_LATENCY);
        }
    }
    int nic0 = m->n_links;
    if (p->nics >= G)
        for (int g = 0; g < G; g++) {
            snprintf(id, sizeof id, "g%d_nic", g);
            add_link(m, id, p->nic_GBps * p->nics / G, NIC_LATENCY);
        }
    else
        for (int n = 0; n < p->nics; n++) {
            snprintf(id, sizeof id, "_nic%d", n);
            add_link(m, id, p->nic_GBps, NIC_LATENCY);
        }
    for (int g = 0; g < G; g++) {
        for (int h = g + 1; h < G; h++) {
            node_path r = {0};
            if (k->cube_mesh && nvl[g * G + h] >= 0) {
                hop(&r, nvl[g * G + h], 1);
            } else if (k->cube_mesh) {
                hop(&r, pcie[g], 1);
                hop(&r, pcie[h], 0);
            } else {
                hop(&r, nvl[g], 1);
                hop(&r, nvl[h], 0);
            }
            set_route(m, g, h, &r);
        }
        m->nic_of_gpu[g] = p->nics >= G ? g * p->nics / G : (int)((long)g * p->nics / G);
        if (k->pcie_to_nic)
            hop(&m->gpu_nic[g], pcie[g], 1);
        hop(&m->gpu_nic[g], nic0 + (p->nics >= G ? g : m->nic_of_gpu[g]), 1);
    }
    free(nvl);
    free(pcie);
}

#define N_KINDS (sizeof dgx_kinds / sizeof dgx_kinds[0])
#define KNOWN_KINDS                                                                                \
    "dgx-v100, dgx-2, dgx-a100, dgx-h100, dgx-h200, dgx-b200, dgx-b300, dgx-h800, gb200-nvl72, "   \
    "gb300-nvl72"
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

/* --gpu: the device-table entry it names (into *table, which the caller frees), or an error
 * naming the flag. */
static int find_gpu(const char *name, device_table *table, const device_spec **spec, ps_error *err)
{
    int rc = device_table_load_all(NULL, table, err);
    if (rc)
        return rc;
    if ((*spec = device_table_find(table, name)))
        return 0;
    char known[800];
    size_t len = 0;
    known[0] = 0;
    for (int i = 0; i < table->n && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                table->specs[i].name);
    return ps_error_set(err, PS_EINPUT, "", 0, 0, "gpu",
                        "--gpu: unknown device '%s' (known: %s; a GPU of your own comes with "
                        "--devices FILE)",
                        name, known);
}

int cluster_generate(const char *kind, const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    gen_params *groups;
    int n;
    device_table table = {0};
    const device_spec *gpu = NULL;
    int rc = opts && opts->gpu ? find_gpu(opts->gpu, &table, &gpu, err) : 0;
    if (!rc)
        rc = request_groups(kind, opts, &groups, &n, err);
    if (rc) {
        device_table_free(&table);
        return rc;
    }
    node_model *models = xcalloc((size_t)n, sizeof *models);
    const node_model **ptrs = xcalloc((size_t)n, sizeof *ptrs);
    int *counts = xcalloc((size_t)n, sizeof *counts);
    for (int i = 0; i < n; i++) {
        build_node(&groups[i], gpu, &models[i]);
        ptrs[i] = &models[i];
        counts[i] = groups[i].nodes;
    }
    rc = opts && opts->format == CLUSTER_FORMAT_DESCRIPTION
             ? cluster_write_description(ptrs, counts, n, opts, out, err)
             : cluster_write_platform(ptrs, counts, n, opts, out, err);
    for (int i = 0; i < n; i++)
        node_model_free(&models[i]);
    free(models);
    free(ptrs);
    free(counts);
    free(groups);
    device_table_free(&table);
    return rc;
}
