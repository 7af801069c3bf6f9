/* test_fabric.c: the fabrics of `protosim cluster` (topology/platform_write.c): rail-aligned and
 * cross-rail (PXN) routes of a rail-optimized fabric, its all-reduce on one NIC per rail, an
 * oversubscribed leaf, the non-blocking default fat tree, linear file growth, node numbering by
 * property, and the errors. Timings are computed by hand; every software overhead is off. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../sim/base/graph.h"
#include "../sim/engine/htae.h"
#include "../topology/cluster.h"
#include "sim_util.h"
#include "suite_util.h"

static void expect_bw_lat(const char *a, const char *b, double bw, double lat)
{
    sg_host_t x = sg_host_by_name(a), y = sg_host_by_name(b);
    ck_close(sg_host_get_route_bandwidth(x, y), bw, 1e-12);
    ck_close(sg_host_get_route_latency(x, y), lat, 1e-9);
}

/* DGX H100 on a rail fabric: GPU 3 to GPU 3 of the other node crosses the two NICs only (NDR,
 * 50 GB/s, 2.5 us each: 5 us). GPU 0 to GPU 3 of the other node is PXN: GPU 0's NVLink port out,
 * GPU 3's in (450 GB/s, 0.7 us each), node 0's NIC 3 and node 1's: 50 GB/s, 6.4 us. Inside a
 * node nothing changes: two NVLink ports, 1.4 us. */
START_TEST(rail_aligned_and_pxn_routes)
{
    cluster c;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 2, .fabric = CLUSTER_FABRIC_RAIL},
                       &c);
    ck_assert_int_eq(c.n_nodes, 2);
    ck_assert_int_eq(c.node_of_rank[8], 1);
    sim_expect_route("n0g3", "n1g3", (const char *[]){"n0g3_nic_UP", "n1g3_nic_DOWN", NULL});
    expect_bw_lat("n0g3", "n1g3", 50e9, 5e-6);
    sim_expect_route(
        "n0g0", "n1g3",
        (const char *[]){"n0g0_nvl_UP", "n0g3_nvl_DOWN", "n0g3_nic_UP", "n1g3_nic_DOWN", NULL});
    expect_bw_lat("n0g0", "n1g3", 50e9, 6.4e-6);
    sim_expect_route("n1g5", "n1g2", (const char *[]){"n1g5_nvl_UP", "n1g2_nvl_DOWN", NULL});
    expect_bw_lat("n1g5", "n1g2", 450e9, 1.4e-6);
    cluster_free(&c);
}
END_TEST

/* Three DGX H100 in scalable units of two, oversubscription 2: node 2 is in the second unit.
 * Rail-aligned across units: out on rail 0, up unit 0's rail-0 uplink (2 nodes x 50 GB/s / 2 =
 * 50 GB/s), through the spine ports of both units (never binding: the sum of their rails'
 * uplinks), down unit 1's rail-0 uplink (1 node: 25 GB/s). Cross-rail across units: out on the
 * source's rail 1, in on the destination's rail 6 (the spine joins every leaf). */
START_TEST(rail_across_units)
{
    cluster c;
    sim_load_generated(
        "dgx-h100",
        (cluster_gen_opts){
            .nodes = 3, .fabric = CLUSTER_FABRIC_RAIL, .nodes_per_leaf = 2, .oversubscription = 2},
        &c);
    sim_expect_route("n0g0", "n2g0",
                     (const char *[]){"n0g0_nic_UP", "su0_rail0_up_UP", "su0_spine_UP",
                                      "su1_spine_DOWN", "su1_rail0_up_DOWN", "n2g0_nic_DOWN",
                                      NULL});
    expect_bw_lat("n0g0", "n2g0", 25e9, 5e-6);
    sim_expect_route("n1g1", "n2g6",
                     (const char *[]){"n1g1_nic_UP", "su0_rail1_up_UP", "su0_spine_UP",
                                      "su1_spine_DOWN", "su1_rail6_up_DOWN", "n2g6_nic_DOWN",
                                      NULL});
    /* Inside unit 0 the uplinks are not crossed. */
    sim_expect_route("n0g2", "n1g2", (const char *[]){"n0g2_nic_UP", "n1g2_nic_DOWN", NULL});
    ck_close(sg_link_get_bandwidth(sg_link_by_name("su0_spine_UP")), 8 * 50e9, 1e-12);
    cluster_free(&c);
}
END_TEST

/* DGX-1 (4 EDR NICs, each shared by two GPUs behind their PCIe switch) on a rail fabric. GPU 0
 * to node 1's GPU 3 (rail 1): relay GPU 3, two NVLinks from GPU 0 (50 GB/s, 0.7 us), then GPU
 * 3's PCIe (1 us) and NIC 1 (12.5 GB/s, 2.5 us), and node 1's NIC 1 and GPU 3's PCIe: 12.5
 * GB/s, 0.7 + 1 + 2.5 + 2.5 + 1 = 7.7 us. GPU 0 to GPU 6 (rail 3): no NVLink from GPU 0 to
 * GPU 6 or 7; PCIe (15.75 GB/s, faster than the NIC) relays to GPU 6: pcie_0 up, pcie_6 down
 * and up, NIC 3: 1 + 1 + 1 + 2.5 + 2.5 + 1 = 9 us. */
START_TEST(rail_dgx1_relays)
{
    cluster c;
    sim_load_generated("dgx-v100", (cluster_gen_opts){.nodes = 2, .fabric = CLUSTER_FABRIC_RAIL},
                       &c);
    sim_expect_route("n0g0", "n1g3",
                     (const char *[]){"n0g0_g3_nvl_UP", "n0g3_pcie_UP", "n0_nic1_UP",
                                      "n1_nic1_DOWN", "n1g3_pcie_DOWN", NULL});
    expect_bw_lat("n0g0", "n1g3", 12.5e9, 7.7e-6);
    sim_expect_route("n0g0", "n1g6",
                     (const char *[]){"n0g0_pcie_UP", "n0g6_pcie_DOWN", "n0g6_pcie_UP",
                                      "n0_nic3_UP", "n1_nic3_DOWN", "n1g6_pcie_DOWN", NULL});
    expect_bw_lat("n0g0", "n1g6", 12.5e9, 9e-6);
    /* GPUs 0 and 1 share NIC 0: rail-aligned both. */
    sim_expect_route(
        "n0g1", "n1g0",
        (const char *[]){"n0g1_pcie_UP", "n0_nic0_UP", "n1_nic0_DOWN", "n1g0_pcie_DOWN", NULL});
    cluster_free(&c);
}
END_TEST

/* A ring all-reduce of S = 8 GB over two DGX H100 on a rail fabric (ring forced): 8 channels of
 * S/8 = 1 GB, one per NIC; channel c leaves node 0 from GPU c-1 to node 1's GPU c, through PXN
 * over GPU c's NIC. Each edge carries 2(n-1)/n x 1 GB = 1.875 GB (n = 16): every NIC carries
 * exactly one channel each way, 1.875 GB, and no uplink carries anything. Every NVLink port
 * sends once per channel (7 ring edges inside the node and the PXN hop): 8 x 1.875 = 15 GB.
 * Time: the NICs bind, 1.875 GB / 50 GB/s = 37.5 ms, plus the ring's latency: 30 steps, 2 of
 * them across nodes on the PXN route (6.4 us), 28 inside (1.4 us): 52 us. */
START_TEST(rail_allreduce_one_nic_per_rail)
{
    cluster c;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 2, .fabric = CLUSTER_FABRIC_RAIL},
                       &c);
    exec_graph *g = graph_create(16);
    int ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    int grp = graph_add_group(g, ranks, 16), l = graph_label(g, "ar");
    uint32_t members[16];
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP, 8 * GB, CAT_DP_COMM, l, 0, members);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[members[0]], 37.5e-3 + 52e-6, 1e-9);
    char name[64];
    for (int node = 0; node < 2; node++)
        for (int gpu = 0; gpu < 8; gpu++) {
            snprintf(name, sizeof name, "n%dg%d_nic_UP", node, gpu);
            ck_close(sim_find_link(&r, name)->bytes, 1.875e9, 1e-9);
            snprintf(name, sizeof name, "n%dg%d_nic_DOWN", node, gpu);
            ck_close(sim_find_link(&r, name)->bytes, 1.875e9, 1e-9);
            snprintf(name, sizeof name, "n%dg%d_nvl_UP", node, gpu);
            ck_close(sim_find_link(&r, name)->bytes, 15e9, 1e-9);
        }
    for (int i = 0; i < r.n_links; i++)
        ck_assert_msg(!strstr(r.links[i].name, "su0_"), "%s carries traffic", r.links[i].name);
    ck_assert_int_eq(r.n_links, 2 * 8 * 2 * 2); /* NVLink ports and NICs, both directions */
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Fat tree, two DGX H100 per leaf, oversubscription 2, four nodes: leaf 0's uplink carries
 * 2 nodes x 8 NICs x 50 GB/s / 2 = 400 GB/s. Each of the 16 GPUs of `senders` nodes (0 and 1,
 * or only node 0 when 1) sends 1 GB at once to the GPU of the same rank + 8 x to_offset. */
static void leaf_flows(int senders, int to_offset, double want_end)
{
    cluster c;
    sim_load_generated(
        "dgx-h100", (cluster_gen_opts){.nodes = 4, .nodes_per_leaf = 2, .oversubscription = 2}, &c);
    ck_close(sg_link_get_bandwidth(sg_link_by_name("leaf0_up_UP")), 400e9, 1e-12);
    exec_graph *g = graph_create(c.n_gpus);
    int l = graph_label(g, "x");
    uint32_t t[16];
    for (int i = 0; i < 8 * senders; i++) {
        int to = i + 8 * to_offset;
        t[i] = graph_add_transfer(g, i, to, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
        graph_add_edge(g, t[i], graph_add_compute(g, to, CAT_FORWARD, 0.0, l, 0));
    }
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    for (int i = 0; i < 8 * senders; i++)
        ck_close(r.end[t[i]], want_end, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

/* Node 0 to node 1, on the same leaf: each GPU's 1 GB crosses its NIC and its peer's (50 GB/s):
 * 20 ms + 5 us of NIC latency. */
START_TEST(oversubscribed_leaf_within)
{
    leaf_flows(1, 1, 20e-3 + 5e-6);
}
END_TEST

/* Nodes 0 and 1 to nodes 2 and 3, across the leaves: 16 flows share leaf 0's 400 GB/s uplink,
 * 25 GB/s each: 40 ms + 5 us, twice the time on one leaf. */
START_TEST(oversubscribed_leaf_halves_cross_leaf_bandwidth)
{
    leaf_flows(2, 2, 40e-3 + 5e-6);
}
END_TEST

/* Links (SimGrid's: a split-duplex link is two) whose name starts with prefix. */
static int link_count_with_prefix(const char *prefix)
{
    sg_link_t *links = sg_link_list();
    int n = 0;
    for (size_t i = 0; i < sg_link_count(); i++)
        n += !strncmp(sg_link_get_name(links[i]), prefix, strlen(prefix));
    free(links);
    return n;
}

/* The default fat tree is non-blocking: 16 DGX H100 (8 NICs) give 32 / 8 = 4 nodes per leaf, 4
 * leaves; each uplink carries its 4 nodes' 32 NICs: 1600 GB/s. All 32 GPUs of leaf 0 sending
 * 1 GB to leaf 1 at once still run at their NIC's 50 GB/s: 20 ms + 5 us. */
START_TEST(fat_tree_default_is_non_blocking)
{
    cluster c;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 16}, &c);
    ck_close(sg_link_get_bandwidth(sg_link_by_name("leaf3_up_UP")), 1600e9, 1e-12);
    ck_assert_int_eq(link_count_with_prefix("leaf"), 4 * 2); /* 4 uplinks, UP and DOWN */
    exec_graph *g = graph_create(c.n_gpus);
    int l = graph_label(g, "x");
    uint32_t t[32];
    for (int i = 0; i < 32; i++) {
        t[i] = graph_add_transfer(g, i, 32 + i, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
        graph_add_edge(g, t[i], graph_add_compute(g, 32 + i, CAT_FORWARD, 0.0, l, 0));
    }
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    for (int i = 0; i < 32; i++)
        ck_close(r.end[t[i]], 20e-3 + 5e-6, 1e-9);
    sim_expect_route(
        "n0g0", "n4g7",
        (const char *[]){"n0g0_nic_UP", "leaf0_up_UP", "leaf1_up_DOWN", "n4g7_nic_DOWN", NULL});
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

static size_t platform_bytes(const char *kind, cluster_gen_opts o)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate(kind, &o, m, &err), 0);
    fclose(m);
    free(text);
    return len;
}

/* The file grows linearly: 128 nodes take less than 2.2 times the bytes of 64 (the per-pair
 * zoneRoutes of the old Full top zone made it about 4 times). */
START_TEST(file_size_grows_linearly)
{
    for (int f = 0; f < 2; f++) {
        cluster_gen_opts o = {.nodes = 64, .fabric = (cluster_fabric)f};
        size_t n64 = platform_bytes("dgx-h100", o);
        o.nodes = 128;
        size_t n128 = platform_bytes("dgx-h100", o);
        ck_assert_msg(n128 < 2.2 * n64, "%s: %zu bytes for 128 nodes, %zu for 64",
                      enum_name(cluster_fabric_names, f), n128, n64);
    }
}
END_TEST

static void expect_write_error(cluster_gen_opts o, const char *field, const char *needle)
{
    FILE *devnull = fopen("/dev/null", "w");
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-h100", &o, devnull, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, needle), "'%s' lacks '%s'", err.message, needle);
    fclose(devnull);
}

START_TEST(fabric_option_errors)
{
    expect_write_error((cluster_gen_opts){.nodes = 2, .fabric = (cluster_fabric)7}, "fabric",
                       "--fabric");
    expect_write_error((cluster_gen_opts){.nodes = 2, .nodes_per_leaf = -1}, "nodes_per_leaf",
                       "--nodes-per-leaf");
    expect_write_error((cluster_gen_opts){.nodes = 2, .oversubscription = 0.5}, "oversubscription",
                       "--oversubscription");
    /* Two DGX H100 in one scalable unit: every cross-rail route is PXN, no uplink is crossed. */
    expect_write_error(
        (cluster_gen_opts){.nodes = 2, .fabric = CLUSTER_FABRIC_RAIL, .oversubscription = 2},
        "oversubscription", "all 2 nodes are on one scalable unit");
}
END_TEST

/* A hand-made node whose GPU 0 has no fast relay to rail 1 (its path to GPU 2 is a 1 GB/s link,
 * narrower than GPU 2's NIC) while GPU 1, on GPU 0's rail, reaches GPU 2 over one link: for
 * SimGrid's link-counting search, 0 -> the other node's GPU 2 over the spine (1 + 3 + 1 links)
 * ties with a detour through GPU 1 of another node (1 + 1 + 2 + 1): refused as XML. */
START_TEST(rail_refuses_ambiguous_routes)
{
    node_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.kind, sizeof m.kind, "hand");
    snprintf(m.gpu, sizeof m.gpu, "A100-SXM4-80GB");
    m.flops = 312e12;
    m.gpus = 3;
    m.nics = 2;
    m.nic_GBps = 10;
    node_link links[5] = {{"_nic0", 10, 1e-6},
                          {"_nic1", 10, 1e-6},
                          {"_g0g2", 1, 1e-6},
                          {"_g1g2", 100, 1e-6},
                          {"_g0g1", 100, 1e-6}};
    m.links = links;
    m.n_links = 5;
    node_path gg[9] = {{0}};
    gg[0 * 3 + 1] = (node_path){1, {{4, 1}}};
    gg[1 * 3 + 0] = (node_path){1, {{4, 0}}};
    gg[0 * 3 + 2] = (node_path){1, {{2, 1}}};
    gg[2 * 3 + 0] = (node_path){1, {{2, 0}}};
    gg[1 * 3 + 2] = (node_path){1, {{3, 1}}};
    gg[2 * 3 + 1] = (node_path){1, {{3, 0}}};
    m.gpu_gpu = gg;
    int rail[3] = {0, 0, 1};
    m.nic_of_gpu = rail;
    node_path out[3] = {{1, {{0, 1}}}, {1, {{0, 1}}}, {1, {{1, 1}}}};
    m.gpu_nic = out;
    const node_model *models[1] = {&m};
    int nodes[1] = {3};
    cluster_gen_opts o = {.fabric = CLUSTER_FABRIC_RAIL};
    FILE *devnull = fopen("/dev/null", "w");
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_write_platform(models, nodes, 1, &o, devnull, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "fabric");
    ck_assert_msg(strstr(err.message, "GPU 0 of hand reaches rail 1 only over the spine"), "%s",
                  err.message);
    /* As a cluster description it is fine: routes are computed by the rules, never searched.
     * GPU 0 reaches the other node's GPU 2 (rail 1) up its rail, through the spine port, down
     * rail 1. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_int_eq(cluster_write_description(models, nodes, 1, &o, mem, &err), 0);
    fclose(mem);
    cluster c;
    ck_assert_msg(sim_cluster_text(text, &c, &err) == 0, "%s", err.message);
    free(text);
    sim_expect_route("n0g0", "n1g2",
                     (const char *[]){"n0_nic0_UP", "su0_rail0_up_UP", "su0_spine_UP",
                                      "su0_rail1_up_DOWN", "n1_nic1_DOWN", NULL});
    cluster_free(&c);
    /* On a fat tree the same nodes are fine. */
    o.fabric = CLUSTER_FABRIC_FAT_TREE;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_write_platform(models, nodes, 1, &o, devnull, &err), 0);
    fclose(devnull);
}
END_TEST

/* Nodes follow the `node` property when the GPUs carry one: four GPUs in one zone, two nodes. */
static const char *node_prop_xml =
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
    "<platform version='4.1'><zone id='z' routing='Full'>\n"
    "<host id='a' speed='1Tf'><prop id='gpu' value='A100-SXM4-80GB'/>%s</host>\n"
    "<host id='b' speed='1Tf'><prop id='gpu' value='A100-SXM4-80GB'/>"
    "<prop id='node' value='x'/></host>\n"
    "<host id='c' speed='1Tf'><prop id='gpu' value='A100-SXM4-80GB'/>"
    "<prop id='node' value='y'/></host>\n"
    "<host id='d' speed='1Tf'><prop id='gpu' value='A100-SXM4-80GB'/>"
    "<prop id='node' value='x'/></host>\n"
    "<link id='l' bandwidth='1GBps' latency='0'/>\n"
    "<route src='a' dst='b'><link_ctn id='l'/></route>\n"
    "<route src='a' dst='c'><link_ctn id='l'/></route>\n"
    "<route src='a' dst='d'><link_ctn id='l'/></route>\n"
    "<route src='b' dst='c'><link_ctn id='l'/></route>\n"
    "<route src='b' dst='d'><link_ctn id='l'/></route>\n"
    "<route src='c' dst='d'><link_ctn id='l'/></route>\n"
    "</zone></platform>\n";

static int load_node_prop(const char *a_prop, cluster *c, ps_error *err)
{
    char xml[4096];
    snprintf(xml, sizeof xml, node_prop_xml, a_prop);
    return sim_cluster_text(xml, c, err);
}

START_TEST(nodes_by_property)
{
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(load_node_prop("<prop id='node' value='y'/>", &c, &err), 0);
    ck_assert_int_eq(c.n_nodes, 2);
    int want[4] = {0, 1, 0, 1}; /* a: y, b: x, c: y, d: x */
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(c.node_of_rank[r], want[r]);
    cluster_free(&c);
}
END_TEST

START_TEST(node_property_on_some_gpus_only)
{
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(load_node_prop("", &c, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "node");
    ck_assert_msg(strstr(err.message, "GPU host 'a' has no node property, but 3 other GPUs"), "%s",
                  err.message);
}
END_TEST

static Suite *fabric_suite(void)
{
    const TTest *const tests[] = {rail_aligned_and_pxn_routes,
                                  rail_across_units,
                                  rail_dgx1_relays,
                                  rail_allreduce_one_nic_per_rail,
                                  oversubscribed_leaf_within,
                                  oversubscribed_leaf_halves_cross_leaf_bandwidth,
                                  fat_tree_default_is_non_blocking,
                                  file_size_grows_linearly,
                                  fabric_option_errors,
                                  rail_refuses_ambiguous_routes,
                                  nodes_by_property,
                                  node_property_on_some_gpus_only,
                                  NULL};
    return suite_of("fabric", "fabric", 120, tests);
}

int main(void)
{
    return suite_run(fabric_suite());
}
