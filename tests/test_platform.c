/* test_platform.c: the platform writer (cluster_write_platform) on node models built by hand,
 * and the templates that go through it (dgx-2, dgx-h200): routes checked by bandwidth and
 * latency computed by hand. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../topology/cluster.h"

static const char *data_dir(void)
{
    const char *d = getenv("PROTOSIM_DATA_DIR");
    return d ? d : ".";
}

static void load_ok(const char *path, cluster *c)
{
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, data_dir(), c, &err);
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

static Suite *platform_suite(void)
{
    Suite *s = suite_create("platform");
    TCase *t = tcase_create("writer");
    tcase_add_test(t, hand_model_routes);
    tcase_add_test(t, dgx2_template);
    tcase_add_test(t, dgx_h200_template);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(platform_suite());
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
