/* test_counters.c: the executor's link counters (htae_link_stat.rate) against values computed
 * by hand: off by default, a lone flow reads its link's bandwidth from when its bytes move
 * (after the route latency) to its end, flows overlapping with changing paces each add their
 * own average rate, a collective counts wire bytes at the link's rate, a parallel task's edges
 * all start after its worst route latency, and listing GPUs counts the links near them, with
 * every flow that crosses those links. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/graph.h"
#include "../sim/engine/htae.h"
#include "../topology/cluster.h"
#include "sim_util.h"
#include "suite_util.h"

static const htae_link_stat *find_link(const htae_result *r, const char *name)
{
    for (int i = 0; i < r->n_links; i++)
        if (strcmp(r->links[i].name, name) == 0)
            return &r->links[i];
    ck_abort_msg("link %s not in the result", name);
    return NULL;
}

/* The counter's points are exactly want[0..n) as (time, bytes/s), each within rel. */
static void expect_counter(const htae_link_stat *l, int n, const double (*want)[2], double rel)
{
    ck_assert_msg(l->n_rate == n, "%s: %d points, want %d", l->name, l->n_rate, n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(fabs(l->rate[i].t - want[i][0]) <= rel * fabs(want[i][0]) + 1e-12,
                      "%s point %d: t %.12g, want %.12g", l->name, i, l->rate[i].t, want[i][0]);
        ck_assert_msg(fabs(l->rate[i].rate - want[i][1]) <= rel * fabs(want[i][1]),
                      "%s point %d: rate %.12g, want %.12g", l->name, i, l->rate[i].rate,
                      want[i][1]);
    }
}

/* The counter's area: the bytes it shows. */
static double counter_bytes(const htae_link_stat *l)
{
    double b = 0.0;
    for (int i = 0; i + 1 < l->n_rate; i++)
        b += l->rate[i].rate * (l->rate[i + 1].t - l->rate[i].t);
    return b;
}

/* The receiving side of a transfer: an instant task on its peer that depends on it. */
static void receive(exec_graph *g, uint32_t transfer)
{
    const graph_task *x = &g->tasks[transfer];
    uint32_t r = graph_add_compute(g, x->peer, CAT_FORWARD, 0.0, x->label, x->micro);
    graph_add_edge(g, transfer, r);
}

/* One transfer of `bytes` from rank 0 to 1 on the two-GPU platform `xml`, counters as given. */
static void one_transfer(const char *xml, double bytes, const unsigned char *counted,
                         htae_result *r, cluster *c)
{
    sim_load(xml, c);
    exec_graph *g = graph_create(2);
    receive(g, graph_add_transfer(g, 0, 1, STREAM_PP, bytes, CAT_PP_COMM, graph_label(g, "x"), 0));
    htae_options o = sim_bare_options();
    o.counter_ranks = counted;
    sim_run(g, c, &o, r);
    graph_free(g);
}

static const unsigned char both[2] = {1, 1};

START_TEST(counters_are_off_by_default)
{
    htae_options o;
    htae_default_options(&o);
    ck_assert_ptr_null(o.counter_ranks);
    cluster c;
    htae_result r;
    one_transfer("tests/data/htae/two-100GBps.xml", 1 * GB, NULL, &r, &c);
    ck_assert_int_eq(r.n_links, 1);
    ck_assert_int_eq(r.links[0].n_rate, 0);
    ck_assert_ptr_null(r.links[0].rate);
    htae_result_free(&r);
    cluster_free(&c);
}
END_TEST

/* 1 GB alone on the 100 GB/s wire (no latency, no launch cost): 100e9 bytes/s from 0 to
 * 1e9 / 100e9 = 10 ms, then 0; the wire's other direction carried nothing. */
START_TEST(lone_transfer_reads_its_link_bandwidth)
{
    cluster c;
    htae_result r;
    one_transfer("tests/data/htae/two-100GBps.xml", 1 * GB, both, &r, &c);
    ck_assert_int_eq(r.n_links, 1);
    const double want[][2] = {{0.0, 100e9}, {0.010, 0.0}};
    expect_counter(find_link(&r, "wire_UP"), 2, want, 1e-9);
    htae_result_free(&r);
    cluster_free(&c);
}
END_TEST

/* With 50 us of latency the flow lasts 50 us + 10 ms (the link is busy all of it) but its bytes
 * move only after the latency: 100e9 bytes/s from 50 us to 10.05 ms. */
START_TEST(latency_delays_the_counter)
{
    cluster c;
    htae_result r;
    one_transfer("tests/data/htae/two-100GBps-50us.xml", 1 * GB, both, &r, &c);
    const htae_link_stat *w = find_link(&r, "wire_UP");
    ck_close(w->busy_s, 0.01005, 1e-9);
    const double want[][2] = {{50e-6, 100e9}, {0.01005, 0.0}};
    expect_counter(w, 2, want, 1e-9);
    ck_close(counter_bytes(w), 1e9, 1e-9);
    htae_result_free(&r);
    cluster_free(&c);
}
END_TEST

/* Three flows from GPU 0 to 1 on the 100 GB/s wire, each from its own stream: A (2.5 GB) at 0,
 * B (0.5 GB) at 10 ms and C (1 GB) at 15 ms (after 10 and 5 ms of compute). Fair shares:
 *   0-10 ms    A alone, 100 GB/s          A 1 GB
 *   10-15 ms   A, B at 50 GB/s            A 1.25, B 0.25
 *   15-22.5    A, B, C at 33.3 GB/s       B done (0.25 more), A 1.5, C 0.25
 *   22.5-37.5  A, C at 50 GB/s            C done (0.75 more), A 2.25
 *   37.5-40    A alone                    A done
 * The counter adds each flow's average over its life: A 2.5e9 / 0.04 = 62.5 GB/s, B 0.5e9 /
 * 0.0125 = 40 GB/s, C 1e9 / 0.0225 = 44.44 GB/s; 146.9 GB/s while all three run, above the
 * wire's 100 (htae.h says why). Its area is the 4e9 bytes. B, started second, ends first: an
 * end closes its own actor's flow, not the oldest or the newest on the pair. */
START_TEST(counter_adds_each_flows_average_rate)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    receive(g, graph_add_transfer(g, 0, 1, STREAM_PP, 2.5 * GB, CAT_PP_COMM, l, 0));
    uint32_t k1 = graph_add_compute(g, 0, CAT_FORWARD, 0.010, l, 0);
    uint32_t k2 = graph_add_compute(g, 0, CAT_FORWARD, 0.005, l, 0);
    uint32_t b = graph_add_transfer(g, 0, 1, STREAM_DP, 0.5 * GB, CAT_DP_COMM, l, 0);
    uint32_t cc = graph_add_transfer(g, 0, 1, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0);
    graph_add_edge(g, k1, b);
    graph_add_edge(g, k2, cc);
    receive(g, b);
    receive(g, cc);
    htae_options o = sim_bare_options();
    o.counter_ranks = both;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[b], 0.0225, 1e-9);
    ck_close(r.end[cc], 0.0375, 1e-9);
    ck_close(r.makespan, 0.040, 1e-9);
    double ra = 2.5e9 / 0.040, rb = 0.5e9 / 0.0125, rc = 1e9 / 0.0225;
    const double want[][2] = {{0.0, ra},         {0.010, ra + rb}, {0.015, ra + rb + rc},
                              {0.0225, ra + rc}, {0.0375, ra},     {0.040, 0.0}};
    const htae_link_stat *w = find_link(&r, "wire_UP");
    expect_counter(w, 6, want, 1e-9);
    ck_close(counter_bytes(w), 4e9, 1e-9);
    ck_close(w->bytes, 4e9, 1e-12);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A 1 GB ring all-reduce over dgx4's 4 GPUs with the default options: each ring edge carries
 * 2(p-1)/p S / efficiency = 1.5e9 / 0.71 wire bytes over its sender's UP and its receiver's
 * DOWN port half (300 GB/s, 0.7 us each). The ring starts after the launch and 6 steps of
 * protocol latency and 5 of route latency (40 + 3 + 7 us), its bytes move after one more
 * route latency (1.4 us): all 8 port halves read 300 GB/s (the payload moves at 0.71 of it,
 * 213 GB/s) from 51.4 us for 1.5e9 / 0.71 / 300e9 = 7.042 ms. */
START_TEST(ring_counts_wire_bytes_at_the_link_rate)
{
    cluster c;
    sim_load("topology/clusters/dgx4.xml", &c);
    exec_graph *g = graph_create(4);
    int ranks[4] = {0, 1, 2, 3}, grp = graph_add_group(g, ranks, 4);
    uint32_t ids[4];
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, 1 * GB, CAT_TP_COMM,
                         graph_label(g, "ar"), 0, ids);
    htae_options o;
    htae_default_options(&o);
    unsigned char all[4] = {1, 1, 1, 1};
    o.counter_ranks = all;
    htae_result r;
    sim_run(g, &c, &o, &r);
    double lat = 1.4e-6, wire = 1.5e9 / o.protocol_efficiency;
    double t0 = o.coll_launch_s + 6 * o.coll_step_s + 6 * lat, t1 = t0 + wire / 300e9;
    ck_close(t0, 51.4e-6, 1e-9);
    ck_close(r.end[ids[0]], t1, 1e-9);
    const double want[][2] = {{t0, 300e9}, {t1, 0.0}};
    ck_assert_int_eq(r.n_links, 8);
    for (int i = 0; i < r.n_links; i++) {
        expect_counter(&r.links[i], 2, want, 1e-9);
        ck_close(r.links[i].bytes, wire, 1e-12);
    }
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* One parallel task whose edges have routes of different latency: an all-to-all-v over 2 x 2
 * GPUs (sim_load_two_by_two: NVLink 100 GB/s, no latency; NICs 10 GB/s, those of local GPU 1
 * 0.5 ms). Rank 0 sends 1 GB to rank 2 (its NIC: 100 ms at 10 GB/s, the bottleneck), 0.5 GB to
 * rank 1 (NVLink, no latency), rank 3 sends 0.2 GB to rank 1 (two 0.5 ms NICs: 1 ms). SimGrid
 * starts the task's bytes after its worst route latency, 1 ms, and every edge moves at the
 * task's pace until 101 ms: the NVLink port reads 0.5e9 / 0.1 = 5 GB/s from 1 ms, not from 0
 * (its own route has no latency), rank 0's NIC 10 GB/s, rank 3's 2 GB/s. */
START_TEST(a_tasks_edges_start_after_its_worst_latency)
{
    cluster c;
    sim_load_two_by_two(&c);
    exec_graph *g = graph_create(4);
    int ranks[4] = {0, 1, 2, 3}, grp = graph_add_group(g, ranks, 4);
    double m[16] = {0};
    m[0 * 4 + 2] = 1 * GB;
    m[0 * 4 + 1] = 0.5 * GB;
    m[3 * 4 + 1] = 0.2 * GB;
    uint32_t ids[4];
    graph_add_alltoallv(g, grp, STREAM_DP, m, CAT_DP_COMM, graph_label(g, "a2av"), 0, ids);
    htae_options o = sim_bare_options();
    unsigned char all[4] = {1, 1, 1, 1};
    o.counter_ranks = all;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], 0.101, 1e-9);
    const double nvl[][2] = {{0.001, 5e9}, {0.101, 0.0}}, nic0[][2] = {{0.001, 10e9}, {0.101, 0}},
                 nic3[][2] = {{0.001, 2e9}, {0.101, 0.0}};
    expect_counter(find_link(&r, "nvl0_0_UP"), 2, nvl, 1e-9);
    expect_counter(find_link(&r, "nic0_0_UP"), 2, nic0, 1e-9);
    expect_counter(find_link(&r, "nic1_1_UP"), 2, nic3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Two nodes of two GPUs, 10 GB/s NICs, a shared 1000 GB/s fabric (two-by-two-fabric.xml). 1 GB
 * from rank 0 to 2 and 1 GB from 1 to 3 at once, each at its NICs' 10 GB/s for 100 ms. Only
 * GPU 0 listed: the links of its transfer's route (nic0_0 UP, fabric UP, nic1_0 DOWN) are
 * counted, and the fabric's counter holds both flows (20 GB/s); rank 1's NIC and rank 3's are
 * not counted, though they carried their 1e9 bytes. */
START_TEST(listed_gpus_count_the_links_near_them)
{
    cluster c;
    sim_load("tests/data/htae/two-by-two-fabric.xml", &c);
    exec_graph *g = graph_create(4);
    int l = graph_label(g, "x");
    receive(g, graph_add_transfer(g, 0, 2, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0));
    receive(g, graph_add_transfer(g, 1, 3, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0));
    htae_options o = sim_bare_options();
    unsigned char gpu0[4] = {1, 0, 0, 0};
    o.counter_ranks = gpu0;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.makespan, 0.100, 1e-9);
    ck_assert_int_eq(r.n_links, 5);
    const double fabric[][2] = {{0.0, 20e9}, {0.100, 0.0}}, nic[][2] = {{0.0, 10e9}, {0.100, 0}};
    expect_counter(find_link(&r, "fabric_UP"), 2, fabric, 1e-9);
    expect_counter(find_link(&r, "nic0_0_UP"), 2, nic, 1e-9);
    expect_counter(find_link(&r, "nic1_0_DOWN"), 2, nic, 1e-9);
    const char *uncounted[] = {"nic0_1_UP", "nic1_1_DOWN"};
    for (int i = 0; i < 2; i++) {
        const htae_link_stat *n = find_link(&r, uncounted[i]);
        ck_assert_int_eq(n->n_rate, 0);
        ck_close(n->bytes, 1e9, 1e-12);
    }
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {counters_are_off_by_default,
                                  lone_transfer_reads_its_link_bandwidth,
                                  latency_delays_the_counter,
                                  counter_adds_each_flows_average_rate,
                                  ring_counts_wire_bytes_at_the_link_rate,
                                  a_tasks_edges_start_after_its_worst_latency,
                                  listed_gpus_count_the_links_near_them,
                                  NULL};
    return suite_run(suite_of("counters", "counters", 60, tests));
}
