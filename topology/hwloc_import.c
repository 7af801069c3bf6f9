/* hwloc_import.c: `protosim cluster --from-hwloc`: one node_model from an hwloc XML export of a
 * real machine, read with libhwloc itself (I/O filter KEEP_ALL, or bridges, GPUs and NICs go).
 *
 * The rules; each is a modelling decision (docs/design-notes.md, "hwloc import", says the same):
 * - GPUs: PCI devices carrying an OS device of type GPU or CoProc with a GPUModel info (nvml0,
 *   cuda0 and opencl0d0 of one card are one GPU; a BMC's display "card0" has no GPUModel and is no
 *   GPU). Ranks follow PCI bus id order (nvidia-smi's, CUDA_DEVICE_ORDER=PCI_BUS_ID).
 * - GPU model: --gpu NAME, else the GPUModel without its vendor prefixes ("NVIDIA ", "Tesla ",
 *   "AMD ", "Instinct "), matched case-insensitively in the device table, else through the alias
 *   table below (each entry says why); else an error naming the GPU and suggesting --gpu. One node
 *   has one GPU model: GPUs of different models are an error (unless --gpu names one).
 * - NVLink: the "NVLinkBandwidth" distances matrix (MB/s per direction; diagonal ignored). A
 *   non-zero GPU-GPU entry is one link between the pair with that bandwidth (route: that link).
 *   The entries between a GPU and NVSwitches (matrix objects that are PCI devices of subtype
 *   "NVSwitch") are summed into one NVLink port per GPU, and the node's switches are one
 *   non-blocking switch, as generate.c's NVSwitch nodes: GPU i -> j = [port_i UP, port_j DOWN].
 *   The DGX-2's matrix (28 objects: 16 GPUs, 12 NVSwitches) gives each GPU 6 x 25000 MB/s to the
 *   6 switches of its baseboard and nothing between GPUs or between switches: the 48 NVLinks that
 *   join the two baseboards (8 per switch pair: 1.2 TB/s each way, the 8 GPUs' 8 x 150 GB/s) are
 *   not in it, and with them the 12 switches are non-blocking for all 16 GPUs. Entries to other
 *   objects (a POWER CPU's NVLink) are ignored: protosim moves data between GPUs. An asymmetric
 *   entry is an error.
 * - PCIe: every PCI object (device, or bridge: root port, switch port) has a link to its parent at
 *   hwloc's link speed (GB/s per direction). A run of objects each the only PCI child of its
 *   parent carries the same traffic, so it is one link at the smallest known speed of the run: a
 *   downstream port and its device are one link; a root port and the switch below are the
 *   switch's uplink, shared by every device under the switch. A route from A to B is A's links UP
 *   to their lowest common ancestor, then B's links DOWN. Routes between host bridges cross the
 *   CPU and, across sockets, the inter-socket link: neither is modelled (hwloc gives no bandwidth
 *   for them), as in the DGX-1 template. A run without any known speed is an error.
 * - GPU pairs without NVLink (direct or through switches) go over PCIe.
 * - NICs: PCI devices carrying an OpenFabrics OS device (mlx5_0); if there is none, those carrying
 *   a Network OS device (ib0, eth0; a management port counts too then). Each GPU sends through its
 *   nearest NIC: by NCCL's path classes (under one PCIe switch tree < through the host bridge <
 *   another host bridge of the same NUMA node < another NUMA node), then fewer links, then the NIC
 *   fewer GPUs use so far, then the lower index; so NICs are shared when fewer than GPUs. NICs no
 *   GPU uses (storage, management) are left out. Exports carry no NIC speed: --nic-gbps is
 *   required. Route out of the node: the PCIe route GPU -> NIC, then the NIC's port link.
 * - A file without NICs needs --nics K (1 <= K <= GPUs): GPU g uses NIC g * K / GPUs (blocks, as
 *   the templates), and a NIC sits on the lowest PCIe switch above all GPUs of its block (one
 *   GPU: that GPU's switch): the route is the GPU's links below that switch, then the NIC port.
 *   The NIC's own PCIe link is not modelled (nor is it in the templates).
 * - Latencies, as generate.c: NVLink 0.7 us per link; 1 us on a GPU's own PCIe link, the switch
 *   hops folded into it (GPU -> GPU over PCIe: 2 us); 2.5 us on a NIC port, its PCIe hop folded.
 * - Host speed: the device's dense bf16 (fp16 before Ampere) peak, as generate.c.
 */
#include "hwloc_import.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../sim/base/xalloc.h"
#include "cluster.h"

#define NVLINK_LATENCY_S 0.7e-6
#define PCIE_LATENCY_S   1e-6
#define NIC_LATENCY_S    2.5e-6
#define MAX_PCI_DEPTH    32 /* PCIe links from a device up to its host bridge */

/* hwloc GPU names (vendor prefixes stripped) that differ from the device table's, and why. */
static const struct gpu_alias {
    const char *hwloc, *device, *why;
} gpu_aliases[] = {
    {"V100-SXM3-32GB-H", "V100-SXM3-32GB",
     "the DGX-2H's 450 W part: same SMs and HBM2, higher clocks (DGX-2H 2.1 vs DGX-2 2.0 PFLOPS "
     "fp16), so compute is costed about 5% slow; --gpu to choose otherwise"},
    {"H100 80GB HBM3", "H100-SXM5-80GB", "what NVML calls the H100 SXM5"},
};

static const char *const vendor_prefixes[] = {"NVIDIA ", "Tesla ", "AMD ", "Instinct "};

/* A GPU or NIC: its PCI device and the name of its first OS device. */
typedef struct endpoint {
    hwloc_obj_t pci;
    const char *name;
    const char *model; /* GPUs: the GPUModel info */
} endpoint;

/* One hop of a PCIe route before it becomes a model link: the top object of a run. */
typedef struct pci_hop {
    hwloc_obj_t top;
    int up;
} pci_hop;

typedef struct pci_route {
    int n;
    pci_hop hop[2 * MAX_PCI_DEPTH];
    int cls; /* NCCL-like path class: 0 one switch tree, 1 host bridge, 2 same NUMA, 3 other */
} pci_route;

typedef struct import_ctx {
    const char *path;
    hwloc_topology_t topo;
    endpoint *gpu, *nic;
    int n_gpus, n_nics;
    node_model *m;
    size_t link_cap;
    hwloc_obj_t *link_top; /* [m->n_links]: the run a PCIe link stands for; NULL: not PCIe */
    ps_error *err;
} import_ctx;

/* ---- the PCI tree ---- */

static int is_pci(hwloc_obj_t o)
{
    return o &&
           (o->type == HWLOC_OBJ_PCI_DEVICE ||
            (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI));
}

static const struct hwloc_pcidev_attr_s *pci_attr(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_PCI_DEVICE ? &o->attr->pcidev : &o->attr->bridge.upstream.pci;
}

static void busid(hwloc_obj_t o, char *buf, size_t cap)
{
    const struct hwloc_pcidev_attr_s *a = pci_attr(o);
    snprintf(buf, cap, "%04x:%02x:%02x.%x", a->domain, a->bus, a->dev, a->func);
}

static int compare_busid(const void *x, const void *y)
{
    const struct hwloc_pcidev_attr_s *a = pci_attr(((const endpoint *)x)->pci);
    const struct hwloc_pcidev_attr_s *b = pci_attr(((const endpoint *)y)->pci);
    long ka = ((long)a->domain << 24) | (a->bus << 16) | (a->dev << 8) | a->func;
    long kb = ((long)b->domain << 24) | (b->bus << 16) | (b->dev << 8) | b->func;
    return (ka > kb) - (ka < kb);
}

/* PCI children (devices and bridges) of o, and the last one seen. */
static int pci_children(hwloc_obj_t o, hwloc_obj_t *only)
{
    int n = 0;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_PCI_DEVICE || c->type == HWLOC_OBJ_BRIDGE) {
            n++;
            *only = c;
        }
    return n;
}

/* The top of the run of only children that o belongs to: its link to the tree above. */
static hwloc_obj_t run_top(hwloc_obj_t o)
{
    hwloc_obj_t only;
    while (is_pci(o->parent) && pci_children(o->parent, &only) == 1)
        o = o->parent;
    return o;
}

/* The run from top down through only children: its smallest known speed (0: none known) and
 * its bottom object. */
static double run_speed(hwloc_obj_t top, hwloc_obj_t *bottom)
{
    double speed = 0;
    hwloc_obj_t o = top, only;
    for (;;) {
        float s = pci_attr(o)->linkspeed;
        if (s > 0 && (speed == 0 || s < speed))
            speed = s;
        if (pci_children(o, &only) != 1)
            break;
        o = only;
    }
    *bottom = o;
    return speed;
}

/* The runs from PCI object o up to its host bridge (or other non-PCI parent, in *root). */
static int runs_up(import_ctx *c, hwloc_obj_t o, hwloc_obj_t *tops, hwloc_obj_t *root)
{
    int n = 0;
    while (is_pci(o)) {
        if (n == MAX_PCI_DEPTH) {
            char id[32];
            busid(o, id, sizeof id);
            return -ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "pci_busid",
                                 "PCI device %s is more than %d links below its host bridge", id,
                                 MAX_PCI_DEPTH);
        }
        tops[n] = run_top(o);
        o = tops[n++]->parent;
    }
    *root = o;
    return n;
}

/* Same NUMA locality of two host bridges (their first non-I/O ancestors' node sets). */
static int same_numa(import_ctx *c, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t x = hwloc_get_non_io_ancestor_obj(c->topo, a);
    hwloc_obj_t y = hwloc_get_non_io_ancestor_obj(c->topo, b);
    return x && y && x->nodeset && y->nodeset && hwloc_bitmap_isequal(x->nodeset, y->nodeset);
}

/* The PCIe route from PCI object a to PCI object b: a's runs UP to the lowest common ancestor,
 * b's runs DOWN from it. 0, or PS_EINPUT. */
static int route_between(import_ctx *c, hwloc_obj_t a, hwloc_obj_t b, pci_route *r)
{
    hwloc_obj_t ta[MAX_PCI_DEPTH], tb[MAX_PCI_DEPTH], ra, rb;
    int na = runs_up(c, a, ta, &ra), nb = runs_up(c, b, tb, &rb);
    if (na < 0 || nb < 0)
        return PS_EINPUT;
    int common = 0;
    if (ra == rb)
        while (common < na && common < nb && ta[na - 1 - common] == tb[nb - 1 - common])
            common++;
    r->cls = ra != rb ? (same_numa(c, ra, rb) ? 2 : 3) : common ? 0 : 1;
    r->n = 0;
    for (int i = 0; i < na - common; i++)
        r->hop[r->n++] = (pci_hop){ta[i], 1};
    for (int i = nb - common - 1; i >= 0; i--)
        r->hop[r->n++] = (pci_hop){tb[i], 0};
    return 0;
}

/* ---- model links ---- */

static int add_link(import_ctx *c, const char *id, double GBps, double latency_s, hwloc_obj_t top)
{
    node_model *m = c->m;
    size_t cap = c->link_cap;
    xgrow(&m->links, sizeof *m->links, (size_t)m->n_links + 1, &c->link_cap);
    xgrow(&c->link_top, sizeof *c->link_top, (size_t)m->n_links + 1, &cap);
    node_link *l = &m->links[m->n_links];
    memset(l, 0, sizeof *l);
    snprintf(l->id, sizeof l->id, "%s", id);
    l->GBps = GBps;
    l->latency_s = latency_s;
    c->link_top[m->n_links] = top;
    return m->n_links++;
}

static int endpoint_index(const endpoint *e, int n, hwloc_obj_t pci)
{
    for (int i = 0; i < n; i++)
        if (e[i].pci == pci)
            return i;
    return -1;
}

/* The model link of the run topped by `top`, made on first use: g<I>_pcie for a GPU's own run
 * (1 us), nic<K>_pcie for a NIC's, else pcie_<busid of the top> (0 us: hops fold into the GPU's).
 * -1 after an error. */
static int run_link(import_ctx *c, hwloc_obj_t top)
{
    for (int i = 0; i < c->m->n_links; i++)
        if (c->link_top[i] == top)
            return i;
    hwloc_obj_t bottom;
    double speed = run_speed(top, &bottom);
    int g = endpoint_index(c->gpu, c->n_gpus, bottom);
    int k = endpoint_index(c->nic, c->n_nics, bottom);
    char id[40], bus[32];
    busid(top, bus, sizeof bus);
    if (speed <= 0) {
        ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "pci_link_speed",
                     "the PCIe link above %s%s%s has no link speed in the file", bus,
                     g >= 0   ? ", GPU "
                     : k >= 0 ? ", NIC "
                              : "",
                     g >= 0   ? c->gpu[g].name
                     : k >= 0 ? c->nic[k].name
                              : "");
        return -1;
    }
    if (g >= 0)
        snprintf(id, sizeof id, "g%d_pcie", g);
    else if (k >= 0)
        snprintf(id, sizeof id, "nic%d_pcie", k);
    else
        snprintf(id, sizeof id, "pcie_%.4s_%.2s_%.2s_%.1s", bus, bus + 5, bus + 8, bus + 11);
    return add_link(c, id, speed, g >= 0 ? PCIE_LATENCY_S : 0, top);
}

/* Append route r's hops to path p as model links, leaving `spare` hops free. 0, or PS_EINPUT. */
static int append_route(import_ctx *c, const pci_route *r, node_path *p, int spare,
                        const char *what)
{
    if (p->n + r->n + spare > NODE_MAX_HOPS)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "",
                            "the route %s crosses %d PCIe links, more than protosim's %d", what,
                            r->n, NODE_MAX_HOPS);
    for (int i = 0; i < r->n; i++) {
        int l = run_link(c, r->hop[i].top);
        if (l < 0)
            return PS_EINPUT;
        p->hop[p->n++] = (node_hop){l, r->hop[i].up};
    }
    return 0;
}

/* ---- loading, GPUs and NICs ---- */

static int load_topology(import_ctx *c)
{
    FILE *f = fopen(c->path, "r");
    if (!f)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "", "cannot open: %s",
                            strerror(errno));
    fclose(f);
    if (hwloc_topology_init(&c->topo)) {
        c->topo = NULL;
        return ps_error_set(c->err, PS_EINTERNAL, c->path, 0, 0, "", "hwloc_topology_init failed");
    }
    /* set_xml fails on a file it cannot open; load then would read this machine instead. */
    if (hwloc_topology_set_xml(c->topo, c->path) ||
        hwloc_topology_set_io_types_filter(c->topo, HWLOC_TYPE_FILTER_KEEP_ALL) ||
        hwloc_topology_load(c->topo))
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "",
                            "not a topology hwloc %s can load (malformed XML, or not hwloc's XML "
                            "format v2: export it with `lstopo --of xml` of hwloc 2.x)",
                            HWLOC_VERSION);
    return 0;
}

/* The PCI devices carrying OS devices of type t1 or t2 (GPUs: with a GPUModel), in bus order. */
static int find_endpoints(import_ctx *c, int t1, int t2, int gpus, endpoint **out)
{
    size_t cap = 0;
    int n = 0;
    *out = NULL;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(c->topo, o));) {
        int t = (int)o->attr->osdev.type;
        const char *model = gpus ? hwloc_obj_get_info_by_name(o, "GPUModel") : NULL;
        if ((t != t1 && t != t2) || (gpus && !model))
            continue;
        hwloc_obj_t pci = o->parent;
        if (!pci || pci->type != HWLOC_OBJ_PCI_DEVICE) {
            if (!gpus)
                continue; /* a virtual network interface */
            free(*out);
            *out = NULL;
            return -ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "",
                                 "GPU %s is not below a "
                                 "PCI device in the file (exported without I/O objects?)",
                                 o->name ? o->name : "?");
        }
        if (endpoint_index(*out, n, pci) >= 0)
            continue;
        xgrow(out, sizeof **out, (size_t)n + 1, &cap);
        (*out)[n++] = (endpoint){pci, o->name ? o->name : "?", model};
    }
    if (n > 1)
        qsort(*out, (size_t)n, sizeof **out, compare_busid);
    return n;
}

static int find_gpus_and_nics(import_ctx *c)
{
    c->n_gpus = find_endpoints(c, HWLOC_OBJ_OSDEV_GPU, HWLOC_OBJ_OSDEV_COPROC, 1, &c->gpu);
    if (c->n_gpus < 0)
        return PS_EINPUT;
    if (c->n_gpus == 0)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "",
                            "no GPU found (no GPU or CoProc OS device with a GPUModel, e.g. "
                            "nvml0 or cuda0): export the topology on a GPU node with its I/O "
                            "devices");
    c->n_nics = find_endpoints(c, HWLOC_OBJ_OSDEV_OPENFABRICS, -1, 0, &c->nic);
    if (c->n_nics == 0) {
        free(c->nic);
        c->n_nics = find_endpoints(c, HWLOC_OBJ_OSDEV_NETWORK, -1, 0, &c->nic);
    }
    return 0;
}

/* s without the vendor prefixes, and whether it equals name (case-insensitive). */
static const char *strip_vendor(const char *s)
{
    for (size_t i = 0; i < sizeof vendor_prefixes / sizeof vendor_prefixes[0]; i++) {
        size_t len = strlen(vendor_prefixes[i]);
        if (!strncasecmp(s, vendor_prefixes[i], len)) {
            s += len;
            i = (size_t)-1; /* again from the first prefix: "NVIDIA Tesla ..." */
        }
    }
    return s;
}

static void known_devices(const device_table *t, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < t->n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", t->specs[i].name);
}

/* The device-table entry of the node's GPUs, and how it was found (into how). */
static int gpu_device(import_ctx *c, const device_table *t, const char *forced,
                      const device_spec **spec, char *how, size_t cap)
{
    char known[600];
    known_devices(t, known, sizeof known);
    if (forced) {
        if (!(*spec = device_table_find(t, forced)))
            return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "gpu",
                                "--gpu: unknown device '%s' (known: %s)", forced, known);
        snprintf(how, cap, "'%s' as %s (--gpu)", c->gpu[0].model, forced);
        return 0;
    }
    for (int g = 1; g < c->n_gpus; g++)
        if (strcmp(c->gpu[g].model, c->gpu[0].model))
            return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "GPUModel",
                                "GPUs %s ('%s') and %s ('%s') differ: a node has one GPU model; "
                                "give --gpu NAME to model them all as NAME",
                                c->gpu[0].name, c->gpu[0].model, c->gpu[g].name, c->gpu[g].model);
    const char *name = strip_vendor(c->gpu[0].model);
    for (int i = 0; i < t->n; i++)
        if (!strcasecmp(name, t->specs[i].name)) {
            *spec = &t->specs[i];
            snprintf(how, cap, "'%s' as %s", c->gpu[0].model, t->specs[i].name);
            return 0;
        }
    for (size_t i = 0; i < sizeof gpu_aliases / sizeof gpu_aliases[0]; i++)
        if (!strcasecmp(name, gpu_aliases[i].hwloc) &&
            (*spec = device_table_find(t, gpu_aliases[i].device))) {
            snprintf(how, cap, "'%s' as %s (%s)", c->gpu[0].model, gpu_aliases[i].device,
                     gpu_aliases[i].why);
            return 0;
        }
    return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "GPUModel",
                        "GPU %s: no device-table entry for '%s' (from '%s'); give --gpu NAME "
                        "(known: %s)",
                        c->gpu[0].name, name, c->gpu[0].model, known);
}

/* ---- NVLink ---- */

typedef struct nvlink_stats {
    int pairs, ports, switches; /* direct GPU pair links, switch ports, NVSwitches */
    double port_lo, port_hi;    /* smallest and largest port, GB/s */
} nvlink_stats;

/* The GPU a matrix object stands for (itself or its OS device's PCI device), or -1. */
static int matrix_gpu(import_ctx *c, hwloc_obj_t o)
{
    if (o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    return o ? endpoint_index(c->gpu, c->n_gpus, o) : -1;
}

static int is_nvswitch(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_PCI_DEVICE && o->subtype && !strcmp(o->subtype, "NVSwitch");
}

/* Read the NVLinkBandwidth matrix into pair[gpus * gpus] and port[gpus] (GB/s); *switches
 * counts the NVSwitches in it. No matrix: all zero. */
static int read_nvlink(import_ctx *c, double *pair, double *port, int *switches)
{
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    *switches = 0;
    if (hwloc_distances_get_by_name(c->topo, "NVLinkBandwidth", &nr, &d, 0) || nr == 0)
        return 0;
    unsigned n = d->nbobjs;
    int rc = 0;
    for (unsigned i = 0; i < n; i++)
        *switches += is_nvswitch(d->objs[i]);
    for (unsigned i = 0; i < n && !rc; i++) {
        int g = matrix_gpu(c, d->objs[i]);
        for (unsigned j = 0; j < n && g >= 0 && !rc; j++) {
            hwloc_uint64_t v = d->values[i * n + j], back = d->values[j * n + i];
            int h = matrix_gpu(c, d->objs[j]);
            int sw = is_nvswitch(d->objs[j]);
            if (i == j || (h < 0 && !sw) || (v == 0 && back == 0))
                continue;
            if (v != back)
                rc =
                    ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "NVLinkBandwidth",
                                 "GPU %s: %llu MB/s to %s but %llu MB/s back: protosim models "
                                 "NVLink links with one bandwidth both ways",
                                 c->gpu[g].name, (unsigned long long)v,
                                 h >= 0 ? c->gpu[h].name : "an NVSwitch", (unsigned long long)back);
            else if (h >= 0)
                pair[g * c->n_gpus + h] = (double)v / 1000;
            else
                port[g] += (double)v / 1000;
        }
    }
    hwloc_distances_release(c->topo, d);
    return rc;
}

/* NVLink links and the GPU -> GPU routes (NVLink, else PCIe), with what they were. */
static int gpu_routes(import_ctx *c, nvlink_stats *st)
{
    int n = c->n_gpus, rc;
    double *pair = xcalloc((size_t)n * (size_t)n, sizeof *pair);
    double *port = xcalloc((size_t)n, sizeof *port);
    int *pair_link = xcalloc((size_t)n * (size_t)n, sizeof *pair_link);
    int *port_link = xcalloc((size_t)n, sizeof *port_link);
    char id[40];
    rc = read_nvlink(c, pair, port, &st->switches);
    for (int i = 0; i < n && !rc; i++) {
        port_link[i] = -1;
        if (port[i] > 0) {
            snprintf(id, sizeof id, "g%d_nvl", i);
            port_link[i] = add_link(c, id, port[i], NVLINK_LATENCY_S, NULL);
            st->port_lo = st->ports && st->port_lo < port[i] ? st->port_lo : port[i];
            st->port_hi = st->port_hi > port[i] ? st->port_hi : port[i];
            st->ports++;
        }
    }
    for (int i = 0; i < n && !rc; i++)
        for (int j = i + 1; j < n; j++) {
            pair_link[i * n + j] = -1;
            if (pair[i * n + j] > 0) {
                snprintf(id, sizeof id, "g%d_g%d_nvl", i, j);
                pair_link[i * n + j] = add_link(c, id, pair[i * n + j], NVLINK_LATENCY_S, NULL);
                st->pairs++;
            }
        }
    c->m->gpu_gpu = xcalloc((size_t)n * (size_t)n, sizeof *c->m->gpu_gpu);
    for (int i = 0; i < n && !rc; i++)
        for (int j = i + 1; j < n && !rc; j++) {
            node_path *p = &c->m->gpu_gpu[i * n + j], *back = &c->m->gpu_gpu[j * n + i];
            pci_route r;
            char what[96];
            snprintf(what, sizeof what, "from GPU %s to GPU %s", c->gpu[i].name, c->gpu[j].name);
            if (pair_link[i * n + j] >= 0)
                *p = (node_path){1, {{pair_link[i * n + j], 1}}};
            else if (port_link[i] >= 0 && port_link[j] >= 0)
                *p = (node_path){2, {{port_link[i], 1}, {port_link[j], 0}}};
            else if (!(rc = route_between(c, c->gpu[i].pci, c->gpu[j].pci, &r)))
                rc = append_route(c, &r, p, 0, what);
            back->n = p->n;
            for (int k = 0; k < p->n; k++)
                back->hop[k] = (node_hop){p->hop[p->n - 1 - k].link, !p->hop[p->n - 1 - k].up};
        }
    free(pair);
    free(port);
    free(pair_link);
    free(port_link);
    return rc;
}

/* ---- NICs ---- */

static void add_nic_ports(import_ctx *c, int n, double nic_GBps)
{
    for (int k = 0; k < n; k++) {
        char id[40];
        snprintf(id, sizeof id, "nic%d", k);
        add_link(c, id, nic_GBps, NIC_LATENCY_S, NULL);
    }
}

/* GPU g's route out of the node: r (PCIe), then the port link of its NIC. */
static int nic_route(import_ctx *c, int g, const pci_route *r, int first_port)
{
    char what[96];
    node_path *p = &c->m->gpu_nic[g];
    snprintf(what, sizeof what, "from GPU %s to its NIC", c->gpu[g].name);
    int rc = append_route(c, r, p, 1, what);
    if (!rc)
        p->hop[p->n++] = (node_hop){first_port + c->m->nic_of_gpu[g], 1};
    return rc;
}

/* Is route a nearer than route b (class, then links)? */
static int nearer(const pci_route *a, const pci_route *b)
{
    return a->cls != b->cls ? a->cls < b->cls : a->n < b->n;
}

/* Each GPU's nearest NIC of the file (see the header) and its route; the NICs no GPU uses are
 * dropped, the others keep their bus order. */
static int nics_from_file(import_ctx *c, double nic_GBps)
{
    int n = c->n_gpus, rc = 0, used = 0;
    int *load = xcalloc((size_t)c->n_nics, sizeof *load);
    int *renumber = xcalloc((size_t)c->n_nics, sizeof *renumber);
    pci_route *best = xcalloc((size_t)n, sizeof *best);
    for (int g = 0; g < n && !rc; g++) {
        int pick = -1;
        for (int k = 0; k < c->n_nics && !rc; k++) {
            pci_route r;
            rc = route_between(c, c->gpu[g].pci, c->nic[k].pci, &r);
            if (!rc && (pick < 0 || nearer(&r, &best[g]) ||
                        (!nearer(&best[g], &r) && load[k] < load[pick]))) {
                pick = k;
                best[g] = r;
            }
        }
        if (!rc) {
            c->m->nic_of_gpu[g] = pick;
            load[pick]++;
        }
    }
    for (int k = 0; k < c->n_nics && !rc; k++)
        if (load[k]) {
            renumber[k] = used;
            c->nic[used++] = c->nic[k];
        }
    if (!rc) {
        c->n_nics = c->m->nics = used;
        for (int g = 0; g < n; g++)
            c->m->nic_of_gpu[g] = renumber[c->m->nic_of_gpu[g]];
        int first_port = c->m->n_links;
        add_nic_ports(c, used, nic_GBps);
        for (int g = 0; g < n && !rc; g++)
            rc = nic_route(c, g, &best[g], first_port);
    }
    free(load);
    free(renumber);
    free(best);
    return rc;
}

/* The runs above GPU g (tops[0..na)) that every other GPU of its NIC block shares; for a GPU
 * alone, all but its own run. -1 after an error. */
static int block_shared_runs(import_ctx *c, int g, hwloc_obj_t *tops, int na, hwloc_obj_t root)
{
    int shared = na - 1, others = 0;
    for (int h = 0; h < c->n_gpus; h++) {
        if (h == g || c->m->nic_of_gpu[h] != c->m->nic_of_gpu[g])
            continue;
        hwloc_obj_t th[MAX_PCI_DEPTH], rh;
        int nh = runs_up(c, c->gpu[h].pci, th, &rh), common = 0;
        if (nh < 0)
            return -1;
        while (rh == root && common < na && common < nh &&
               th[nh - 1 - common] == tops[na - 1 - common])
            common++;
        shared = others++ ? (common < shared ? common : shared) : common;
    }
    return shared;
}

/* --nics K NICs for a file without any: GPUs in blocks, each NIC on the lowest PCIe switch above
 * its block (see the header). */
static int nics_placed(import_ctx *c, int k_nics, double nic_GBps)
{
    int n = c->n_gpus, rc = 0;
    int first_port = c->m->n_links;
    c->m->nics = k_nics;
    add_nic_ports(c, k_nics, nic_GBps);
    for (int g = 0; g < n; g++)
        c->m->nic_of_gpu[g] = (int)((long)g * k_nics / n);
    for (int g = 0; g < n && !rc; g++) {
        hwloc_obj_t tops[MAX_PCI_DEPTH], root;
        int na = runs_up(c, c->gpu[g].pci, tops, &root);
        int shared = na < 0 ? -1 : block_shared_runs(c, g, tops, na, root);
        if (shared < 0)
            return PS_EINPUT;
        pci_route r = {.n = na - shared};
        for (int i = 0; i < r.n; i++)
            r.hop[i] = (pci_hop){tops[i], 1};
        rc = nic_route(c, g, &r, first_port);
    }
    return rc;
}

/* NIC options against what the file has. */
static int check_nic_options(import_ctx *c, const hwloc_import_opts *o)
{
    char names[200] = "";
    size_t len = 0;
    for (int k = 0; k < c->n_nics && len < sizeof names; k++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
                                c->nic[k].name);
    if (c->n_nics && o->nics > 0)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "nics",
                            "the file has %d NIC%s (%s): --nics is for files without NICs",
                            c->n_nics, c->n_nics > 1 ? "s" : "", names);
    if (!c->n_nics && o->nics <= 0)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "nics",
                            "no NIC found (no OpenFabrics or Network OS device on a PCI device): "
                            "give --nics N and --nic-gbps GBPS");
    if (!c->n_nics && o->nics > c->n_gpus)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "nics",
                            "--nics %d: more NICs than the file's %d GPUs (each placed NIC serves "
                            "a block of GPUs)",
                            o->nics, c->n_gpus);
    if (o->nic_gbps <= 0)
        return ps_error_set(c->err, PS_EINPUT, c->path, 0, 0, "nic-gbps",
                            "%d NIC%s (%s) but hwloc exports carry no NIC speed: give --nic-gbps "
                            "GBPS (per NIC, per direction)",
                            c->n_nics ? c->n_nics : o->nics,
                            (c->n_nics ? c->n_nics : o->nics) > 1 ? "s" : "",
                            c->n_nics ? names : "from --nics");
    return 0;
}

/* ---- the node ---- */

/* One line for the user: what was found and how it was modelled. */
static void write_summary(import_ctx *c, const char *how, const nvlink_stats *st, int nics_in_file,
                          double nic_gbps, char *buf, size_t cap)
{
    const char *base = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;
    int n = c->n_gpus, pcie = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            pcie += c->link_top[c->m->gpu_gpu[i * n + j].hop[0].link] != NULL;
    size_t len =
        (size_t)snprintf(buf, cap, "%s: %d GPU%s %s; NVLink: ", base, n, n > 1 ? "s" : "", how);
    if (st->ports && len < cap)
        len += (size_t)snprintf(buf + len, cap - len,
                                "%d NVSwitch%s as one switch, a port of %g GB/s per GPU%s, ",
                                st->switches, st->switches == 1 ? "" : "es", st->port_lo,
                                st->port_lo == st->port_hi ? "" : " or more");
    if (len < cap)
        len += (size_t)snprintf(buf + len, cap - len,
                                "%d direct GPU pair%s; %d GPU pair%s over PCIe; NICs: ", st->pairs,
                                st->pairs == 1 ? "" : "s", pcie, pcie == 1 ? "" : "s");
    for (int k = 0; k < c->m->nics && nics_in_file && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? ", " : "", c->nic[k].name);
    if (len < cap && nics_in_file)
        snprintf(buf + len, cap - len,
                 " (%d of the file's %d in use, nearest in the PCIe tree) of "
                 "%g Gb/s",
                 c->m->nics, nics_in_file, nic_gbps);
    else if (len < cap)
        snprintf(buf + len, cap - len, "none in the file, %d placed by --nics, of %g Gb/s",
                 c->m->nics, nic_gbps);
}

int hwloc_import_node(const char *path, const char *data_dir, const hwloc_import_opts *opts,
                      node_model *out, char *summary, size_t summary_cap, ps_error *err)
{
    static const hwloc_import_opts none;
    import_ctx c = {.path = path, .m = out, .err = err};
    device_table table = {0};
    const device_spec *spec = NULL;
    char how[400] = "";
    nvlink_stats st = {0};
    int nics_in_file = 0;
    if (!opts)
        opts = &none;
    memset(out, 0, sizeof *out);

    int rc = load_topology(&c);
    if (!rc)
        rc = find_gpus_and_nics(&c);
    if (!rc)
        rc = check_nic_options(&c, opts);
    if (!rc)
        rc = device_table_load_all(data_dir, &table, err);
    if (!rc)
        rc = gpu_device(&c, &table, opts->gpu, &spec, how, sizeof how);
    if (!rc) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        snprintf(out->kind, sizeof out->kind, "hwloc:%s", base);
        snprintf(out->gpu, sizeof out->gpu, "%s", spec->name);
        out->flops = spec->peak_flops[PREC_BF16];
        out->gpus = c.n_gpus;
        out->nic_of_gpu = xcalloc((size_t)c.n_gpus, sizeof *out->nic_of_gpu);
        out->gpu_nic = xcalloc((size_t)c.n_gpus, sizeof *out->gpu_nic);
        out->nic_GBps = opts->nic_gbps / 8;
        nics_in_file = c.n_nics;
        rc = gpu_routes(&c, &st);
    }
    if (!rc)
        rc = nics_in_file ? nics_from_file(&c, out->nic_GBps)
                          : nics_placed(&c, opts->nics, out->nic_GBps);
    if (!rc && summary && summary_cap)
        write_summary(&c, how, &st, nics_in_file, opts->nic_gbps, summary, summary_cap);
    device_table_free(&table);
    free(c.gpu);
    free(c.nic);
    free(c.link_top);
    if (c.topo)
        hwloc_topology_destroy(c.topo);
    if (rc)
        node_model_free(out);
    return rc;
}
