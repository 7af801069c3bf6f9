/* test_hwloc.c: unit tests of topology/hwloc_import.c on hand-written hwloc exports
 * (tests/data/hwloc/, described in its README.md): links, bandwidths, routes, NIC choice, errors;
 * then end to end: the platform cluster_write_platform makes of them, in SimGrid. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../topology/hwloc_import.h"
#include "sim_util.h"
#include "suite_util.h"

static void fixture(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/tests/data/hwloc/%s", ps_data_dir(), name);
}

static void import_ok(const char *name, hwloc_import_opts o, node_model *m)
{
    char path[1024], summary[1024];
    fixture(path, sizeof path, name);
    ps_error err;
    ps_error_clear(&err);
    int rc = hwloc_import_node(path, ps_data_dir(), &o, m, summary, sizeof summary, &err);
    ck_assert_msg(rc == 0, "%s: %s: %s", name, err.field, err.message);
    ck_assert_ptr_nonnull(strstr(summary, name));
}

/* Import that must fail with PS_EINPUT naming the file, field `field`, message containing
 * `needle`. */
static void import_fails(const char *name, hwloc_import_opts o, const char *field,
                         const char *needle)
{
    char path[1024];
    fixture(path, sizeof path, name);
    node_model m;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(hwloc_import_node(path, ps_data_dir(), &o, &m, NULL, 0, &err), PS_EINPUT);
    ck_assert_str_eq(err.file, path);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, needle), "%s: '%s' lacks '%s'", name, err.message, needle);
    ck_assert_int_eq(m.gpus, 0);
    ck_assert_ptr_null(m.links);
    ck_assert_ptr_null(m.gpu_gpu);
}

static const node_link *link_named(const node_model *m, const char *id)
{
    for (int i = 0; i < m->n_links; i++)
        if (!strcmp(m->links[i].id, id))
            return &m->links[i];
    ck_abort_msg("no link %s", id);
    return NULL;
}

static void expect_link(const node_model *m, const char *id, double GBps, double latency_s)
{
    const node_link *l = link_named(m, id);
    ck_assert_msg(fabs(l->GBps - GBps) < 1e-4, "%s: %.6f GB/s, want %.6f", id, l->GBps, GBps);
    ck_assert_double_eq_tol(l->latency_s, latency_s, 1e-12);
}

/* A path as "id^ id v": each link's id, ^ for UP, v for DOWN. */
static void expect_path(const node_model *m, const node_path *p, const char *want)
{
    char got[512] = "";
    size_t len = 0;
    for (int i = 0; i < p->n; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s%s", i ? " " : "",
                                m->links[p->hop[i].link].id, p->hop[i].up ? "^" : "v");
    ck_assert_str_eq(got, want);
}

static double path_GBps(const node_model *m, const node_path *p)
{
    double bw = 1e300;
    for (int i = 0; i < p->n; i++)
        bw = m->links[p->hop[i].link].GBps < bw ? m->links[p->hop[i].link].GBps : bw;
    return bw;
}

static double path_latency(const node_model *m, const node_path *p)
{
    double s = 0;
    for (int i = 0; i < p->n; i++)
        s += m->links[p->hop[i].link].latency_s;
    return s;
}

/* PCIe figures hwloc writes: GB/s per direction after 128b/130b encoding. */
#define GEN3_X8  7.876923
#define GEN4_X8  15.753846
#define GEN4_X16 31.507692
#define GEN5_X16 63.015385

/* ---- two_switches.xml: NVLink pairs, PCIe switches, two NICs ---- */

START_TEST(two_switches_links)
{
    node_model m;
    import_ok("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, &m);
    ck_assert_int_eq(m.gpus, 4); /* cuda0 and nvml0 are one GPU; card0 is none */
    ck_assert_str_eq(m.gpu, "A100-SXM4-80GB");
    ck_assert_str_eq(m.kind, "hwloc:two_switches.xml");
    ck_assert_double_eq_tol(m.flops, 312e12, 1);
    /* NVLink: 50000 MB/s = 2 links, 25000 MB/s = 1; the package entry of GPU3 is ignored. */
    expect_link(&m, "g0_g1_nvl", 50, 0.7e-6);
    expect_link(&m, "g2_g3_nvl", 50, 0.7e-6);
    expect_link(&m, "g0_g2_nvl", 25, 0.7e-6);
    expect_link(&m, "g1_g3_nvl", 25, 0.7e-6);
    /* PCIe: each GPU's own run (downstream port + GPU), the switches' uplinks (root port +
     * upstream port, named by the root port), the NICs' runs; 1 us only on GPU runs. */
    expect_link(&m, "g0_pcie", GEN4_X16, 1e-6);
    expect_link(&m, "g3_pcie", GEN4_X16, 1e-6);
    expect_link(&m, "pcie_0000_00_01_0", GEN4_X16, 0);
    expect_link(&m, "pcie_0000_00_02_0", GEN3_X8, 0);
    expect_link(&m, "nic0_pcie", GEN4_X8, 0);
    expect_link(&m, "nic1_pcie", GEN4_X16, 0);
    /* NIC ports: 200 Gb/s = 25 GB/s. */
    ck_assert_int_eq(m.nics, 2);
    ck_assert_double_eq_tol(m.nic_GBps, 25, 1e-12);
    expect_link(&m, "nic0", 25, 2.5e-6);
    expect_link(&m, "nic1", 25, 2.5e-6);
    /* 4 NVLink + 6 GPU/switch PCIe + 2 NIC PCIe + 2 NIC ports; no link for card0 or eno1. */
    ck_assert_int_eq(m.n_links, 14);
    node_model_free(&m);
}
END_TEST

START_TEST(two_switches_nvlink_routes)
{
    node_model m;
    import_ok("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, &m);
    expect_path(&m, &m.gpu_gpu[0 * 4 + 1], "g0_g1_nvl^");
    expect_path(&m, &m.gpu_gpu[1 * 4 + 0], "g0_g1_nvlv"); /* the reverse: same link, DOWN */
    expect_path(&m, &m.gpu_gpu[0 * 4 + 2], "g0_g2_nvl^");
    expect_path(&m, &m.gpu_gpu[3 * 4 + 2], "g2_g3_nvlv");
    ck_assert_double_eq_tol(path_GBps(&m, &m.gpu_gpu[0 * 4 + 1]), 50, 1e-12);
    ck_assert_double_eq_tol(path_latency(&m, &m.gpu_gpu[0 * 4 + 1]), 0.7e-6, 1e-12);
    node_model_free(&m);
}
END_TEST

/* GPU0 -> GPU3 and GPU1 -> GPU2 have no NVLink: both leave switch A by its one uplink and enter
 * switch B by its uplink, so SimGrid shares those two links between them. */
START_TEST(two_switches_pcie_routes_share_uplinks)
{
    node_model m;
    import_ok("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, &m);
    expect_path(&m, &m.gpu_gpu[0 * 4 + 3],
                "g0_pcie^ pcie_0000_00_01_0^ pcie_0000_00_02_0v g3_pciev");
    expect_path(&m, &m.gpu_gpu[1 * 4 + 2],
                "g1_pcie^ pcie_0000_00_01_0^ pcie_0000_00_02_0v g2_pciev");
    expect_path(&m, &m.gpu_gpu[3 * 4 + 0],
                "g3_pcie^ pcie_0000_00_02_0^ pcie_0000_00_01_0v g0_pciev");
    /* min(31.51, 31.51, 7.88, 31.51): switch B's x8 uplink; latency 1 + 0 + 0 + 1 us. */
    ck_assert_double_eq_tol(path_GBps(&m, &m.gpu_gpu[0 * 4 + 3]), GEN3_X8, 1e-5);
    ck_assert_double_eq_tol(path_latency(&m, &m.gpu_gpu[0 * 4 + 3]), 2e-6, 1e-12);
    node_model_free(&m);
}
END_TEST

/* GPU0/1: NIC0 is on their switch (2 PCIe links) against NIC1 through the host bridge (3).
 * GPU2/3: NIC1 is 3 links away (own link, switch B's uplink, NIC1's link), NIC0 4: both take
 * NIC1, sharing switch B's uplink. */
START_TEST(two_switches_nearest_nic)
{
    node_model m;
    import_ok("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, &m);
    static const int want[4] = {0, 0, 1, 1};
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(m.nic_of_gpu[g], want[g]);
    expect_path(&m, &m.gpu_nic[0], "g0_pcie^ nic0_pciev nic0^");
    expect_path(&m, &m.gpu_nic[1], "g1_pcie^ nic0_pciev nic0^");
    expect_path(&m, &m.gpu_nic[2], "g2_pcie^ pcie_0000_00_02_0^ nic1_pciev nic1^");
    expect_path(&m, &m.gpu_nic[3], "g3_pcie^ pcie_0000_00_02_0^ nic1_pciev nic1^");
    /* GPU0: min(31.51, 15.75 NIC0's x8, 25 port) = 15.75; GPU2: switch B's 7.88. Latency
     * 1 us (GPU's link) + 2.5 us (NIC port). */
    ck_assert_double_eq_tol(path_GBps(&m, &m.gpu_nic[0]), GEN4_X8, 1e-5);
    ck_assert_double_eq_tol(path_GBps(&m, &m.gpu_nic[2]), GEN3_X8, 1e-5);
    ck_assert_double_eq_tol(path_latency(&m, &m.gpu_nic[2]), 3.5e-6, 1e-12);
    node_model_free(&m);
}
END_TEST

/* ---- nvswitch.xml: 4 H100 on 2 NVSwitches, 2 sockets, no NIC ---- */

START_TEST(nvswitch_ports)
{
    node_model m;
    import_ok("nvswitch.xml", (hwloc_import_opts){.nics = 2, .nic_gbps = 400}, &m);
    ck_assert_int_eq(m.gpus, 4);
    ck_assert_str_eq(m.gpu, "H100-SXM5-80GB"); /* "NVIDIA H100 80GB HBM3", through the alias */
    ck_assert_double_eq_tol(m.flops, 989.4e12, 1);
    /* 250000 + 200000 MB/s to the two switches: one 450 GB/s port per GPU. */
    for (int g = 0; g < 4; g++) {
        char id[16];
        snprintf(id, sizeof id, "g%d_nvl", g);
        expect_link(&m, id, 450, 0.7e-6);
    }
    expect_path(&m, &m.gpu_gpu[0 * 4 + 3], "g0_nvl^ g3_nvlv");
    expect_path(&m, &m.gpu_gpu[3 * 4 + 0], "g3_nvl^ g0_nvlv");
    ck_assert_double_eq_tol(path_latency(&m, &m.gpu_gpu[0 * 4 + 3]), 1.4e-6, 1e-12);
    /* --nics 2: blocks {0,1} and {2,3}, each NIC on its pair's switch: own link, then port. */
    ck_assert_int_eq(m.nics, 2);
    static const int want[4] = {0, 0, 1, 1};
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(m.nic_of_gpu[g], want[g]);
    expect_path(&m, &m.gpu_nic[1], "g1_pcie^ nic0^");
    expect_path(&m, &m.gpu_nic[2], "g2_pcie^ nic1^");
    expect_link(&m, "nic1", 50, 2.5e-6); /* 400 Gb/s */
    expect_link(&m, "g2_pcie", GEN5_X16, 1e-6);
    ck_assert_int_eq(m.n_links, 4 + 2 + 4);
    node_model_free(&m);
}
END_TEST

START_TEST(nvswitch_placed_nics)
{
    node_model m;
    /* One NIC for 4 GPUs under two host bridges: each GPU climbs to its root complex. */
    import_ok("nvswitch.xml", (hwloc_import_opts){.nics = 1, .nic_gbps = 400}, &m);
    expect_path(&m, &m.gpu_nic[0], "g0_pcie^ pcie_0000_00_01_0^ nic0^");
    expect_path(&m, &m.gpu_nic[3], "g3_pcie^ pcie_0000_80_01_0^ nic0^");
    node_model_free(&m);
    /* One NIC per GPU: beside it on its switch. */
    import_ok("nvswitch.xml", (hwloc_import_opts){.nics = 4, .nic_gbps = 400}, &m);
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(m.nic_of_gpu[g], g);
    expect_path(&m, &m.gpu_nic[3], "g3_pcie^ nic3^");
    node_model_free(&m);
}
END_TEST

/* two_sockets.xml: GPU0 (socket 0) has mlx5_1 2 links away on socket 1, and mlx5_0 3 links away
 * on the other host bridge of its own socket: the NUMA class wins, mlx5_0. GPU1 and GPU2 share a
 * switch with mlx5_2 and mlx5_3, 2 links each: GPU1 takes mlx5_2 (lower bus id), GPU2 mlx5_3
 * (fewer GPUs on it). mlx5_1 serves no GPU and is left out: NICs 0, 1, 2 are mlx5_0, _2, _3. */
START_TEST(two_sockets_nic_classes)
{
    node_model m;
    import_ok("two_sockets.xml", (hwloc_import_opts){.nic_gbps = 400}, &m);
    ck_assert_int_eq(m.gpus, 3);
    ck_assert_int_eq(m.nics, 3);
    for (int g = 0; g < 3; g++)
        ck_assert_int_eq(m.nic_of_gpu[g], g);
    expect_path(&m, &m.gpu_nic[0], "g0_pcie^ pcie_0000_10_01_0v nic0_pciev nic0^");
    expect_path(&m, &m.gpu_nic[1], "g1_pcie^ nic1_pciev nic1^");
    expect_path(&m, &m.gpu_nic[2], "g2_pcie^ nic2_pciev nic2^");
    /* Across sockets the CPU is not modelled: GPU0 -> GPU1 is own link, switch uplink, GPU1's. */
    expect_path(&m, &m.gpu_gpu[0 * 3 + 1], "g0_pcie^ pcie_0000_80_02_0v g1_pciev");
    ck_assert_int_eq(m.n_links, 4 + 3 + 1 + 3);
    node_model_free(&m);
}
END_TEST

START_TEST(gpu_option_overrides_the_name)
{
    node_model m;
    import_ok("unknown_gpu.xml", (hwloc_import_opts){.gpu = "L4", .nic_gbps = 10}, &m);
    ck_assert_str_eq(m.gpu, "L4");
    ck_assert_int_eq(m.gpus, 1);
    /* No OpenFabrics device: the Ethernet port is the NIC, at its 0.25 GB/s PCIe link. */
    ck_assert_int_eq(m.nics, 1);
    expect_path(&m, &m.gpu_nic[0], "g0_pcie^ nic0_pciev nic0^");
    ck_assert_double_eq_tol(path_GBps(&m, &m.gpu_nic[0]), 0.25, 1e-6);
    node_model_free(&m);
}
END_TEST

/* ---- errors: exit 1 naming the file and the field ---- */

START_TEST(errors_name_file_and_field)
{
    hwloc_import_opts none = {0}, speed = {.nic_gbps = 100};
    import_fails("no_gpu.xml", speed, "", "no GPU found");
    import_fails("malformed.xml", speed, "", "not a topology hwloc");
    import_fails("missing.xml", speed, "", "cannot open");
    import_fails("nvswitch.xml", speed, "nics", "give --nics N");
    import_fails("nvswitch.xml", (hwloc_import_opts){.nics = 5, .nic_gbps = 1}, "nics",
                 "more NICs than the file's 4 GPUs");
    import_fails("nvswitch.xml", (hwloc_import_opts){.nics = 2}, "nic-gbps", "--nic-gbps");
    import_fails("two_switches.xml", none, "nic-gbps", "2 NICs (mlx5_0, mlx5_1)");
    import_fails("two_switches.xml", (hwloc_import_opts){.nics = 2, .nic_gbps = 1}, "nics",
                 "--nics is for files without NICs");
    import_fails("two_switches.xml", (hwloc_import_opts){.gpu = "A100", .nic_gbps = 1}, "gpu",
                 "--gpu: unknown device 'A100'");
    import_fails("unknown_gpu.xml", speed, "GPUModel",
                 "no device-table entry for 'GeForce RTX 4090' (from 'NVIDIA GeForce RTX 4090'); "
                 "give --gpu NAME");
    import_fails("mixed_gpus.xml", speed, "GPUModel",
                 "GPUs cuda0 ('Tesla T4') and cuda1 ('NVIDIA L4') differ");
    /* With --gpu the two GPUs meet over PCIe, and cuda1's link has no speed. */
    import_fails("mixed_gpus.xml", (hwloc_import_opts){.gpu = "T4", .nic_gbps = 1},
                 "pci_link_speed", "above 0000:00:05.0, GPU cuda1 has no link speed");
    import_fails("asymmetric_nvlink.xml", (hwloc_import_opts){.nics = 1, .nic_gbps = 1},
                 "NVLinkBandwidth", "25000 MB/s to nvml1 but 50000 MB/s back");
}
END_TEST

/* ---- end to end: platforms written from the models, loaded in SimGrid ---- */

/* `nodes` copies of fixture `name` on a non-blocking fabric, loaded into c. */
static void load_platform(const char *name, hwloc_import_opts o, int nodes, cluster *c)
{
    node_model m;
    import_ok(name, o, &m);
    char path[256];
    snprintf(path, sizeof path, "/tmp/protosim_test_hwloc_%d.xml", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    const node_model *models[1] = {&m};
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(cluster_write_platform(models, &nodes, 1, NULL, f, &err), 0);
    fclose(f);
    node_model_free(&m);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, &err);
    ck_assert_msg(rc == 0, "%s: %s", path, err.message);
    remove(path);
}

static void expect_route(const cluster *c, int a, int b, double Bps, double latency_s)
{
    double bw, lat;
    cluster_route(c, a, b, &bw, &lat);
    ck_assert_msg(fabs(bw / Bps - 1) < 1e-6, "%d -> %d: %.6g B/s, want %.6g", a, b, bw, Bps);
    ck_assert_msg(fabs(lat - latency_s) < 1e-12, "%d -> %d: %.6g s, want %.6g", a, b, lat,
                  latency_s);
}

START_TEST(platform_routes)
{
    cluster c;
    load_platform("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, 2, &c);
    ck_assert_int_eq(c.n_gpus, 8);
    ck_assert_int_eq(c.n_nodes, 2);
    ck_assert_str_eq(c.host_names[5], "n1g1");
    ck_assert_str_eq(c.device[0]->name, "A100-SXM4-80GB");
    expect_route(&c, 0, 1, 50e9, 0.7e-6);        /* NVLink pair */
    expect_route(&c, 0, 3, GEN3_X8 * 1e9, 2e-6); /* PCIe: switch B's x8 uplink, 1 + 1 us */
    expect_route(&c, 5, 6, GEN3_X8 * 1e9, 2e-6); /* the same on node 1 */
    /* Node 0 GPU0 -> node 1 GPU0: g0_pcie, nic0_pcie (15.75), nic0 (25), the fabric ports
     * (2 NICs x 25 = 50), back down: 1 + 2.5 + 0 + 0 + 2.5 + 1 us. */
    expect_route(&c, 0, 4, GEN4_X8 * 1e9, 7e-6);
    /* GPU2 -> node 1 GPU3: both through their switch B uplink (7.88) to NIC1. */
    expect_route(&c, 2, 7, GEN3_X8 * 1e9, 7e-6);
    cluster_free(&c);
}
END_TEST

/* All-reduce of S bytes between GPU0 and GPU3 (p = 2, no NVLink): each ring edge carries
 * 2(p-1)/p S = S over PCIe at switch B's 7.876923 GB/s, in 2(p-1) = 2 steps of the 2 us route
 * latency: S / 7.876923e9 + 4 us, software overheads off. With GPU1-GPU2 all-reducing at the same
 * time, both rings cross the two switch uplinks in the same directions: half the bandwidth each,
 * 2 S / 7.876923e9 + 4 us. */
static void allreduce_over_pcie(int both)
{
    cluster c;
    load_platform("two_switches.xml", (hwloc_import_opts){.nic_gbps = 200}, 1, &c);
    exec_graph *g = graph_create(4);
    int pair_a[2] = {0, 3}, pair_b[2] = {1, 2};
    uint32_t a[2], b[2];
    double S = 1e9;
    int l = graph_label(g, "ar");
    graph_add_collective(g, COLL_ALLREDUCE, graph_add_group(g, pair_a, 2), STREAM_TP, S,
                         CAT_TP_COMM, l, 0, a);
    if (both)
        graph_add_collective(g, COLL_ALLREDUCE, graph_add_group(g, pair_b, 2), STREAM_TP, S,
                             CAT_TP_COMM, l, 0, b);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    double want = (both ? 2 : 1) * S / (GEN3_X8 * 1e9) + 4e-6; /* 126.95 ms or 253.91 ms */
    ck_close(r.end[a[0]], want, 1e-6);
    ck_close(r.end[a[1]], want, 1e-6);
    if (both)
        ck_close(r.end[b[0]], want, 1e-6);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(allreduce_over_pcie_alone)
{
    allreduce_over_pcie(0);
}
END_TEST

START_TEST(allreduce_over_pcie_shares_uplinks)
{
    allreduce_over_pcie(1);
}
END_TEST

static Suite *hwloc_suite(void)
{
    Suite *s = suite_create("hwloc");
    const TTest *const import_tests[] = {two_switches_links,
                                         two_switches_nvlink_routes,
                                         two_switches_pcie_routes_share_uplinks,
                                         two_switches_nearest_nic,
                                         nvswitch_ports,
                                         nvswitch_placed_nics,
                                         two_sockets_nic_classes,
                                         gpu_option_overrides_the_name,
                                         errors_name_file_and_field,
                                         NULL};
    suite_add_tests(s, "import", 0, import_tests);
    const TTest *const platform_tests[] = {platform_routes, allreduce_over_pcie_alone,
                                           allreduce_over_pcie_shares_uplinks, NULL};
    suite_add_tests(s, "platform", 60, platform_tests);
    return s;
}

int main(void)
{
    return suite_run(hwloc_suite());
}
