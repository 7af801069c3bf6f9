/* test_platform.c: the platform writer (cluster_write_platform) on node models built by hand,
 * and the templates that go through it (dgx-2, dgx-h200): routes checked by bandwidth and
 * latency computed by hand. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/graph.h"
#include "../sim/base/vocab.h"
#include "../sim/engine/htae.h"
#include "../topology/cluster.h"
#include "sim_util.h"
#include "suite_util.h"

static void load_ok(const char *path, cluster *c)
{
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, &err);
    ck_assert_msg(rc == 0, "%s: %s", path, err.message);
}

/* Two GPUs with 40 GB/s ports (1 us) to a switch; both reach their one NIC (12.5 GB/s, 2 us)
 * through a shared 30 GB/s uplink (0.5 us). */
static void two_gpu_model(node_model *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->kind, sizeof m->kind, "hand");
    snprintf(m->gpu, sizeof m->gpu, "A100-SXM4-80GB");
    m->flops = 312e12;
    m->gpus = 2;
    m->nics = 1;
    m->nic_GBps = 12.5;
    m->n_links = 4;
    m->links = calloc(4, sizeof *m->links);
    const node_link links[4] = {
        {"g0_port", 40, 1e-6}, {"g1_port", 40, 1e-6}, {"_up", 30, 0.5e-6}, {"_nic0", 12.5, 2e-6}};
    memcpy(m->links, links, sizeof links);
    m->gpu_gpu = calloc(4, sizeof *m->gpu_gpu);
    m->gpu_gpu[0 * 2 + 1] = (node_path){2, {{0, 1}, {1, 0}}};
    m->gpu_gpu[1 * 2 + 0] = (node_path){2, {{1, 1}, {0, 0}}};
    m->gpu_nic = calloc(2, sizeof *m->gpu_nic);
    m->nic_of_gpu = calloc(2, sizeof *m->nic_of_gpu);
    for (int g = 0; g < 2; g++)
        m->gpu_nic[g] = (node_path){3, {{g, 1}, {2, 1}, {3, 1}}};
}

/* Two copies of the hand model: inside a node GPU 0 -> 1 crosses both ports (40 GB/s, 2 us);
 * node 0's GPU 0 -> node 1's GPU 1 crosses port, uplink, NIC, the two fabric ports (12.5 GB/s
 * each: one NIC per node) and back down: 12.5 GB/s, 2 x (1 + 0.5 + 2) = 7 us. */
START_TEST(hand_model_routes)
{
    node_model m;
    two_gpu_model(&m);
    char path[] = "/tmp/protosim_test_platform_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    const node_model *models[1] = {&m};
    int nodes[1] = {2};
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_write_platform(models, nodes, 1, NULL, f, &err), 0);
    fclose(f);
    cluster c;
    load_ok(path, &c);
    remove(path);
    ck_assert_int_eq(c.n_gpus, 4);
    ck_assert_int_eq(c.n_nodes, 2);
    ck_assert_str_eq(c.host_names[3], "n1g1");
    double bw, lat;
    cluster_route(&c, 0, 1, &bw, &lat);
    ck_assert_double_eq_tol(bw, 40e9, 1);
    ck_assert_double_eq_tol(lat, 2e-6, 1e-12);
    cluster_route(&c, 1, 0, &bw, &lat);
    ck_assert_double_eq_tol(bw, 40e9, 1);
    cluster_route(&c, 0, 3, &bw, &lat);
    ck_assert_double_eq_tol(bw, 12.5e9, 1);
    ck_assert_double_eq_tol(lat, 7e-6, 1e-12);
    cluster_free(&c);
    node_model_free(&m);
}
END_TEST

static void generate_load(const char *kind, int nodes, cluster *c)
{
    char path[] = "/tmp/protosim_test_platform_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    cluster_gen_opts o = {.nodes = nodes};
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate(kind, &o, f, &err), 0);
    fclose(f);
    load_ok(path, c);
    remove(path);
}

/* DGX-2: 16 V100-SXM3 per node, 150 GB/s NVSwitch ports (0.7 us each); off node through the
 * GPU's PCIe gen3 switch link (15.75 GB/s, 1 us) and the EDR NIC it shares with its neighbour
 * (12.5 GB/s, 2.5 us): 12.5 GB/s, 2 x 3.5 us. */
START_TEST(dgx2_template)
{
    cluster c;
    generate_load("dgx-2", 2, &c);
    ck_assert_int_eq(c.n_gpus, 32);
    ck_assert_str_eq(c.device[0]->name, "V100-SXM3-32GB");
    double bw, lat;
    cluster_route(&c, 0, 15, &bw, &lat);
    ck_assert_double_eq_tol(bw, 150e9, 1);
    ck_assert_double_eq_tol(lat, 1.4e-6, 1e-12);
    cluster_route(&c, 1, 17, &bw, &lat);
    ck_assert_double_eq_tol(bw, 12.5e9, 1);
    ck_assert_double_eq_tol(lat, 7e-6, 1e-12);
    cluster_free(&c);
}
END_TEST

START_TEST(dgx_h200_template)
{
    cluster c;
    generate_load("dgx-h200", 1, &c);
    ck_assert_int_eq(c.n_gpus, 8);
    ck_assert_str_eq(c.device[7]->name, "H200-SXM-141GB");
    double bw, lat;
    cluster_route(&c, 0, 7, &bw, &lat);
    ck_assert_double_eq_tol(bw, 450e9, 1);
    cluster_free(&c);
}
END_TEST

/* Write a platform for opts into a temporary file and load it. */
static void generate_opts_load(const char *kind, const cluster_gen_opts *o, cluster *c)
{
    char path[] = "/tmp/protosim_test_platform_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate(kind, o, f, &err), 0);
    fclose(f);
    load_ok(path, c);
    remove(path);
}

/* DGX B200: NVLink 5 through NVSwitches, 18 x 50 GB/s = 900 GB/s per GPU per direction (two
 * 0.7 us ports); off node one 400 Gb/s ConnectX-7 per GPU, 50 GB/s, 2 x 2.5 us. */
START_TEST(dgx_b200_template)
{
    cluster c;
    generate_load("dgx-b200", 2, &c);
    ck_assert_int_eq(c.n_gpus, 16);
    ck_assert_str_eq(c.device[15]->name, "B200-SXM-180GB");
    double bw, lat;
    cluster_route(&c, 0, 7, &bw, &lat);
    ck_assert_double_eq_tol(bw, 900e9, 1);
    ck_assert_double_eq_tol(lat, 1.4e-6, 1e-12);
    cluster_route(&c, 3, 11, &bw, &lat);
    ck_assert_double_eq_tol(bw, 50e9, 1);
    ck_assert_double_eq_tol(lat, 5e-6, 1e-12);
    cluster_free(&c);
}
END_TEST

/* NVL72 racks: a node is a rack of 72 GPUs in one NVLink domain, 900 GB/s per GPU per
 * direction to any other GPU of the rack (two 0.7 us ports, through the switch trays); off the
 * rack one NIC per GPU: GB200's ConnectX-7 400 Gb/s = 50 GB/s, 2 x 2.5 us. */
START_TEST(gb200_nvl72_template)
{
    cluster c;
    generate_load("gb200-nvl72", 2, &c);
    ck_assert_int_eq(c.n_gpus, 144);
    ck_assert_str_eq(c.device[143]->name, "GB200");
    double bw, lat;
    cluster_route(&c, 0, 71, &bw, &lat);
    ck_assert_double_eq_tol(bw, 900e9, 1);
    ck_assert_double_eq_tol(lat, 1.4e-6, 1e-12);
    cluster_route(&c, 5, 72 + 5, &bw, &lat);
    ck_assert_double_eq_tol(bw, 50e9, 1);
    ck_assert_double_eq_tol(lat, 5e-6, 1e-12);
    cluster_free(&c);
}
END_TEST

/* GB300 NVL72 with --gpus-per-node 64: 64 GPUs of each rack, ranks rack-major; ConnectX-8
 * 800 Gb/s = 100 GB/s per GPU off the rack. */
START_TEST(gb300_nvl72_racks_of_64)
{
    cluster c;
    cluster_gen_opts o = {.nodes = 2, .gpus_per_node = 64};
    generate_opts_load("gb300-nvl72", &o, &c);
    ck_assert_int_eq(c.n_gpus, 128);
    ck_assert_str_eq(c.device[0]->name, "GB300");
    double bw, lat;
    cluster_route(&c, 0, 63, &bw, &lat);
    ck_assert_double_eq_tol(bw, 900e9, 1);
    cluster_route(&c, 0, 64, &bw, &lat);
    ck_assert_double_eq_tol(bw, 100e9, 1);
    cluster_free(&c);
}
END_TEST

/* DGX B300: B300 GPUs, NVLink 5 at 900 GB/s, ConnectX-8 800 Gb/s NICs (100 GB/s). */
START_TEST(dgx_b300_template)
{
    cluster c;
    double bw, lat;
    generate_load("dgx-b300", 2, &c);
    ck_assert_str_eq(c.device[0]->name, "B300-SXM-288GB");
    cluster_route(&c, 0, 7, &bw, &lat);
    ck_assert_double_eq_tol(bw, 900e9, 1);
    cluster_route(&c, 0, 8, &bw, &lat);
    ck_assert_double_eq_tol(bw, 100e9, 1);
    cluster_free(&c);
}
END_TEST

/* DGX H800: the H100's node with the export NVLink, 8 x 25 GB/s = 200 GB/s per GPU per
 * direction; 400 Gb/s NICs (50 GB/s). */
START_TEST(dgx_h800_template)
{
    cluster c;
    double bw, lat;
    generate_load("dgx-h800", 2, &c);
    ck_assert_str_eq(c.device[0]->name, "H800-SXM5-80GB");
    cluster_route(&c, 0, 7, &bw, &lat);
    ck_assert_double_eq_tol(bw, 200e9, 1);
    cluster_route(&c, 0, 8, &bw, &lat);
    ck_assert_double_eq_tol(bw, 50e9, 1);
    cluster_free(&c);
}
END_TEST

/* --gpu: a DGX A100 with the 40 GB part: its GPUs (40 GiB, 1555 GB/s), the node unchanged
 * (300 GB/s NVSwitch ports). */
START_TEST(gpu_option_replaces_the_kinds_gpu)
{
    cluster c;
    cluster_gen_opts o = {.nodes = 1, .gpu = "A100-SXM4-40GB"};
    generate_opts_load("dgx-a100", &o, &c);
    ck_assert_int_eq(c.n_gpus, 8);
    for (int r = 0; r < 8; r++)
        ck_assert_str_eq(c.device[r]->name, "A100-SXM4-40GB");
    ck_assert_double_eq_tol(c.device[0]->hbm_bytes, 40.0 * 1073741824.0, 1);
    double bw, lat;
    cluster_route(&c, 0, 5, &bw, &lat);
    ck_assert_double_eq_tol(bw, 300e9, 1);
    cluster_free(&c);
}
END_TEST

START_TEST(gpu_option_rejects_an_unknown_model)
{
    cluster_gen_opts o = {.nodes = 1, .gpu = "A100-SXM4-96GB"};
    ps_error err;
    ps_error_clear(&err);
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(cluster_generate("dgx-a100", &o, devnull, &err), PS_EINPUT);
    fclose(devnull);
    ck_assert_str_eq(err.field, "gpu");
    ck_assert_msg(strstr(err.message, "--gpu: unknown device 'A100-SXM4-96GB' (known: ") ==
                      err.message,
                  "%s", err.message);
}
END_TEST

/* Two 1 GB transfers at once, a -> b and c -> d; the time of the first. */
static double two_transfers(cluster *c, int a, int b, int x, int y)
{
    exec_graph *g = graph_create(c->n_gpus);
    int l = graph_label(g, "x");
    uint32_t t[2] = {graph_add_transfer(g, a, b, STREAM_PP, 1e9, CAT_PP_COMM, l, 0),
                     graph_add_transfer(g, x, y, STREAM_PP, 1e9, CAT_PP_COMM, l, 0)};
    int peer[2] = {b, y};
    for (int i = 0; i < 2; i++)
        graph_add_edge(g, t[i], graph_add_compute(g, peer[i], CAT_FORWARD, 0.0, l, 0));
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, c, &o, &r);
    double d = r.end[t[0]] - r.start[t[0]];
    htae_result_free(&r);
    graph_free(g);
    return d;
}

/* Four one-GPU A100 nodes (one 25 GB/s HDR NIC each, 2.5 us), two per leaf, leaf uplinks
 * oversubscribed 2:1: each leaf's uplink carries 2 x 25 / 2 = 25 GB/s. Two 1 GB transfers
 * across the leaves at once (0 -> 2, 1 -> 3) share leaf 0's uplink: 12.5 GB/s each, 80 ms (+ the
 * two NICs' 5 us); inside the leaves (0 -> 1, 2 -> 3) each has its NIC: 40 ms. Non-blocking,
 * the cross-leaf pair takes 40 ms too. */
START_TEST(oversubscribed_leaf_halves_cross_leaf_bandwidth)
{
    cluster c;
    cluster_gen_opts o = {
        .nodes = 4, .gpus_per_node = 1, .nodes_per_leaf = 2, .oversubscription = 2};
    generate_opts_load("dgx-a100", &o, &c);
    ck_close(two_transfers(&c, 0, 2, 1, 3), 0.080 + 5e-6, 1e-9);
    ck_close(two_transfers(&c, 0, 1, 2, 3), 0.040 + 5e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

START_TEST(non_blocking_fat_tree_never_binds)
{
    cluster c;
    cluster_gen_opts o = {.nodes = 4, .gpus_per_node = 1, .nodes_per_leaf = 2};
    generate_opts_load("dgx-a100", &o, &c);
    ck_close(two_transfers(&c, 0, 2, 1, 3), 0.040 + 5e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

/* A rail-optimized pair of DGX H100 nodes: a ring all-reduce of S = 1 GB over the 16 GPUs runs
 * eight channels, each leaving every node through one NIC: every NIC (rail) carries one
 * channel's 2(n-1)/n S/8 = 0.234375 GB out of its node, and no rail uplink carries anything
 * (both nodes are in one scalable unit). */
START_TEST(rail_allreduce_uses_one_nic_per_rail)
{
    cluster c;
    cluster_gen_opts o = {.nodes = 2, .fabric = CLUSTER_FABRIC_RAIL};
    generate_opts_load("dgx-h100", &o, &c);
    exec_graph *g = graph_create(16);
    int ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    uint32_t ids[16];
    graph_add_collective(g, COLL_ALLREDUCE, graph_add_group(g, ranks, 16), STREAM_DP, 1e9,
                         CAT_DP_COMM, graph_label(g, "ar"), 0, ids);
    htae_options opt = sim_bare_options();
    opt.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &opt, &r);
    char name[32];
    for (int node = 0; node < 2; node++) {
        for (int gpu = 0; gpu < 8; gpu++) {
            snprintf(name, sizeof name, "n%dg%d_nic_UP", node, gpu);
            ck_close(sim_find_link(&r, name)->bytes, 0.234375e9, 1e-9);
        }
    }
    for (int i = 0; i < r.n_links; i++)
        ck_assert_msg(!strstr(r.links[i].name, "_up_"), "%s carries traffic", r.links[i].name);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

static size_t platform_bytes(int nodes)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cluster_gen_opts o = {.nodes = nodes};
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-h100", &o, f, &err), 0);
    fclose(f);
    free(buf);
    return len;
}

/* The platform grows linearly with the node count (a tree of zones, not a route per node
 * pair): doubling the nodes at most doubles the file, give or take the leaf-pair routes of
 * pods that are not yet full (32 leaves) and longer names. */
START_TEST(platform_grows_linearly)
{
    size_t a = platform_bytes(64), b = platform_bytes(128), d = platform_bytes(512);
    ck_assert_msg(b < 2.2 * a && d < 4.4 * b, "64: %zu, 128: %zu, 512: %zu bytes", a, b, d);
}
END_TEST

static void expect_fabric_error(const cluster_gen_opts *o, const char *field, const char *text)
{
    FILE *devnull = fopen("/dev/null", "w");
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-h100", o, devnull, &err), PS_EINPUT);
    fclose(devnull);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, text), "%s", err.message);
}

START_TEST(fabric_errors_name_the_option)
{
    cluster_gen_opts bad = {.nodes = 2, .fabric = (cluster_fabric)7};
    expect_fabric_error(&bad, "fabric", "--fabric: unknown fabric 7 (known: fat-tree, rail)");
    cluster_gen_opts one_leaf = {.nodes = 2, .oversubscription = 2};
    expect_fabric_error(&one_leaf, "oversubscription", "all 2 nodes are on one leaf");
    cluster_gen_opts below = {.nodes = 2, .oversubscription = 0.5, .nodes_per_leaf = 1};
    expect_fabric_error(&below, "oversubscription", "at least 1");
}
END_TEST

static Suite *platform_suite(void)
{
    const TTest *const tests[] = {hand_model_routes,
                                  dgx2_template,
                                  dgx_h200_template,
                                  dgx_b200_template,
                                  gb200_nvl72_template,
                                  gb300_nvl72_racks_of_64,
                                  dgx_b300_template,
                                  dgx_h800_template,
                                  gpu_option_replaces_the_kinds_gpu,
                                  gpu_option_rejects_an_unknown_model,
                                  oversubscribed_leaf_halves_cross_leaf_bandwidth,
                                  non_blocking_fat_tree_never_binds,
                                  rail_allreduce_uses_one_nic_per_rail,
                                  platform_grows_linearly,
                                  fabric_errors_name_the_option,
                                  NULL};
    return suite_of("platform", "writer", 0, tests);
}

int main(void)
{
    return suite_run(platform_suite());
}
