/* test_platform_check.c: cluster validation through the protosim binary (issue 14): every
 * platform SimGrid used to abort, crash, hang or silently mis-time on is exit 1 with a message
 * naming the file, the line and the host, link or zone. Fixtures: tests/data/e2e/cluster-*.xml
 * (each says in a comment what it did before and where the error must point). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "suite_util.h"

/* `protosim collective` is the shortest path through cluster_load. */
static run_result run_collective(const char *dir, const char *cluster, const char *gpus)
{
    const char *args[] = {"collective", "--cluster", cluster, "--gpus",
                          gpus,         "--sizes",   "1M",    NULL};
    return run_protosim(dir, args);
}

typedef struct bad_platform {
    const char *fixture; /* tests/data/e2e/cluster-NAME.xml */
    long line;           /* where the error must point */
    const char *needles[3];
} bad_platform;

static const bad_platform bad[] = {
    /* links outside the physical ranges (cluster.h, CLUSTER_LINK_*) */
    {"zero-bw", 8, {"link 'nvl'", "bandwidth", NULL}},
    {"negative-bw", 8, {"link 'nvl'", "bandwidth", NULL}},
    {"nan-bw", 8, {"link 'nvl'", "nan", NULL}},
    {"tiny-bw", 8, {"link 'nvl'", "1e-300", NULL}},
    {"huge-latency", 8, {"link 'nvl'", "latency", NULL}},
    {"negative-latency", 8, {"link 'nvl'", "latency", NULL}},
    {"zero-speed", 6, {"host 'a'", "speed", NULL}},
    /* GPUs without a route between them */
    {"no-route-graph", 11, {"zone 'leaf0'", "host 'c'", NULL}},
    {"no-route-zones", 6, {"zone 'n0'", "zone 'n1'", NULL}},
    {"no-route-full", 6, {"host 'b'", "host 'a'", NULL}},
    /* what SimGrid aborted on, or reported without a line */
    {"duplicate-link", 9, {"link id 'ab'", "line 8", NULL}},
    {"duplicate-route", 10, {"from 'a' to 'b'", "line 9", NULL}},
    {"unknown-routing", 5, {"zone 'node0'", "Frob", NULL}},
    {"unknown-link", 11, {"missing", NULL}},
    {"zero-cores", 6, {"SimGrid refused the platform", NULL}},
    /* not XML at all */
    {"not-xml", 1, {"not a valid XML file", NULL}},
};

START_TEST(bad_platform_is_a_located_error)
{
    const bad_platform *b = &bad[_i];
    char *dir = make_tmpdir();
    char rel[128], file[128];
    snprintf(rel, sizeof rel, "tests/data/e2e/cluster-%s.xml", b->fixture);
    snprintf(file, sizeof file, "cluster-%s.xml", b->fixture);
    char *cl = src_path(rel);
    run_result r = run_collective(dir, cl, "2");
    const char *needles[5] = {file, b->needles[0], b->needles[1], b->needles[2], NULL};
    expect_bad_input(&r, needles);
    long line = location_line(r.err, file);
    ck_assert_msg(line == b->line, "%s: expected line %ld, stderr:\n%s", file, b->line, r.err);
    run_free(&r);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* `--cluster DIRECTORY` made SimGrid's XML scanner exit 2 ("does not fit") without a protosim
 * message. */
START_TEST(directory_as_cluster)
{
    char *dir = make_tmpdir();
    char *strat = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *cl = src_path("tests/data/e2e");
    const char *args[] = {"run", strat, "--cluster", cl, NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {"tests/data/e2e", "not a regular file", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(strat), free(cl);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(missing_cluster_file)
{
    char *dir = make_tmpdir();
    char *cl = tmp_path(dir, "no-such-cluster.xml");
    run_result r = run_collective(dir, cl, "2");
    const char *needles[] = {"no-such-cluster.xml", "cannot open", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* The checks refuse none of the generator's platforms: a rail fabric of two scalable units (a
 * graph top zone over graph units, PXN and bypass routes) and a fat tree of four leaves, and the
 * bundled hand-written ones. */
START_TEST(generated_platforms_pass)
{
    const char *gen[][8] = {
        {"cluster", "dgx-h100", "--nodes", "4", "--nodes-per-leaf", "2", "--fabric", "rail"},
        {"cluster", "dgx-a100", "--nodes", "4", "--nodes-per-leaf", "1", "--fabric", "fat-tree"},
    };
    for (int g = 0; g < 2; g++) {
        char *dir = make_tmpdir();
        char *cl = tmp_path(dir, "gen.xml");
        const char *args[] = {gen[g][0], gen[g][1], gen[g][2], gen[g][3], gen[g][4], gen[g][5],
                              gen[g][6], gen[g][7], "-o",      cl,        NULL};
        run_result w = run_protosim(dir, args);
        expect_exit(&w, 0);
        run_result r = run_collective(dir, cl, "32");
        expect_exit(&r, 0);
        run_free(&w);
        run_free(&r);
        free(cl);
        remove_tmpdir(dir);
    }
    const char *bundled[] = {"topology/clusters/dgx4.xml", "topology/clusters/dgx-a100-2node.xml"};
    for (int i = 0; i < 2; i++) {
        char *dir = make_tmpdir();
        char *cl = src_path(bundled[i]);
        run_result r = run_collective(dir, cl, "4");
        expect_exit(&r, 0);
        run_free(&r);
        free(cl);
        remove_tmpdir(dir);
    }
}
END_TEST

/* `replay --what-if network:F` scales every link after loading: a factor that takes one out of
 * the ranges (network:1e300 hung the engine) is refused, naming the what-if. */
START_TEST(what_if_network_stays_in_range)
{
    char *dir = make_tmpdir();
    char *trace = src_path("tests/data/replay/allreduce.json");
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *factors[] = {"network:1e300", "network:1e-300"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"replay", trace, "--cluster", cl, "--what-if", factors[i], NULL};
        run_result r = run_protosim(dir, args);
        const char *needles[] = {factors[i], "1 MB/s to 10 PB/s", NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    free(trace), free(cl);
    remove_tmpdir(dir);
}
END_TEST

static Suite *platform_check_suite(void)
{
    Suite *s = suite_create("platform_check");
    const TTest *const tests[] = {directory_as_cluster, missing_cluster_file,
                                  generated_platforms_pass, what_if_network_stays_in_range, NULL};
    TCase *t = suite_add_tests(s, "cluster", 120, tests);
    tcase_add_loop_test(t, bad_platform_is_a_located_error, 0, (int)(sizeof bad / sizeof *bad));
    return s;
}

int main(void)
{
    return suite_run(platform_check_suite());
}
