/* test_cluster_desc.c: cluster descriptions (topology/cluster_desc.c) written by hand: the
 * hosts, nodes, routes and transfer times protosim's routing zone gives them (computed here by
 * hand), and every malformed description refused at its file, line, column and key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../sim/base/graph.h"
#include "../sim/base/vocab.h"
#include "../sim/engine/htae.h"
#include "../topology/cluster.h"
#include "../topology/cluster_desc.h"
#include "sim_util.h"
#include "suite_util.h"

/* Two nodes of a 2-GPU PCIe machine: each GPU's PCIe link (16 GB/s, 1 us) to a switch holding
 * the node's one NIC (12.5 GB/s, 2 us), both GPUs on rail 0; one node per leaf, uplinks
 * oversubscribed 2x: a leaf's uplink carries its node's 12.5 GB/s NIC / 2 = 6.25 GB/s. */
static const char *const pcie2 =
    "protosim_cluster: 1\n"                                       /* 1 */
    "fabric: fat-tree\n"                                          /* 2 */
    "nodes_per_leaf: 1\n"                                         /* 3 */
    "oversubscription: 2\n"                                       /* 4 */
    "node_models:\n"                                              /* 5 */
    "  - name: pcie2\n"                                           /* 6 */
    "    gpu: V100-SXM2-32GB\n"                                   /* 7 */
    "    tflops: 125\n"                                           /* 8 */
    "    links:\n"                                                /* 9 */
    "      - {id: a_pcie, bandwidth_GBps: 16, latency_us: 1}\n"   /* 10 */
    "      - {id: b_pcie, bandwidth_GBps: 16, latency_us: 1}\n"   /* 11 */
    "      - {id: nic, bandwidth_GBps: 12.5, latency_us: 2}\n"    /* 12 */
    "    rail_of_gpu: [0, 0]\n"                                   /* 13 */
    "    gpu_to_nic:\n"                                           /* 14 */
    "      - [a_pcie UP, nic UP]\n"                               /* 15 */
    "      - [b_pcie UP, nic UP]\n"                               /* 16 */
    "    gpu_to_gpu:\n"                                           /* 17 */
    "      - {from: 0, to: 1, route: [a_pcie UP, b_pcie DOWN]}\n" /* 18 */
    "nodes:\n"                                                    /* 19 */
    "  - {model: pcie2, count: 2}\n";                             /* 20 */

/* The hosts, ranks, nodes and device of the hand-written cluster, its routes, and each route's
 * bottleneck and latency. */
START_TEST(hand_written_routes)
{
    cluster c;
    ps_error err;
    ck_assert_msg(sim_cluster_text(pcie2, &c, &err) == 0, "%s", err.message);
    ck_assert_int_eq(c.n_gpus, 4);
    ck_assert_int_eq(c.n_nodes, 2);
    static const char *const names[4] = {"n0g0", "n0g1", "n1g0", "n1g1"};
    for (int r = 0; r < 4; r++) {
        ck_assert_str_eq(c.host_names[r], names[r]);
        ck_assert_int_eq(c.node_of_rank[r], r / 2);
        ck_assert_str_eq(c.device[r]->name, "V100-SXM2-32GB");
        ck_close(sg_host_get_speed(c.sg_hosts[r]), 125e12, 1e-12);
        ck_assert_str_eq(sg_host_get_property_value(c.sg_hosts[r], "node"), r < 2 ? "0" : "1");
    }
    sim_expect_route("n0g0", "n0g1", (const char *[]){"n0a_pcie_UP", "n0b_pcie_DOWN", NULL});
    sim_expect_route("n0g1", "n0g0", (const char *[]){"n0b_pcie_UP", "n0a_pcie_DOWN", NULL});
    sim_expect_route("n0g0", "n1g1",
                     (const char *[]){"n0a_pcie_UP", "n0nic_UP", "leaf0_up_UP", "leaf1_up_DOWN",
                                      "n1nic_DOWN", "n1b_pcie_DOWN", NULL});
    ck_close(sg_link_get_bandwidth(sg_link_by_name("leaf1_up_DOWN")), 6.25e9, 1e-12);
    double bw, lat;
    cluster_route(&c, 0, 1, &bw, &lat); /* two PCIe links: 16 GB/s, 2 us */
    ck_close(bw, 16e9, 1e-12);
    ck_close(lat, 2e-6, 1e-9);
    cluster_route(&c, 0, 3, &bw, &lat); /* the uplink binds; 1 + 2 + 2 + 1 us */
    ck_close(bw, 6.25e9, 1e-12);
    ck_close(lat, 6e-6, 1e-9);
    /* a "2x network" what-if doubles every link: routes answer with the new bandwidths */
    ck_assert_int_gt(cluster_scale_bandwidth(&c, 2.0), 0);
    cluster_route(&c, 0, 3, &bw, &lat);
    ck_close(bw, 12.5e9, 1e-12);
    ck_close(lat, 6e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

/* Transfers on it, every overhead off: GPU 0 -> GPU 1 inside node 0 moves 1 GB at 16 GB/s
 * (62.5 ms + 2 us). Both GPUs of node 0 sending 1 GB to node 1 share the NIC (12.5 GB/s) and
 * leaf 0's uplink (6.25 GB/s): 3.125 GB/s each, 320 ms + 6 us. */
START_TEST(hand_written_transfer_times)
{
    cluster c;
    ps_error err;
    ck_assert_msg(sim_cluster_text(pcie2, &c, &err) == 0, "%s", err.message);
    exec_graph *g = graph_create(c.n_gpus);
    int l = graph_label(g, "x");
    uint32_t inside = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t after = graph_add_compute(g, 1, CAT_FORWARD, 0.0, l, 0);
    graph_add_edge(g, inside, after);
    uint32_t t[2];
    for (int i = 0; i < 2; i++) { /* both after the transfer inside the node */
        t[i] = graph_add_transfer(g, i, 2 + i, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
        graph_add_edge(g, after, t[i]);
        graph_add_edge(g, t[i], graph_add_compute(g, 2 + i, CAT_FORWARD, 0.0, l, 0));
    }
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[inside], 62.5e-3 + 2e-6, 1e-9);
    for (int i = 0; i < 2; i++)
        ck_close(r.end[t[i]] - r.end[inside], 320e-3 + 6e-6, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A straggler: `slowdown` makes rank 3's kernels 1.5x as long (cluster.h's per-GPU slowdown,
 * as the XML form's host property); the other ranks stay at 1. */
START_TEST(hand_written_slowdown)
{
    size_t len = strlen(pcie2) + 64;
    char *text = malloc(len);
    snprintf(text, len, "%sslowdown:\n  - {rank: 3, factor: 1.5}\n", pcie2);
    cluster c;
    ps_error err;
    ck_assert_msg(sim_cluster_text(text, &c, &err) == 0, "%s", err.message);
    free(text);
    for (int r = 0; r < 4; r++)
        ck_close(c.slowdown[r], r == 3 ? 1.5 : 1.0, 1e-15);
    cluster_free(&c);
}
END_TEST

/* tests/data/clusters/mixed-fat-tree.yaml (protosim cluster --nodes dgx-h100:2,dgx-v100:3
 * --nodes-per-leaf 2 --oversubscription 2), read without the engine: 40 GPUs in 5 nodes, 3
 * leaves. Leaf 0's uplink carries its 2 DGX H100's 16 NICs of 50 GB/s / 2 = 400 GB/s; leaf 2 holds
 * one DGX-1 (4 NICs of 12.5 GB/s, one per 2 GPUs): 25 GB/s. GPU 0 of node 0 to GPU 3 of node 4:
 * its NIC, both uplinks, then into the DGX-1 through NIC 1 and GPU 3's PCIe link. */
START_TEST(mixed_cluster_layout_and_route)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/clusters/mixed-fat-tree.yaml", ps_data_dir());
    cluster_desc *d;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(cluster_desc_load(path, &d, &err) == 0, "%s", err.message);
    const fabric *f = &d->layout;
    ck_assert_int_eq(f->gpus, 40);
    ck_assert_int_eq(f->nodes, 5);
    ck_assert_int_eq(f->units, 3);
    ck_assert_int_eq(f->node_of_rank[35], 4);
    fabric_hop hops[FABRIC_MAX_HOPS];
    int n = fabric_route(f, 0, 35, hops);
    static const char *const want[] = {"n0g0_nic", "leaf0_up", "leaf2_up", "n4_nic1", "n4g3_pcie"};
    static const int up[] = {1, 1, 0, 0, 0};
    static const double GBps[] = {50, 400, 25, 12.5, 15.75};
    ck_assert_int_eq(n, 5);
    for (int h = 0; h < n; h++) {
        char name[64];
        fabric_link_name(f, hops[h].link, name, sizeof name);
        ck_assert_str_eq(name, want[h]);
        ck_assert_int_eq(hops[h].up, up[h]);
        ck_close(fabric_link_GBps(f, hops[h].link), GBps[h], 1e-12);
    }
    cluster_desc_free(d);
}
END_TEST

/* protosim cluster dgx-h100 --nics 16 puts two NICs behind each GPU's port (rails 0, 2, ...,
 * 14: a node may leave rails out); the description reads back: GPU 3 to GPU 3 of the other node
 * crosses two ports of 2 x 50 GB/s, 2.5 us each. */
START_TEST(more_nics_than_gpus)
{
    cluster c;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 2, .nics_per_node = 16}, &c);
    ck_assert_int_eq(c.n_gpus, 16);
    double bw, lat;
    cluster_route(&c, 3, 11, &bw, &lat);
    ck_close(bw, 100e9, 1e-12);
    ck_close(lat, 5e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

/* 65,536 nodes of one GPU with 16 links each, one node per leaf: 1,048,576 links in the nodes
 * and 65,536 leaf uplinks, more than PS_MAX_PLATFORM_LINKS (1,048,576): refused at `nodes`
 * before anything is allocated for them. */
START_TEST(too_many_links_refused)
{
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "protosim_cluster: 1\nfabric: fat-tree\nnodes_per_leaf: 1\n"
                     "oversubscription: 1\nnode_models:\n  - name: m\n    gpu: H100-SXM5-80GB\n"
                     "    tflops: 1\n    links:\n");
    for (int l = 0; l < 16; l++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "      - {id: l%d, bandwidth_GBps: 1, latency_us: 0}\n", l);
    snprintf(text + n, sizeof text - (size_t)n,
             "    rail_of_gpu: [0]\n    gpu_to_nic: [[l0 UP]]\n    gpu_to_gpu: []\n"
             "nodes:\n  - {model: m, count: 65536}\n");
    char *path = sim_temp_file(".yaml", text);
    cluster_desc *d;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_desc_load(path, &d, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "nodes");
    ck_assert_int_eq(err.line, 30); /* the list of groups */
    ck_assert_msg(strstr(err.message, "the cluster would have 1114112 links, more than 1048576"),
                  "%s", err.message);
    unlink(path);
    free(path);
}
END_TEST

/* One malformed variant of pcie2: `from` replaced by `to`, refused at line:column with the
 * field and a message fragment. */
typedef struct bad_case {
    const char *from, *to;
    int line, column;
    const char *field, *needle;
} bad_case;

static const bad_case bad_cases[] = {
    {"fabric: fat-tree", "fabric: torus", 2, 9, "fabric", "expected one of fat-tree, rail"},
    {"nodes_per_leaf: 1\n", "", 1, 1, "nodes_per_leaf", "missing key 'nodes_per_leaf'"},
    {"protosim_cluster: 1\n", "protosim_cluster: 1\ncolour: red\n", 2, 1, "colour",
     "unknown key 'colour'"},
    {"protosim_cluster: 1", "protosim_cluster: 2", 1, 19, "protosim_cluster",
     "must be between 1 and 1"},
    {"tflops: 125", "tflops: -1", 8, 13, "node_models.tflops", "must be greater than 0"},
    {"{id: b_pcie,", "{id: a_pcie,", 11, 14, "node_models.links.id", "declared twice"},
    {"bandwidth_GBps: 12.5", "bandwidth_GBps: 0.0001", 12, 35, "node_models.links.bandwidth_GBps",
     "is outside [0.001, 1e+07] GB/s"},
    {"latency_us: 2}", "latency_us: 2e6}", 12, 53, "node_models.links.latency_us",
     "is more than 1 s"},
    {"{id: nic,", "{id: 9nic,", 12, 14, "node_models.links.id", "'9nic' is not an id"},
    {"[b_pcie UP, nic UP]", "[b_pcie UP, nicc UP]", 16, 21, "node_models.gpu_to_nic",
     "link 'nicc' is not in this model's links"},
    {"[a_pcie UP, nic UP]", "[a_pcie, nic UP]", 15, 10, "node_models.gpu_to_nic",
     "a hop is 'LINK UP' or 'LINK DOWN', not 'a_pcie'"},
    {"    gpu_to_gpu:\n      - {from: 0, to: 1, route: [a_pcie UP, b_pcie DOWN]}\n",
     "    gpu_to_gpu: []\n", 17, 17, "node_models.gpu_to_gpu", "no route from GPU 0 to GPU 1"},
    {"{from: 0, to: 1,", "{from: 1, to: 0,", 18, 23, "node_models.gpu_to_gpu",
     "pairs are given once, from < to (got 1 -> 0)"},
    {"route: [a_pcie UP, b_pcie DOWN]", "route: []", 18, 33, "node_models.gpu_to_gpu",
     "a route has 1 to 12 links, not 0"},
    {"rail_of_gpu: [0, 0]", "rail_of_gpu: [0, 72]", 13, 22, "node_models.rail_of_gpu",
     "must be between 0 and 71"},
    {"      - [b_pcie UP, nic UP]\n", "", 15, 7, "node_models.gpu_to_nic",
     "1 routes for 2 GPUs (rail_of_gpu): one per GPU"},
    {"rail_of_gpu: [0, 0]", "rail_of_gpu: [0, 1]", 16, 9, "node_models.gpu_to_nic",
     "GPUs 0 and 1 leave through the same NIC nic but are on rails 0 and 1"},
    {"{model: pcie2,", "{model: pcie3,", 20, 13, "nodes.model", "no node model named 'pcie3'"},
    {"gpu: V100-SXM2-32GB", "gpu: V200", 7, 10, "node_models.gpu",
     "node model 'pcie2': unknown device 'V200' (known: "},
    {"nodes_per_leaf: 1", "nodes_per_leaf: 2", 4, 19, "oversubscription",
     "oversubscription 2: all 2 nodes are on one leaf (nodes_per_leaf 2)"},
    {"count: 2}", "count: 70000}", 20, 3, "nodes", "the cluster would have more than 131072 GPUs"},
    {"count: 2}\n", "count: 2}\nslowdown:\n  - {rank: 4, factor: 1.2}\n", 22, 12, "slowdown.rank",
     "must be between 0 and 3"},
    {"count: 2}\n", "count: 2}\nslowdown:\n  - {rank: 1, factor: 0}\n", 22, 23, "slowdown.factor",
     "must be greater than 0"},
    {"count: 2}\n", "count: 2}\nslowdown:\n  - {rank: 1, factor: 2}\n  - {rank: 1, factor: 3}\n",
     23, 12, "slowdown.rank", "rank 1 is given twice"},
    {"nodes:\n",
     "  - name: other\n    gpu: V100-SXM2-32GB\n    tflops: 1\n"
     "    links: [{id: l, bandwidth_GBps: 1, latency_us: 0}]\n    rail_of_gpu: [0]\n"
     "    gpu_to_nic: [[l UP]]\n    gpu_to_gpu: []\nnodes:\n",
     27, 3, "nodes", "node model 'other' has no nodes here"},
};

/* Each variant is refused with exit code PS_EINPUT at its place; nothing is loaded (the engine
 * takes no platform until a description is whole, so one process tries them all). */
START_TEST(malformed_descriptions_are_located)
{
    for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
        const bad_case *b = &bad_cases[k];
        const char *at = strstr(pcie2, b->from);
        ck_assert_msg(at, "case %zu: '%s' not in the base", k, b->from);
        size_t head = (size_t)(at - pcie2), len = strlen(pcie2) + strlen(b->to) + 1;
        char *text = malloc(len);
        snprintf(text, len, "%.*s%s%s", (int)head, pcie2, b->to, at + strlen(b->from));
        char *path = sim_temp_file(".yaml", text);
        cluster c;
        ps_error err;
        ps_error_clear(&err);
        cluster_engine_start();
        int rc = cluster_load(path, ps_data_dir(), &c, &err);
        ck_assert_msg(rc == PS_EINPUT, "case %zu (%s): rc %d", k, b->to, rc);
        ck_assert_str_eq(err.file, path);
        ck_assert_msg(err.line == b->line && err.column == b->column,
                      "case %zu: at %d:%d, want %d:%d (%s)", k, err.line, err.column, b->line,
                      b->column, err.message);
        ck_assert_msg(!strcmp(err.field, b->field), "case %zu: field '%s', want '%s'", k, err.field,
                      b->field);
        ck_assert_msg(strstr(err.message, b->needle), "case %zu: '%s' lacks '%s'", k, err.message,
                      b->needle);
        ck_assert_ptr_null(c.host_names);
        unlink(path);
        free(path);
        free(text);
    }
}
END_TEST

/* Which loader reads a file: content starting with '<' is XML whatever the name; a description
 * loads from a file named .xml; YAML that is no description is refused as one when not named
 * .xml, and as a malformed platform when it is. */
START_TEST(format_sniffed_from_content)
{
    cluster c;
    ps_error err;
    char *path = sim_temp_file(".yaml", "fabric: rail\n");
    ps_error_clear(&err);
    cluster_engine_start();
    ck_assert_int_eq(cluster_load(path, ps_data_dir(), &c, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "missing key 'protosim_cluster'"), "%s", err.message);
    unlink(path);
    free(path);
    path = sim_temp_file(".xml", "fabric: rail\n");
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_load(path, ps_data_dir(), &c, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "not a valid XML file"), "%s", err.message);
    unlink(path);
    free(path);
    ck_assert_msg(sim_cluster_text(pcie2, &c, &err) == 0, "%s", err.message); /* a .xml name */
    ck_assert_int_eq(c.n_gpus, 4);
    cluster_free(&c);
}
END_TEST

static Suite *cluster_desc_suite(void)
{
    const TTest *const tests[] = {hand_written_routes,
                                  hand_written_transfer_times,
                                  hand_written_slowdown,
                                  mixed_cluster_layout_and_route,
                                  more_nics_than_gpus,
                                  too_many_links_refused,
                                  malformed_descriptions_are_located,
                                  format_sniffed_from_content,
                                  NULL};
    return suite_of("cluster_desc", "descriptions", 0, tests);
}

int main(void)
{
    return suite_run(cluster_desc_suite());
}
