/* test_hwloc_dgx2.c: the hwloc import of a real machine, NVIDIA's DGX-2 (hwloc's own test export,
 * named by $PROTOSIM_HWLOC_DGX2; .ci/run points it at ../shared/hwloc/nvidiaDGX2.xml): 16 GPUs on
 * NVSwitch ports of 6 x 25 GB/s, and all-reduce times within 2% of the `cluster dgx-2`
 * template's. The test never looks beside the clone: without the variable it exits 77 (meson:
 * skipped), and the hand-written exports of test_hwloc cover the import. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../topology/hwloc_import.h"
#include "cli_util.h"
#include "suite_util.h"

static char dgx2_path[1024];

/* Outside a test: no Check assertion (cli_util's ps_data_dir() asserts). */
static void find_dgx2(void)
{
    const char *env = getenv("PROTOSIM_HWLOC_DGX2");
    snprintf(dgx2_path, sizeof dgx2_path, "%s", env && *env ? env : "");
}

/* The node model: 16 V100 (the DGX-2H's, through the alias), one NVSwitch port each of the six
 * 25000 MB/s entries of its row (150 GB/s), every GPU pair through the switch. */
START_TEST(dgx2_node_model)
{
    node_model m;
    ps_error err;
    ps_error_clear(&err);
    hwloc_import_opts o = {.nics = 8, .nic_gbps = 100};
    ck_assert_int_eq(hwloc_import_node(dgx2_path, ps_data_dir(), &o, &m, NULL, 0, &err), 0);
    ck_assert_int_eq(m.gpus, 16);
    ck_assert_str_eq(m.gpu, "V100-SXM3-32GB");
    ck_assert_double_eq_tol(m.flops, 125e12, 1);
    int ports = 0;
    for (int i = 0; i < m.n_links; i++)
        if (strstr(m.links[i].id, "_nvl")) {
            ports++;
            ck_assert_double_eq_tol(m.links[i].GBps, 6 * 25.0, 1e-9);
            ck_assert_double_eq_tol(m.links[i].latency_s, 0.7e-6, 1e-15);
        }
    ck_assert_int_eq(ports, 16);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            if (i != j)
                ck_assert_int_eq(m.gpu_gpu[i * 16 + j].n, 2);
    /* --nics 8: GPUs 2k and 2k+1 share NIC k, placed on the PCIe switch they share (PLX 9781,
     * Gen3 x16 = 15.75 GB/s links): own link, then the NIC port. */
    for (int g = 0; g < 16; g++) {
        ck_assert_int_eq(m.nic_of_gpu[g], g / 2);
        ck_assert_int_eq(m.gpu_nic[g].n, 2);
        ck_assert_double_eq_tol(m.links[m.gpu_nic[g].hop[0].link].GBps, 15.753846, 1e-5);
    }
    node_model_free(&m);
}
END_TEST

/* `protosim collective` all-reduce times (seconds) on `platform`, 16 GPUs, sizes[]: the CSV
 * rows bytes,time_s,... after its header line. */
static void allreduce_times(const char *dir, const char *platform, const char *sizes, int n,
                            double *t)
{
    const char *args[] = {"collective", "--cluster", platform, "--gpus", "16",
                          "--sizes",    sizes,       "--csv",  "-",      NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    const char *p = strchr(r.out, '\n');
    for (int i = 0; i < n; i++) {
        double bytes;
        ck_assert_msg(p && sscanf(p + 1, "%lf,%lf", &bytes, &t[i]) == 2, "output: %s", r.out);
        p = strchr(p + 1, '\n');
    }
    run_free(&r);
}

/* The imported DGX-2 and the `cluster dgx-2` template: all-reduce on 16 GPUs, 1 MiB..1 GiB,
 * within 2%. */
START_TEST(dgx2_matches_template)
{
    char *dir = make_tmpdir();
    char *imported = tmp_path(dir, "hwloc.xml"), *templ = tmp_path(dir, "template.xml");
    const char *imp[] = {"cluster",    "--from-hwloc", dgx2_path, "--nics", "8",
                         "--nic-gbps", "100",          "-o",      imported, NULL};
    run_result r = run_protosim(dir, imp);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "16 GPUs") && strstr(r.err, "a port of 150 GB/s per GPU"),
                  "summary: %s", r.err);
    run_free(&r);
    const char *tpl[] = {"cluster", "dgx-2", "--nodes", "1", "-o", templ, NULL};
    r = run_protosim(dir, tpl);
    expect_exit(&r, 0);
    run_free(&r);

    enum { N = 6 };
    const char *sizes = "1Mi,4Mi,16Mi,64Mi,256Mi,1Gi";
    double a[N], b[N];
    allreduce_times(dir, imported, sizes, N, a);
    allreduce_times(dir, templ, sizes, N, b);
    for (int i = 0; i < N; i++) {
        printf("dgx-2 all-reduce 16 GPUs, %d MiB: hwloc %.3f us, template %.3f us (%+.3f%%)\n",
               1 << (2 * i), a[i] * 1e6, b[i] * 1e6, (a[i] / b[i] - 1) * 100);
        ck_assert_msg(fabs(a[i] / b[i] - 1) <= 0.02, "%d MiB: hwloc %g s, template %g s",
                      1 << (2 * i), a[i], b[i]);
    }
    free(imported);
    free(templ);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    find_dgx2();
    if (!dgx2_path[0]) {
        printf("skipped: PROTOSIM_HWLOC_DGX2 names no DGX-2 hwloc export\n");
        return 77;
    }
    if (access(dgx2_path, R_OK) != 0) {
        fprintf(stderr, "PROTOSIM_HWLOC_DGX2: cannot read %s\n", dgx2_path);
        return EXIT_FAILURE;
    }
    const TTest *const tests[] = {dgx2_node_model, dgx2_matches_template, NULL};
    return suite_run(suite_of("hwloc_dgx2", "dgx2", 120, tests));
}
