/* test_report.c: the run report's critical path on small graphs run by the executor, against
 * paths worked out by hand (report.h states the rule). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/graph.h"
#include "../sim/engine/htae.h"
#include "../sim/report/report.h"
#include "../topology/cluster.h"
#include "sim_util.h"
#include "suite_util.h"

/* Every software overhead off: only the platform shapes the timings. */
static void run(exec_graph *g, cluster *c, htae_result *r)
{
    htae_options o = sim_bare_options();
    sim_run(g, c, &o, r);
}

/* Item i is (name, kind, seconds within rel). */
static void item_is(const report_critical_path *cp, int i, const char *name, const char *kind,
                    double seconds, double rel)
{
    ck_assert_int_lt(i, cp->n);
    ck_assert_str_eq(cp->items[i].name, name);
    ck_assert_str_eq(cp->items[i].kind, kind);
    ck_close(cp->items[i].seconds, seconds, rel);
}

/* The items tile [0, makespan]. */
static void sums_to_makespan(const report_critical_path *cp, const htae_result *r)
{
    double s = 0;
    for (int i = 0; i < cp->n; i++)
        s += cp->items[i].seconds;
    ck_close(s, r->makespan, 1e-12);
}

/* GPU 0 computes A (2 ms), then sends 1 GB over the 100 GB/s wire (10 ms, 2-12 ms) and
 * meanwhile computes C (1 ms, 2-3 ms); GPU 1 computes B (3 ms) once the data is in: 12-15 ms.
 * Critical path: A 2 ms, the send 10 ms, B 3 ms = 15 ms; C is off it. */
START_TEST(path_follows_compute_transfer_compute)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    uint32_t a = graph_add_compute(g, 0, CAT_FORWARD, 2e-3, graph_label(g, "A"), 0);
    uint32_t x =
        graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, graph_label(g, "send"), 0);
    graph_add_compute(g, 0, CAT_FORWARD, 1e-3, graph_label(g, "C"), 0);
    uint32_t b = graph_add_compute(g, 1, CAT_BACKWARD, 3e-3, graph_label(g, "B"), 0);
    graph_add_edge(g, a, x);
    graph_add_edge(g, x, b);
    htae_result r;
    run(g, &c, &r);
    ck_close(r.makespan, 15e-3, 1e-4);
    report_critical_path cp;
    report_critical_path_create(g, &r, &cp);
    ck_assert_int_eq(cp.n, 3);
    item_is(&cp, 0, "A (GPU 0)", "compute", 2e-3, 1e-9);
    item_is(&cp, 1, "send (GPU 0 -> 1)", "pp-comm", 10e-3, 1e-4);
    item_is(&cp, 2, "B (GPU 1)", "compute", 3e-3, 1e-4);
    sums_to_makespan(&cp, &r);
    report_path_item top[5];
    ck_assert_int_eq(report_critical_path_top(&cp, top, 5), 3);
    ck_assert_str_eq(top[0].name, "send (GPU 0 -> 1)");
    ck_assert_str_eq(top[1].name, "B (GPU 1)");
    ck_assert_str_eq(top[2].name, "A (GPU 0)");
    ck_assert_int_eq(report_critical_path_top(&cp, top, 1), 1);
    report_critical_path_free(&cp);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* One GPU, a host-bound program: A (1 ms on the GPU) takes its host 3 ms to issue (span 0),
 * so B (1.5 ms) is issued at 3 ms although the GPU is free at 1: A runs 0-1, B 3-4.5. The
 * path: A 1 ms, host issue 2 ms, A again 1.5 ms (B has A's label) = 4.5 ms; by name, A's 2.5 ms
 * leads the host issue's 2 ms. */
START_TEST(host_issue_gap_is_a_wait_item)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    exec_graph *g = graph_create(1);
    int l = graph_label(g, "A");
    uint32_t a = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    uint32_t b = graph_add_compute(g, 0, CAT_FORWARD, 1.5e-3, l, 0);
    graph_set_host(g, a, HOST_ISSUE, 3e-3, 0.0);
    graph_set_host(g, b, HOST_ISSUE, 0.5e-3, 0.0);
    htae_result r;
    run(g, &c, &r);
    ck_close(r.start[b], 3e-3, 1e-12);
    ck_close(r.makespan, 4.5e-3, 1e-12);
    report_critical_path cp;
    report_critical_path_create(g, &r, &cp);
    ck_assert_int_eq(cp.n, 3);
    item_is(&cp, 0, "A (GPU 0)", "compute", 1e-3, 1e-12);
    item_is(&cp, 1, "host issue (GPU 0)", "wait", 2e-3, 1e-12);
    item_is(&cp, 2, "A (GPU 0)", "compute", 1.5e-3, 1e-12);
    sums_to_makespan(&cp, &r);
    report_path_item top[5];
    ck_assert_int_eq(report_critical_path_top(&cp, top, 5), 2);
    ck_assert_str_eq(top[0].name, "A (GPU 0)");
    ck_close(top[0].seconds, 2.5e-3, 1e-12);
    ck_assert_str_eq(top[1].name, "host issue (GPU 0)");
    ck_close(top[1].seconds, 2e-3, 1e-12);
    report_critical_path_free(&cp);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A collective waits for its last member: GPU 0 computes P (1 ms), GPU 1 Q (4 ms); then a
 * 0.1 GB all-reduce over 100 GB/s, 2(p-1)/p * S / B = 1 ms (4-5 ms); then GPU 0 computes D
 * (2 ms) and D' (1 ms, D's label): 5-8 ms. The path goes through Q, the member that arrived
 * last: Q 4 ms, the all-reduce 1 ms, D 3 ms (two tasks merged) = 8 ms; P is off it. */
START_TEST(collective_follows_its_last_member)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int ranks[2] = {0, 1}, ld = graph_label(g, "D");
    int grp = graph_add_group(g, ranks, 2);
    uint32_t p = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, graph_label(g, "P"), 0);
    uint32_t q = graph_add_compute(g, 1, CAT_FORWARD, 4e-3, graph_label(g, "Q"), 0);
    uint32_t ar[2];
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, 0.1 * GB, CAT_TP_COMM,
                         graph_label(g, "tp all-reduce"), 0, ar);
    graph_add_edge(g, p, ar[0]);
    graph_add_edge(g, q, ar[1]);
    uint32_t d = graph_add_compute(g, 0, CAT_FORWARD, 2e-3, ld, 0);
    graph_add_compute(g, 0, CAT_FORWARD, 1e-3, ld, 0);
    graph_add_edge(g, ar[0], d);
    htae_result r;
    run(g, &c, &r);
    ck_close(r.makespan, 8e-3, 1e-4);
    report_critical_path cp;
    report_critical_path_create(g, &r, &cp);
    ck_assert_int_eq(cp.n, 3);
    item_is(&cp, 0, "Q (GPU 1)", "compute", 4e-3, 1e-12);
    item_is(&cp, 1, "tp all-reduce", "tp-comm", 1e-3, 1e-4);
    item_is(&cp, 2, "D (GPU 0)", "compute", 3e-3, 1e-4);
    sums_to_makespan(&cp, &r);
    report_critical_path_free(&cp);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* One GPU running A (1 ms), then `periods` times B (2 ms) and C (0.5 ms), then Z (1 ms). */
static exec_graph *periodic_chain(int periods, cluster *c, htae_result *r)
{
    exec_graph *g = graph_create(1);
    int a = graph_label(g, "A"), b = graph_label(g, "B"), cc = graph_label(g, "C"),
        z = graph_label(g, "Z");
    graph_add_compute(g, 0, CAT_FORWARD, 1e-3, a, 0);
    for (int k = 0; k < periods; k++) {
        graph_add_compute(g, 0, CAT_FORWARD, 2e-3, b, k);
        graph_add_compute(g, 0, CAT_BACKWARD, 0.5e-3, cc, k);
    }
    graph_add_compute(g, 0, CAT_BACKWARD, 1e-3, z, 0);
    run(g, c, r);
    return g;
}

/* The timeline with 3 more periods than one holding a single (B, C) period, from it and the
 * one holding two: A, then (B, C) 4 times, then Z: 10 items, 1 + 4 x 2.5 + 1 = 12 ms. Its
 * summary's compute is 12 ms (4.5 ms + 3 x 2.5 ms), B leads the labels with 8 ms, C has 2 ms.
 * A timeline that is not the first with a period inserted does not line up. */
START_TEST(periodic_path_and_summary)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    htae_result r1, r2, r3;
    exec_graph *g1 = periodic_chain(1, &c, &r1), *g2 = periodic_chain(2, &c, &r2);
    ck_close(r1.makespan, 4.5e-3, 1e-12);
    ck_close(r2.makespan, 7e-3, 1e-12);
    report_critical_path cp;
    ck_assert(report_critical_path_periodic(g1, &r1, g2, &r2, 3, 1e-12, &cp));
    ck_assert_int_eq(cp.n, 10);
    item_is(&cp, 0, "A (GPU 0)", "compute", 1e-3, 1e-12);
    for (int k = 0; k < 4; k++) {
        item_is(&cp, 1 + 2 * k, "B (GPU 0)", "compute", 2e-3, 1e-12);
        item_is(&cp, 2 + 2 * k, "C (GPU 0)", "compute", 0.5e-3, 1e-12);
    }
    item_is(&cp, 9, "Z (GPU 0)", "compute", 1e-3, 1e-12);
    report_path_item top[5];
    ck_assert_int_eq(report_critical_path_top(&cp, top, 5), 4);
    ck_assert_str_eq(top[0].name, "B (GPU 0)");
    ck_close(top[0].seconds, 8e-3, 1e-12);
    report_critical_path_free(&cp);

    report_plan p1 = {g1, 1, 1, 1, 1, 1, 1, 0, 1, 1}, p2 = p1;
    p2.graph = g2;
    report_summary s;
    report_summarize_periodic(&p1, &r1, &p2, &r2, 3, 12e-3, &s);
    ck_close(s.fig.iteration_s, 12e-3, 1e-15);
    ck_close(s.fig.compute_s, 12e-3, 1e-12);
    ck_assert(fabs(s.fig.idle_s) <= 1e-15 && fabs(s.fig.exposed_comm_s) <= 1e-15);
    ck_assert_int_eq(s.n_top, 4);
    ck_assert_str_eq(g1->labels[s.top[0].label], "B");
    ck_close(s.top[0].seconds, 8e-3, 1e-12);
    ck_assert_str_eq(g1->labels[s.top[1].label], "C");
    ck_close(s.top[1].seconds, 2e-3, 1e-12);

    /* the same labels, but A and Z of 2 ms: neither end lines up (any timeline that is the
     * first with a block of steps inserted somewhere would) */
    exec_graph *g3 = graph_create(1);
    for (const char *n = "ABCBCZ"; *n; n++) {
        char name[2] = {*n, 0};
        double sec = *n == 'A' || *n == 'Z' ? 2e-3 : *n == 'B' ? 2e-3 : 0.5e-3;
        graph_add_compute(g3, 0, CAT_FORWARD, sec, graph_label(g3, name), 0);
    }
    run(g3, &c, &r3);
    ck_assert(!report_critical_path_periodic(g1, &r1, g3, &r3, 3, 1e-12, &cp));
    htae_result_free(&r1);
    htae_result_free(&r2);
    htae_result_free(&r3);
    graph_free(g1);
    graph_free(g2);
    graph_free(g3);
    cluster_free(&c);
}
END_TEST

static Suite *report_suite(void)
{
    const TTest *const tests[] = {path_follows_compute_transfer_compute,
                                  host_issue_gap_is_a_wait_item, collective_follows_its_last_member,
                                  periodic_path_and_summary, NULL};
    return suite_of("report", "critical path", 60, tests);
}

int main(void)
{
    return suite_run(report_suite());
}
