/* test_cluster.c: unit tests of topology/: device table, cluster loading, the DGX generator, and
 * the link timings SimGrid gives on a loaded platform. Each test forks: one engine per process. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>

#include "../sim/base/vocab.h"
#include "../topology/cluster.h"
#include "suite_util.h"

static void fixture_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/tests/data/cluster/%s", ps_data_dir(), name);
}

static void bundled_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/topology/clusters/%s", ps_data_dir(), name);
}

static void load_ok(const char *path, cluster *c)
{
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, &err);
    if (rc)
        ps_error_print(&err, stderr);
    ck_assert_msg(rc == 0, "%s: %s:%d %s: %s", path, err.file, err.line, err.field, err.message);
}

/* Load a fixture that must fail with PS_EINPUT; returns the error for further checks. */
static ps_error load_fails(const char *fixture)
{
    char path[1024];
    fixture_path(path, sizeof path, fixture);
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), &c, &err);
    ck_assert_msg(rc == PS_EINPUT, "%s: expected PS_EINPUT, got %d", fixture, rc);
    ck_assert_int_eq(err.code, PS_EINPUT);
    ck_assert_ptr_null(c.host_names);
    return err;
}

/* Generate KIND into a temporary file and return its path (in buf). */
static void generate_to(const char *kind, const cluster_gen_opts *o, char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/protosim_test_cluster_%d.xml", (int)getpid());
    FILE *f = fopen(buf, "w");
    ck_assert_ptr_nonnull(f);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate(kind, o, f, &err), 0);
    fclose(f);
}

/* Generate a 2-node platform of 8 GPUs per node, load it into c, and check its 16 GPUs: host
 * n<node>g<j>, node of rank r = r / 8. */
static void load_two_nodes_of_8(const char *kind, const cluster_gen_opts *o, cluster *c)
{
    char path[256];
    generate_to(kind, o, path, sizeof path);
    load_ok(path, c);
    remove(path);
    ck_assert_int_eq(c->n_gpus, 16);
    ck_assert_int_eq(c->n_nodes, 2);
    for (int r = 0; r < 16; r++) {
        char want[16];
        snprintf(want, sizeof want, "n%dg%d", r / 8, r % 8);
        ck_assert_str_eq(c->host_names[r], want);
        ck_assert_int_eq(c->node_of_rank[r], r / 8);
    }
}

/* ---- device table ---- */

START_TEST(devices_bundled)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml", ps_data_dir());
    device_table t;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(device_table_load(path, &t, &err), 0);
    ck_assert_int_ge(t.n, 8);

    const device_spec *a = device_table_find(&t, "A100-SXM4-80GB");
    ck_assert_ptr_nonnull(a);
    ck_assert_double_eq_tol(a->peak_flops[PREC_BF16], 312e12, 1);
    ck_assert_double_eq_tol(a->peak_flops[PREC_TF32], 156e12, 1);
    ck_assert_double_eq_tol(a->peak_flops[PREC_FP32], 19.5e12, 1);
    ck_assert_double_eq_tol(a->hbm_bw, 2039e9, 1);
    ck_assert_double_eq_tol(a->hbm_bytes, 80.0 * 1073741824.0, 1);
    ck_assert_int_eq(a->sms, 108);

    const device_spec *v = device_table_find(&t, "V100-SXM2-32GB");
    ck_assert_ptr_nonnull(v);
    /* No BF16 on Volta: the table gives the fp16 figure. */
    ck_assert_double_eq_tol(v->peak_flops[PREC_BF16], v->peak_flops[PREC_FP16], 1);
    ck_assert_double_eq_tol(v->peak_flops[PREC_TF32], v->peak_flops[PREC_FP32], 1);

    const device_spec *h = device_table_find(&t, "H200-SXM-141GB");
    ck_assert_ptr_nonnull(h);
    ck_assert_double_eq_tol(h->hbm_bytes, 141e9, 1);
    ck_assert_ptr_nonnull(device_table_find(&t, "H100-SXM5-80GB"));
    ck_assert_ptr_null(device_table_find(&t, "A100"));

    /* AMD's datasheets: an MI250X GCD is half the package (110 of 220 CUs, 383 / 2 TFLOP/s of
     * fp16, 3276.8 / 2 GB/s, 64 GiB); the MI300X's 192 GB are decimal, its fp8 twice its fp16 (2614.9),
     * and CDNA3 has TF32 (653.7) where CDNA2 gives its fp32 figure */
    const device_spec *x = device_table_find(&t, "MI250X-GCD");
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(x->arch, ARCH_CDNA2);
    ck_assert_int_eq(x->sms, 220 / 2);
    ck_assert_double_eq_tol(x->peak_flops[PREC_FP16], 383e12 / 2, 1);
    ck_assert_double_eq_tol(x->peak_flops[PREC_TF32], x->peak_flops[PREC_FP32], 1);
    ck_assert_double_eq_tol(x->hbm_bw, 3276.8e9 / 2, 1);
    ck_assert_double_eq_tol(x->hbm_bytes, 64.0 * 1073741824.0, 1);
    ck_assert_double_eq(x->peak_flops[PREC_FP8], 0.0);
    const device_spec *m3 = device_table_find(&t, "MI300X");
    ck_assert_ptr_nonnull(m3);
    ck_assert_int_eq(m3->arch, ARCH_CDNA3);
    ck_assert_int_eq(m3->sms, 304);
    ck_assert_double_eq_tol(m3->peak_flops[PREC_BF16], 1307.4e12, 1);
    ck_assert_double_eq_tol(m3->peak_flops[PREC_FP8], 2614.9e12, 1); /* 2 x 1307.45 */
    ck_assert_double_eq_tol(m3->peak_flops[PREC_TF32], 653.7e12, 1);
    ck_assert_double_eq_tol(m3->hbm_bw, 5300e9, 1);
    ck_assert_double_eq_tol(m3->hbm_bytes, 192e9, 1);
    ck_assert_double_eq(m3->l2_bytes, 0.0);
    device_table_free(&t);
}
END_TEST

START_TEST(devices_bad_key)
{
    char path[1024];
    fixture_path(path, sizeof path, "bad_devices.yaml");
    device_table t;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(device_table_load(path, &t, &err), PS_EINPUT);
    ck_assert_int_eq(err.line, 12);
    ck_assert_int_eq(err.column, 3);
    ck_assert_str_eq(err.field, "fp32_tflop");
    ck_assert_ptr_null(t.specs);
}
END_TEST

/* ---- loading ---- */

START_TEST(dgx4_loads)
{
    char path[1024];
    bundled_path(path, sizeof path, "dgx4.xml");
    cluster c;
    load_ok(path, &c);
    ck_assert_int_eq(c.n_gpus, 4);
    ck_assert_int_eq(c.n_nodes, 1);
    for (int r = 0; r < 4; r++) {
        char want[16];
        snprintf(want, sizeof want, "n0g%d", r);
        ck_assert_str_eq(c.host_names[r], want);
        ck_assert_int_eq(c.node_of_rank[r], 0);
        ck_assert_str_eq(c.device[r]->name, "A100-SXM4-80GB");
    }
    ck_assert_double_eq_tol(c.device[0]->peak_flops[PREC_BF16], 312e12, 1);
    ck_assert_double_eq_tol(c.device[0]->hbm_bw, 2039e9, 1);
    /* NVSwitch: any GPU pair gets a GPU's full 300 GB/s per direction. */
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n0g0"), sg_host_by_name("n0g3")), 300e9, 1);
    ck_assert_double_eq_tol(sg_host_get_speed(sg_host_by_name("n0g2")), 312e12, 1);
    cluster_free(&c);
}
END_TEST

START_TEST(generated_a100_two_nodes)
{
    cluster_gen_opts o = {.nodes = 2};
    cluster c;
    load_two_nodes_of_8("dgx-a100", &o, &c);
    /* Across nodes the NIC (HDR, 25 GB/s) binds; NIC ports 2.5 us each. */
    sg_host_t a = sg_host_by_name("n0g0"), b = sg_host_by_name("n1g5");
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(a, b), 25e9, 1);
    ck_assert_double_eq_tol(sg_host_get_route_latency(a, b), 5e-6, 1e-12);
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(a, sg_host_by_name("n0g7")), 300e9, 1);
    cluster_free(&c);
}
END_TEST

START_TEST(generated_v100_cube_mesh)
{
    char path[256];
    cluster_gen_opts o = {.nodes = 2};
    generate_to("dgx-v100", &o, path, sizeof path);
    cluster c;
    load_ok(path, &c);
    remove(path);
    ck_assert_int_eq(c.n_gpus, 16);
    ck_assert_str_eq(c.device[0]->name, "V100-SXM2-32GB");
    /* GPU0-GPU3 have two NVLink2 links, GPU0-GPU1 one, GPU0-GPU5 none (PCIe). */
    sg_host_t g0 = sg_host_by_name("n0g0");
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(g0, sg_host_by_name("n0g3")), 50e9, 1);
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(g0, sg_host_by_name("n0g1")), 25e9, 1);
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(g0, sg_host_by_name("n0g5")), 15.75e9, 1);
    /* Off node: one EDR NIC per GPU pair, 12.5 GB/s. */
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(g0, sg_host_by_name("n1g1")), 12.5e9, 1);
    cluster_free(&c);
}
END_TEST

START_TEST(generated_h100_one_node)
{
    char path[256];
    cluster_gen_opts o = {.nodes = 1};
    generate_to("dgx-h100", &o, path, sizeof path);
    cluster c;
    load_ok(path, &c);
    remove(path);
    ck_assert_int_eq(c.n_gpus, 8);
    ck_assert_int_eq(c.n_nodes, 1);
    ck_assert_str_eq(c.device[7]->name, "H100-SXM5-80GB");
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n0g1"), sg_host_by_name("n0g6")), 450e9, 1);
    cluster_free(&c);
}
END_TEST

START_TEST(generated_oversubscribed_fabric)
{
    char path[256];
    cluster_gen_opts o = {.nodes = 3,
                          .nics_per_node = 2,
                          .nic_gbps = 400,
                          .oversubscription = 4,
                          .nodes_per_leaf = 2};
    generate_to("dgx-a100", &o, path, sizeof path);
    cluster c;
    load_ok(path, &c);
    remove(path);
    ck_assert_int_eq(c.n_gpus, 24);
    ck_assert_int_eq(c.n_nodes, 3);
    ck_assert_int_eq(c.node_of_rank[23], 2);
    /* 2 NDR NICs = 100 GB/s per node, a NIC (50 GB/s) shared by four GPUs. Nodes 0 and 1 share
     * a leaf (the NIC binds); node 2 is alone on the second leaf, whose uplink is 100 / 4 = 25
     * GB/s (the first leaf's: 2 x 100 / 4 = 50 GB/s). */
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n0g0"), sg_host_by_name("n1g7")), 50e9, 1);
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n0g0"), sg_host_by_name("n2g7")), 25e9, 1);
    cluster_free(&c);
}
END_TEST

/* The bundled files are the generator's output: regenerating them must change nothing. */
static void check_bundled_matches(const char *name, const char *kind, cluster_gen_opts o)
{
    char path[1024];
    bundled_path(path, sizeof path, name);
    char *bundled = NULL, *fresh = NULL;
    size_t nb = 0, nf = 0;
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    FILE *m = open_memstream(&bundled, &nb);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(f);
    fclose(m);
    m = open_memstream(&fresh, &nf);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate(kind, &o, m, &err), 0);
    fclose(m);
    ck_assert_msg(nb == nf && !memcmp(bundled, fresh, nb),
                  "%s differs from `protosim cluster %s` output: regenerate it", name, kind);
    free(bundled);
    free(fresh);
}

START_TEST(bundled_are_generated)
{
    check_bundled_matches("dgx4.xml", "dgx-a100",
                          (cluster_gen_opts){.nodes = 1, .gpus_per_node = 4});
    check_bundled_matches("dgx-a100-2node.xml", "dgx-a100", (cluster_gen_opts){.nodes = 2});
}
END_TEST

START_TEST(generate_rejects_bad_options)
{
    ps_error err;
    FILE *devnull = fopen("/dev/null", "w");
    cluster_gen_opts o = {.nodes = 1};
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-x200", &o, devnull, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "kind");
    o.nodes = 0;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-a100", &o, devnull, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "nodes");
    o = (cluster_gen_opts){.nodes = 1, .gpus_per_node = 16};
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-v100", &o, devnull, &err), PS_EINPUT);
    o = (cluster_gen_opts){.nodes = 1, .oversubscription = 0.5};
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_generate("dgx-h100", &o, devnull, &err), PS_EINPUT);
    fclose(devnull);
}
END_TEST

START_TEST(rank_property_order)
{
    char path[1024];
    fixture_path(path, sizeof path, "reverse_rank.xml");
    cluster c;
    load_ok(path, &c);
    ck_assert_int_eq(c.n_gpus, 4);
    ck_assert_str_eq(c.host_names[0], "g3");
    ck_assert_str_eq(c.host_names[1], "g2");
    ck_assert_str_eq(c.host_names[2], "g1");
    ck_assert_str_eq(c.host_names[3], "g0");
    cluster_free(&c);
}
END_TEST

START_TEST(natural_name_order)
{
    char path[1024];
    fixture_path(path, sizeof path, "natural_order.xml");
    cluster c;
    load_ok(path, &c);
    ck_assert_int_eq(c.n_gpus, 4);
    ck_assert_str_eq(c.host_names[0], "n0g0");
    ck_assert_str_eq(c.host_names[1], "n0g1");
    ck_assert_str_eq(c.host_names[2], "n0g2");
    ck_assert_str_eq(c.host_names[3], "n0g10");
    cluster_free(&c);
}
END_TEST

START_TEST(malformed_xml)
{
    ps_error err = load_fails("malformed.xml");
    ck_assert_int_eq(err.line, 8);
    ck_assert_ptr_nonnull(strstr(err.file, "malformed.xml"));
}
END_TEST

START_TEST(missing_file)
{
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    ck_assert_int_eq(cluster_load("/nonexistent/protosim.xml", ps_data_dir(), &c, &err), PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.message, "cannot open"));
    ck_assert_str_eq(err.file, "/nonexistent/protosim.xml");
}
END_TEST

/* The engine is started explicitly (cluster_engine_start), never behind the caller's back: a
 * load before it is an internal error and leaves nothing loaded. */
START_TEST(load_needs_the_engine)
{
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/clusters/dgx4.xml", ps_data_dir());
    ck_assert_int_eq(cluster_load(path, ps_data_dir(), &c, &err), PS_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cluster_engine_start"));
    ck_assert_int_eq(c.n_gpus, 0);
    ps_error_clear(&err);
    cluster_engine_start();
    ck_assert_msg(cluster_load(path, ps_data_dir(), &c, &err) == 0, "%s", err.message);
    ck_assert_int_eq(c.n_gpus, 4);
    cluster_free(&c);
}
END_TEST

START_TEST(unknown_gpu)
{
    ps_error err = load_fails("unknown_gpu.xml");
    ck_assert_str_eq(err.field, "gpu");
    ck_assert_int_eq(err.line, 7);
    ck_assert_ptr_nonnull(strstr(err.message, "'g1'"));
    ck_assert_ptr_nonnull(strstr(err.message, "R100-SXM-288GB"));
    ck_assert_ptr_nonnull(strstr(err.message, "A100-SXM4-80GB")); /* lists the known ones */
}
END_TEST

START_TEST(duplicate_rank)
{
    ps_error err = load_fails("dup_rank.xml");
    ck_assert_str_eq(err.field, "rank");
    ck_assert_ptr_nonnull(strstr(err.message, "'g1'"));
    ck_assert_ptr_nonnull(strstr(err.message, "'g2'"));
}
END_TEST

START_TEST(bad_ranks)
{
    static const char *const fixture[] = {"gap_rank.xml", "partial_rank.xml", "bad_rank.xml"};
    static const char *const culprit[] = {"'g2'", "'g2'", "'g1'"};
    ps_error err = load_fails(fixture[_i]);
    ck_assert_str_eq(err.field, "rank");
    ck_assert_ptr_nonnull(strstr(err.message, culprit[_i]));
    ck_assert_int_gt(err.line, 0);
}
END_TEST

START_TEST(no_gpu)
{
    ps_error err = load_fails("no_gpu.xml");
    ck_assert_str_eq(err.field, "gpu");
}
END_TEST

/* ---- timings on a loaded platform (SimGrid C API directly) ---- */

enum { MAX_FLOWS = 2 };
static sg_host_t flow_from[MAX_FLOWS], flow_to[MAX_FLOWS];
static double flow_end[MAX_FLOWS];

/* One transfer with no receiving actor: a two-host parallel exec with zero FLOPs. */
static void flow_actor(int argc, char **argv)
{
    ck_assert_int_eq(argc, 2);
    int i = atoi(argv[1]);
    sg_host_t hosts[2] = {flow_from[i], flow_to[i]};
    double flops[2] = {0, 0};
    double bytes[4] = {0, 1e9, 0, 0};
    sg_exec_t e = sg_actor_parallel_exec_init(2, hosts, flops, bytes);
    sg_exec_start(e);
    sg_exec_wait(e);
    flow_end[i] = simgrid_get_clock();
}

/* Load two_gpus.xml (a, b, one 100 GB/s split-duplex link) and run 1e9-byte flows. */
static void run_flows(int n, const char *const from[], const char *const to[])
{
    char path[1024];
    fixture_path(path, sizeof path, "two_gpus.xml");
    cluster c;
    load_ok(path, &c);
    for (int i = 0; i < n; i++) {
        flow_from[i] = sg_host_by_name(from[i]);
        flow_to[i] = sg_host_by_name(to[i]);
        char index[8];
        snprintf(index, sizeof index, "%d", i);
        const char *argv[] = {"flow", index};
        sg_actor_create_("flow", flow_from[i], flow_actor, 2, argv);
    }
    simgrid_run();
    cluster_free(&c);
}

START_TEST(timing_one_flow)
{
    run_flows(1, (const char *[]){"a"}, (const char *[]){"b"});
    ck_assert_double_eq_tol(flow_end[0], 0.010, 0.010 * 1e-3);
}
END_TEST

START_TEST(timing_two_flows_same_direction)
{
    run_flows(2, (const char *[]){"a", "a"}, (const char *[]){"b", "b"});
    ck_assert_double_eq_tol(flow_end[0], 0.020, 0.020 * 1e-3);
    ck_assert_double_eq_tol(flow_end[1], 0.020, 0.020 * 1e-3);
}
END_TEST

START_TEST(timing_two_flows_opposite_directions)
{
    /* Split duplex: each direction has the full 100 GB/s. */
    run_flows(2, (const char *[]){"a", "b"}, (const char *[]){"b", "a"});
    ck_assert_double_eq_tol(flow_end[0], 0.010, 0.010 * 1e-3);
    ck_assert_double_eq_tol(flow_end[1], 0.010, 0.010 * 1e-3);
}
END_TEST

/* ---- heterogeneous clusters: --nodes KIND:N[,KIND:N...] ---- */

START_TEST(generated_mixed_h100_a100)
{
    cluster_gen_opts o = {.node_groups = "dgx-h100:1,dgx-a100:1"};
    cluster c;
    load_two_nodes_of_8(NULL, &o, &c);
    for (int r = 0; r < 16; r++)
        ck_assert_str_eq(c.device[r]->name, r < 8 ? "H100-SXM5-80GB" : "A100-SXM4-80GB");
    /* Each node keeps its kind's NVLink; across nodes the slower (A100, HDR 25 GB/s) NIC binds. */
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n0g0"), sg_host_by_name("n0g7")), 450e9, 1);
    ck_assert_double_eq_tol(
        sg_host_get_route_bandwidth(sg_host_by_name("n1g0"), sg_host_by_name("n1g7")), 300e9, 1);
    sg_host_t a = sg_host_by_name("n0g0"), b = sg_host_by_name("n1g5");
    ck_assert_double_eq_tol(sg_host_get_route_bandwidth(a, b), 25e9, 1);
    ck_assert_double_eq_tol(sg_host_get_route_latency(a, b), 5e-6, 1e-12);
    cluster_free(&c);
}
END_TEST

/* Part of a cluster (issue 30): the view of GPUs 8, 0, 9 of dgx-h100:1,dgx-a100:1 (file ranks
 * r, node r / 8) takes them as ranks 0, 1, 2, in that order: devices A100, H100, A100, nodes
 * numbered in order of first use (file node 1 is node 0, file node 0 node 1), and each pair's
 * route is the file pair's: ranks 0 and 2 over the A100 node's NVLink (300 GB/s), ranks 0 and 1
 * over the A100's HDR NIC (25 GB/s). */
START_TEST(view_takes_part_of_a_cluster)
{
    cluster_gen_opts o = {.node_groups = "dgx-h100:1,dgx-a100:1"};
    cluster c, v;
    load_two_nodes_of_8(NULL, &o, &c);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_view(&c, (const int[]){8, 0, 9}, 3, "--gpus", &v, &err), 0);
    ck_assert_int_eq(v.n_gpus, 3);
    ck_assert_int_eq(v.file_gpus, 16);
    ck_assert_int_eq(v.n_nodes, 2);
    const int want_rank[3] = {8, 0, 9}, want_node[3] = {0, 1, 0};
    const char *want_host[3] = {"n1g0", "n0g0", "n1g1"};
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(v.file_rank[r], want_rank[r]);
        ck_assert_int_eq(v.node_of_rank[r], want_node[r]);
        ck_assert_str_eq(v.host_names[r], want_host[r]);
        ck_assert_str_eq(v.device[r]->name, r == 1 ? "H100-SXM5-80GB" : "A100-SXM4-80GB");
    }
    double bw, lat;
    cluster_route(&v, 0, 2, &bw, &lat);
    ck_assert_double_eq_tol(bw, 300e9, 1);
    cluster_route(&v, 0, 1, &bw, &lat);
    ck_assert_double_eq_tol(bw, 25e9, 1);
    char text[64];
    cluster_selected_text(&v, text, sizeof text);
    ck_assert_str_eq(text, "8,0,9");
    /* a view of a view keeps the file's ranks: its GPUs 2, 0 are the file's 9, 8 */
    cluster w;
    ck_assert_int_eq(cluster_view(&v, (const int[]){2, 0}, 2, "--gpus", &w, &err), 0);
    ck_assert_int_eq(w.file_rank[0], 9);
    ck_assert_int_eq(w.file_rank[1], 8);
    ck_assert_int_eq(w.n_nodes, 1);
    cluster_selected_text(&w, text, sizeof text);
    ck_assert_str_eq(text, "9,8");
    cluster_view_free(&w);
    cluster_view_free(&v);
    /* the first 8 are a range; a GPU outside the cluster or listed twice is refused */
    ck_assert_int_eq(cluster_view(&c, (const int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8, "--gpus", &v, &err),
                     0);
    cluster_selected_text(&v, text, sizeof text);
    ck_assert_str_eq(text, "0-7");
    ck_assert_int_eq(v.n_nodes, 1);
    cluster_view_free(&v);
    ck_assert_int_eq(cluster_view(&c, (const int[]){3, 16}, 2, "--gpus", &v, &err), PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.message, "--gpus: GPU 16 is not in the cluster"));
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_view(&c, (const int[]){3, 3}, 2, "--gpus", &v, &err), PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.message, "--gpus: GPU 3 is listed twice"));
    cluster_free(&c);
}
END_TEST

/* A single-kind group list writes the same platform as KIND --nodes N. */
START_TEST(generated_group_list_of_one_kind)
{
    char *want = NULL, *got = NULL;
    size_t want_len = 0, got_len = 0;
    ps_error err;
    ps_error_clear(&err);
    FILE *m = open_memstream(&want, &want_len);
    ck_assert_int_eq(cluster_generate("dgx-v100", &(cluster_gen_opts){.nodes = 3}, m, &err), 0);
    fclose(m);
    m = open_memstream(&got, &got_len);
    cluster_gen_opts o = {.node_groups = "dgx-v100:2,dgx-v100:1"};
    ck_assert_int_eq(cluster_generate(NULL, &o, m, &err), 0);
    fclose(m);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_str_eq(got, want);
    free(want);
    free(got);
}
END_TEST

static void expect_group_error(const char *kind, const char *groups, const char *message)
{
    ps_error err;
    ps_error_clear(&err);
    FILE *devnull = fopen("/dev/null", "w");
    cluster_gen_opts o = {.node_groups = groups};
    ck_assert_int_eq(cluster_generate(kind, &o, devnull, &err), PS_EINPUT);
    fclose(devnull);
    ck_assert_str_eq(err.message, message);
}

START_TEST(generate_rejects_bad_groups)
{
    expect_group_error(NULL, "dgx-h100:1,dgx-x200:2",
                       "--nodes: unknown cluster kind 'dgx-x200' (known: dgx-v100, dgx-2, "
                       "dgx-a100, dgx-h100, dgx-h200, dgx-b200, dgx-b300, dgx-h800, "
                       "gb200-nvl72, gb300-nvl72)");
    expect_group_error(NULL, "dgx-a100:0",
                       "--nodes: bad node count '0' in group 'dgx-a100:0' (expected an integer "
                       ">= 1)");
    expect_group_error(NULL, "dgx-a100:2x",
                       "--nodes: bad node count '2x' in group 'dgx-a100:2x' (expected an integer "
                       ">= 1)");
    expect_group_error(NULL, "dgx-a100:1,,dgx-h100:1",
                       "--nodes: empty group in 'dgx-a100:1,,dgx-h100:1' (expected "
                       "KIND:N[,KIND:N...])");
    expect_group_error(NULL, "dgx-a100:1,dgx-h100",
                       "--nodes: group 'dgx-h100' is not KIND:N (expected KIND:N[,KIND:N...])");
    expect_group_error("dgx-a100", "dgx-h100:1",
                       "--nodes: the group list 'dgx-h100:1' names the kinds; give no KIND "
                       "'dgx-a100' with it");
}
END_TEST

/* text written to a new temporary file; its name into path. */
static void temp_file(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "/tmp/protosim_test_dev_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* PROTOSIM_DEVICES: its files go over the bundled table in order, empty pieces skipped. One
 * replaces the H100's HBM figure, the other adds a Hopper GPU that gives no fitted figure: it
 * takes its architecture's (Hopper's GEMM base 0.715, warp-MMA share 0.52, NCCL launch 22 us,
 * step 0, NVLink 0.795, NVLS 0.69), and one that turns NVLS and warp MMA off with 0. */
START_TEST(devices_user_files)
{
    char a[64], b[64], list[200];
    temp_file(a, sizeof a,
              "- name: H100-SXM5-80GB\n  architecture: hopper\n  fp32_tflops: 66.9\n"
              "  tf32_tflops: 494.7\n  fp16_tflops: 989.4\n  bf16_tflops: 989.4\n"
              "  hbm_gbps: 4000\n  hbm_gib: 80\n  sms: 132\n");
    temp_file(b, sizeof b,
              "- name: MY-HOPPER\n  architecture: hopper\n  fp32_tflops: 50\n"
              "  tf32_tflops: 400\n  fp16_tflops: 800\n  bf16_tflops: 800\n"
              "  hbm_gbps: 2000\n  hbm_gib: 64\n  sms: 114\n"
              "- name: MY-HOPPER-PCIE\n  architecture: hopper\n  fp32_tflops: 50\n"
              "  tf32_tflops: 400\n  fp16_tflops: 800\n  bf16_tflops: 800\n"
              "  hbm_gbps: 2000\n  hbm_gib: 64\n  sms: 114\n  nvls_efficiency: 0\n"
              "  warp_mma_fraction: 0\n");
    snprintf(list, sizeof list, "%s::%s", a, b);
    device_table bundled, t;
    ps_error err;
    ps_error_clear(&err);
    unsetenv("PROTOSIM_DEVICES");
    ck_assert_int_eq(device_table_load_all(NULL, &bundled, &err), 0);
    setenv("PROTOSIM_DEVICES", list, 1);
    ck_assert_int_eq(device_table_load_all(NULL, &t, &err), 0);
    ck_assert_int_eq(t.n, bundled.n + 2);
    /* 0 turns off what the architecture gives: no NVLS (no NVSwitch), no warp-level MMA rate */
    const device_spec *pcie = device_table_find(&t, "MY-HOPPER-PCIE");
    ck_assert_double_eq(pcie->nvls_efficiency, 0.0);
    ck_assert_double_eq(pcie->warp_mma_fraction, 0.0);
    ck_assert_double_eq(pcie->gemm_efficiency, 0.715);
    ck_assert_double_eq_tol(device_table_find(&t, "H100-SXM5-80GB")->hbm_bw, 4000e9, 1);
    ck_assert_double_eq_tol(device_table_find(&bundled, "H100-SXM5-80GB")->hbm_bw, 3350e9, 1);
    const device_spec *h = device_table_find(&t, "MY-HOPPER");
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(h->arch, ARCH_HOPPER);
    ck_assert_int_eq(h->sms, 114);
    ck_assert_double_eq(h->gemm_efficiency, 0.715);
    ck_assert_double_eq(h->warp_mma_fraction, 0.52);
    ck_assert_double_eq_tol(h->coll_launch_s, 22e-6, 1e-12);
    ck_assert_double_eq(h->coll_step_s, 0.0);
    ck_assert_double_eq(h->coll_efficiency, 0.795);
    ck_assert_double_eq(h->nvls_efficiency, 0.69);
    const device_spec *l = device_table_find(&t, "L40S"); /* Ada: no fitted GEMM base */
    ck_assert_int_eq(l->arch, ARCH_ADA);
    ck_assert_double_eq(l->gemm_efficiency, 0.0);
    ck_assert_double_eq(l->warp_mma_fraction, 1.0);
    ck_assert_double_eq(l->coll_launch_s, -1.0);
    char sources[400], want[400];
    device_table_sources(sources, sizeof sources);
    snprintf(want, sizeof want, "topology/devices/devices.yaml, %s, %s", a, b);
    ck_assert_str_eq(sources, want);
    device_table_free(&t);
    device_table_free(&bundled);

    setenv("PROTOSIM_DEVICES", "/nonexistent/devices.yaml", 1);
    ck_assert_int_eq(device_table_load_all(NULL, &t, &err), PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.file, "/nonexistent/devices.yaml"));
    ck_assert_ptr_null(t.specs);
    unsetenv("PROTOSIM_DEVICES");
    unlink(a);
    unlink(b);
}
END_TEST

static Suite *cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    const TTest *const devices_tests[] = {devices_bundled, devices_bad_key, devices_user_files,
                                          NULL};
    suite_add_tests(s, "devices", 0, devices_tests);
    const TTest *const load_tests[] = {
        dgx4_loads,   rank_property_order, natural_name_order, malformed_xml,
        missing_file, unknown_gpu,         duplicate_rank,     no_gpu,
        NULL};
    TCase *t = suite_add_tests(s, "load", 0, load_tests);
    tcase_add_loop_test(t, bad_ranks, 0, 3);
    const TTest *const generate_tests[] = {generated_a100_two_nodes,
                                           generated_v100_cube_mesh,
                                           generated_h100_one_node,
                                           generated_oversubscribed_fabric,
                                           bundled_are_generated,
                                           generate_rejects_bad_options,
                                           generated_mixed_h100_a100,
                                           generated_group_list_of_one_kind,
                                           generate_rejects_bad_groups,
                                           view_takes_part_of_a_cluster,
                                           NULL};
    suite_add_tests(s, "generate", 0, generate_tests);
    const TTest *const timing_tests[] = {timing_one_flow, timing_two_flows_same_direction,
                                         timing_two_flows_opposite_directions,
                                         load_needs_the_engine, NULL};
    suite_add_tests(s, "timing", 0, timing_tests);
    return s;
}

int main(void)
{
    return suite_run(cluster_suite());
}
