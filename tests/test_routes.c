/* test_routes.c: every GPU pair's route of small generated clusters, as SimGrid XML platforms
 * (topology/platform_write.c) and as cluster descriptions built with protosim's own routing zone
 * (topology/cluster_desc.c, fabric.c), against the links the fabric rules give, written out here
 * by hand: the check any change of the platform's shape (zones, routing kinds) must keep
 * passing, since the executor's results depend on each route's links, bandwidths and latencies.
 * Each test runs once per form (a loop test: _i is the cluster_format). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../sim/base/vocab.h"
#include "../topology/cluster.h"
#include "../topology/hwloc_import.h"
#include "../topology/node_model.h"
#include "sim_util.h"
#include "suite_util.h"

#define MAX_LINKS 8
#define GEN5_X16  63.01538467 /* PCIe Gen5 x16: hwloc's float speed, written with 10 digits */

/* The nodes, as the test sees them:
 * - DGX A100 (8 GPUs): GPU g's NVLink port g<g>_nvl (300 GB/s, 0.7 us) to the NVSwitch; its NIC
 *   g<g>_nic on rail g (nic_GBps, 2.5 us) is its whole route out.
 * - tests/data/hwloc/nvswitch.xml imported with --nics 2 (4 GPUs): ports g<g>_nvl of 450 GB/s
 *   (0.7 us); GPU g leaves through its PCIe link g<g>_pcie (Gen5 x16, 1 us) and NIC nic<g/2>
 *   (rail g/2, nic_GBps, 2.5 us) on its switch. The PXN relay towards rail r is the lowest GPU
 *   of that rail (every GPU is one NVSwitch away), 2r.
 * Nodes are grouped by per_unit into leaves (fat tree) or scalable units (rail). pxn: whether a
 * cross-rail route inside a unit goes through the relay (a NIC no faster than NVLink). */
typedef enum { NODE_DGX_A100, NODE_HWLOC_NVSWITCH } node_kind;

typedef struct layout {
    node_kind kind;
    cluster_fabric fabric;
    int nodes, per_unit, pxn;
    double nic_GBps, uplink_GBps, spine_GBps;
} layout;

typedef struct want_route {
    int n;
    char link[MAX_LINKS][48];
    double GBps[MAX_LINKS], latency_us[MAX_LINKS];
} want_route;

static int gpus_per_node(const layout *y)
{
    return y->kind == NODE_DGX_A100 ? 8 : 4;
}

static int rail_of(const layout *y, int g)
{
    return y->kind == NODE_DGX_A100 ? g : g / 2;
}

static int relay_for(const layout *y, int rail)
{
    return y->kind == NODE_DGX_A100 ? rail : 2 * rail;
}

static void add(want_route *w, double GBps, double latency_us, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(want_route *w, double GBps, double latency_us, const char *fmt, ...)
{
    ck_assert_int_lt(w->n, MAX_LINKS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->link[w->n], sizeof w->link[w->n], fmt, ap);
    va_end(ap);
    w->GBps[w->n] = GBps;
    w->latency_us[w->n++] = latency_us;
}

/* GPU g of node n out of its node ("UP") or into it ("DOWN"). */
static void nic_route(want_route *w, const layout *y, int n, int g, const char *dir)
{
    if (y->kind == NODE_DGX_A100) {
        add(w, y->nic_GBps, 2.5, "n%dg%d_nic_%s", n, g, dir);
        return;
    }
    if (!strcmp(dir, "DOWN"))
        add(w, y->nic_GBps, 2.5, "n%dnic%d_DOWN", n, g / 2);
    add(w, GEN5_X16, 1, "n%dg%d_pcie_%s", n, g, dir);
    if (!strcmp(dir, "UP"))
        add(w, y->nic_GBps, 2.5, "n%dnic%d_UP", n, g / 2);
}

static void nvlink_route(want_route *w, const layout *y, int n, int ga, int gb)
{
    double GBps = y->kind == NODE_DGX_A100 ? 300 : 450;
    add(w, GBps, 0.7, "n%dg%d_nvl_UP", n, ga);
    add(w, GBps, 0.7, "n%dg%d_nvl_DOWN", n, gb);
}

/* The route from GPU ga of node na to GPU gb of node nb, by the rules of docs/design-notes.md
 * ("Fabrics"). */
static want_route expected(const layout *y, int na, int ga, int nb, int gb)
{
    want_route w = {0};
    int ua = na / y->per_unit, ub = nb / y->per_unit,
        units = (y->nodes + y->per_unit - 1) / y->per_unit, ra = rail_of(y, ga),
        rb = rail_of(y, gb);
    if (na == nb) { /* through the NVSwitch */
        nvlink_route(&w, y, na, ga, gb);
        return w;
    }
    if (y->fabric == CLUSTER_FABRIC_FAT_TREE) {
        nic_route(&w, y, na, ga, "UP");
        if (ua != ub && units > 1) {
            add(&w, y->uplink_GBps, 0, "leaf%d_up_UP", ua);
            add(&w, y->uplink_GBps, 0, "leaf%d_up_DOWN", ub);
        }
        nic_route(&w, y, nb, gb, "DOWN");
        return w;
    }
    if (ua == ub && ra != rb && y->pxn) { /* PXN: through the relay on rail rb */
        nvlink_route(&w, y, na, ga, relay_for(y, rb));
        nic_route(&w, y, na, relay_for(y, rb), "UP");
        nic_route(&w, y, nb, gb, "DOWN");
        return w;
    }
    nic_route(&w, y, na, ga, "UP");
    if (ra != rb || ua != ub) { /* up rail ra, through the spine, down rail rb */
        add(&w, y->uplink_GBps, 0, "su%d_rail%d_up_UP", ua, ra);
        add(&w, y->spine_GBps, 0, "su%d_spine_UP", ua);
        if (ua != ub)
            add(&w, y->spine_GBps, 0, "su%d_spine_DOWN", ub);
        add(&w, y->uplink_GBps, 0, "su%d_rail%d_up_DOWN", ub, rb);
    }
    nic_route(&w, y, nb, gb, "DOWN");
    return w;
}

/* Write y's cluster with o (in o.format): the dgx-a100 template, or the hwloc export imported
 * with --nics 2. */
static void write_platform(const layout *y, cluster_gen_opts o, FILE *f)
{
    ps_error err;
    ps_error_clear(&err);
    if (y->kind == NODE_DGX_A100) {
        ck_assert_msg(cluster_generate("dgx-a100", &o, f, &err) == 0, "%s", err.message);
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/hwloc/nvswitch.xml", ps_data_dir());
    node_model m;
    hwloc_import_opts h = {.nics = 2, .nic_gbps = y->nic_GBps * 8};
    ck_assert_msg(hwloc_import_node(path, ps_data_dir(), &h, &m, NULL, 0, &err) == 0, "%s",
                  err.message);
    const node_model *models[1] = {&m};
    int rc = o.format == CLUSTER_FORMAT_DESCRIPTION
                 ? cluster_write_description(models, &y->nodes, 1, &o, f, &err)
                 : cluster_write_platform(models, &y->nodes, 1, &o, f, &err);
    ck_assert_msg(rc == 0, "%s", err.message);
    node_model_free(&m);
}

/* Generate y's cluster with o in `format`, load it, and compare every ordered GPU pair's route with the rules:
 * the same link names (each once, any order: SimGrid returns a graph route reversed; a name
 * ending in _UP or _DOWN is one direction of a SPLITDUPLEX link), each link's bandwidth, and the
 * route's latency. */
static void check_all_routes(cluster_gen_opts o, const layout *y, int format)
{
    o.format = (cluster_format)format;
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len);
    write_platform(y, o, f);
    fclose(f);
    cluster c;
    ps_error err;
    int rc = sim_cluster_text(xml, &c, &err);
    free(xml);
    ck_assert_msg(rc == 0, "cluster_load: %s", err.message);
    const int gpus = gpus_per_node(y);
    ck_assert_int_eq(c.n_gpus, y->nodes * gpus);
    ck_assert_int_eq(c.n_nodes, y->nodes);

    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    char a[32], b[32];
    for (int i = 0; i < y->nodes * gpus; i++)
        for (int j = 0; j < y->nodes * gpus; j++) {
            if (i == j)
                continue;
            want_route w = expected(y, i / gpus, i % gpus, j / gpus, j % gpus);
            snprintf(a, sizeof a, "n%dg%d", i / gpus, i % gpus);
            snprintf(b, sizeof b, "n%dg%d", j / gpus, j % gpus);
            ck_assert_int_eq(c.node_of_rank[i], i / gpus);
            xbt_dynar_reset(d);
            sg_host_get_route(sg_host_by_name(a), sg_host_by_name(b), d);
            ck_assert_msg((int)xbt_dynar_length(d) == w.n, "%s -> %s: %u links, want %d", a, b,
                          (unsigned)xbt_dynar_length(d), w.n);
            double latency_us = 0;
            for (int k = 0; k < w.n; k++) {
                sg_link_t found = NULL;
                for (unsigned m = 0; m < xbt_dynar_length(d) && !found; m++) {
                    sg_link_t l = xbt_dynar_get_as(d, m, sg_link_t);
                    if (!strcmp(sg_link_get_name(l), w.link[k]))
                        found = l;
                }
                ck_assert_msg(found, "%s -> %s does not cross %s", a, b, w.link[k]);
                ck_close(sg_link_get_bandwidth(found), w.GBps[k] * 1e9, 1e-12);
                latency_us += w.latency_us[k];
            }
            ck_close(sg_host_get_route_latency(sg_host_by_name(a), sg_host_by_name(b)),
                     latency_us * 1e-6, 1e-9);
        }
    xbt_dynar_free(&d);
    cluster_free(&c);
}

/* Fat tree, 6 DGX A100 in leaves of 2 (3 leaves), oversubscription 2: a leaf's uplink carries
 * its 2 nodes' 16 NICs of 25 GB/s over 2: 200 GB/s. */
START_TEST(fat_tree_every_pair)
{
    layout y = {NODE_DGX_A100, CLUSTER_FABRIC_FAT_TREE, 6, 2, 0, 25, 200, 0};
    check_all_routes((cluster_gen_opts){.nodes = 6, .nodes_per_leaf = 2, .oversubscription = 2}, &y,
                     _i);
}
END_TEST

/* Fat tree, 3 DGX A100 on one leaf (default: 32 ports down / 8 NICs = 4 nodes): no uplink. */
START_TEST(fat_tree_one_leaf_every_pair)
{
    layout y = {NODE_DGX_A100, CLUSTER_FABRIC_FAT_TREE, 3, 4, 0, 25, 0, 0};
    check_all_routes((cluster_gen_opts){.nodes = 3}, &y, _i);
}
END_TEST

/* Rail, 4 DGX A100 in scalable units of 2, non-blocking: a rail's uplink carries its 2 nodes'
 * NIC on that rail (2 x 25 GB/s), the spine port the sum of the unit's 8 rail uplinks (400
 * GB/s). Cross-rail inside a unit
 * is PXN (NVLink 300 GB/s is no narrower than a 25 GB/s NIC). */
START_TEST(rail_pxn_every_pair)
{
    layout y = {NODE_DGX_A100, CLUSTER_FABRIC_RAIL, 4, 2, 1, 25, 50, 400};
    check_all_routes(
        (cluster_gen_opts){.nodes = 4, .fabric = CLUSTER_FABRIC_RAIL, .nodes_per_leaf = 2}, &y, _i);
}
END_TEST

/* Rail without PXN: NICs of 3,200 Gb/s (400 GB/s) are faster than an NVLink port (300 GB/s), so
 * no GPU relays; cross-rail traffic inside a unit goes up its rail, turns at the spine (the
 * unit's spine port) and comes down the destination's rail. 4 nodes in units of 2, X = 1. */
START_TEST(rail_no_pxn_every_pair)
{
    layout y = {NODE_DGX_A100, CLUSTER_FABRIC_RAIL, 4, 2, 0, 400, 800, 6400};
    check_all_routes(
        (cluster_gen_opts){
            .nodes = 4, .fabric = CLUSTER_FABRIC_RAIL, .nodes_per_leaf = 2, .nic_gbps = 3200},
        &y, _i);
}
END_TEST

/* The hwloc node (4 H100, 2 NICs of 400 Gb/s: 50 GB/s) on a fat tree, 4 nodes in leaves of 2:
 * a leaf's uplink carries its 2 nodes' 2 NICs, 200 GB/s. */
START_TEST(hwloc_fat_tree_every_pair)
{
    layout y = {NODE_HWLOC_NVSWITCH, CLUSTER_FABRIC_FAT_TREE, 4, 2, 0, 50, 200, 0};
    check_all_routes((cluster_gen_opts){.nodes_per_leaf = 2}, &y, _i);
}
END_TEST

/* The hwloc node on a rail fabric, 4 nodes in units of 2: rails 0 and 1 (GPUs 0-1 and 2-3), a
 * rail's uplink 2 x 50 GB/s, the spine port 200 GB/s; cross-rail inside a unit through GPU 0 or
 * GPU 2 (NVLink 450 GB/s, no narrower than the NIC). */
START_TEST(hwloc_rail_every_pair)
{
    layout y = {NODE_HWLOC_NVSWITCH, CLUSTER_FABRIC_RAIL, 4, 2, 1, 50, 100, 200};
    check_all_routes((cluster_gen_opts){.fabric = CLUSTER_FABRIC_RAIL, .nodes_per_leaf = 2}, &y,
                     _i);
}
END_TEST

static Suite *routes_suite(void)
{
    Suite *s = suite_create("routes");
    TCase *t = suite_add_tests(s, "all pairs", 120, NULL);
    tcase_add_loop_test(t, fat_tree_every_pair, CLUSTER_FORMAT_XML, CLUSTER_FORMAT_DESCRIPTION + 1);
    tcase_add_loop_test(t, fat_tree_one_leaf_every_pair, CLUSTER_FORMAT_XML,
                        CLUSTER_FORMAT_DESCRIPTION + 1);
    tcase_add_loop_test(t, rail_pxn_every_pair, CLUSTER_FORMAT_XML, CLUSTER_FORMAT_DESCRIPTION + 1);
    tcase_add_loop_test(t, rail_no_pxn_every_pair, CLUSTER_FORMAT_XML,
                        CLUSTER_FORMAT_DESCRIPTION + 1);
    tcase_add_loop_test(t, hwloc_fat_tree_every_pair, CLUSTER_FORMAT_XML,
                        CLUSTER_FORMAT_DESCRIPTION + 1);
    tcase_add_loop_test(t, hwloc_rail_every_pair, CLUSTER_FORMAT_XML,
                        CLUSTER_FORMAT_DESCRIPTION + 1);
    return s;
}

int main(void)
{
    return suite_run(routes_suite());
}
