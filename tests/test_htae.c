/* test_htae.c: the executor against timings computed by hand: flows sharing links, ring
 * collectives, pipeline bubbles, compute slowed by communication, the host thread's issue
 * timeline, and deadlock detection. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/engine.h>

#include "../sim/base/graph.h"
#include "../sim/engine/htae.h"
#include "../strategies/schedule.h"
#include "../topology/cluster.h"
#include "sim_util.h"
#include "suite_util.h"

/* The receiving side of a transfer: an instant task on its peer that depends on it (every
 * transfer of a graph must be received). It ends when the transfer does. */
static void receive(exec_graph *g, uint32_t transfer)
{
    const graph_task *x = &g->tasks[transfer];
    uint32_t r = graph_add_compute(g, x->peer, CAT_FORWARD, 0.0, x->label, x->micro);
    graph_add_edge(g, transfer, r);
}

START_TEST(transfer_1gb_over_100gbps_takes_10ms)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    uint32_t t =
        graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, graph_label(g, "x"), 0);
    receive(g, t);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[t] - r.start[t], 0.010, 1e-3); /* 1e9 B / 100e9 B/s */
    ck_close(r.makespan, 0.010, 1e-3);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

START_TEST(two_flows_share_a_link_and_take_20ms)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t a = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t b = graph_add_transfer(g, 0, 1, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0);
    receive(g, a);
    receive(g, b);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[a], 0.020, 1e-3); /* each gets 50 GB/s */
    ck_close(r.end[b], 0.020, 1e-3);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

START_TEST(opposite_directions_do_not_share)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t a = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t b = graph_add_transfer(g, 1, 0, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    receive(g, a);
    receive(g, b);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[a], 0.010, 1e-3); /* full duplex: 100 GB/s each way */
    ck_close(r.end[b], 0.010, 1e-3);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* The 4 GPUs of topology/clusters/dgx4.xml loaded into c, and a graph holding one all-reduce of
 * `bytes` over all of them (its member tasks in ids). */
static exec_graph *dgx4_allreduce(cluster *c, double bytes, uint32_t ids[4])
{
    sim_load("topology/clusters/dgx4.xml", c);
    exec_graph *g = graph_create(4);
    int ranks[4] = {0, 1, 2, 3};
    int grp = graph_add_group(g, ranks, 4);
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, bytes, CAT_TP_COMM,
                         graph_label(g, "ar"), 0, ids);
    return g;
}

/* A ring all-reduce of S bytes over p GPUs on NVSwitch (300 GB/s ports, 0.7 us per port):
 * every ring edge carries 2(p-1)/p * S, plus 2(p-1) steps of latency and the launch. */
START_TEST(ring_allreduce_matches_formula)
{
    cluster c;
    uint32_t ids[4];
    double S = 1 * GB;
    exec_graph *g = dgx4_allreduce(&c, S, ids);
    htae_options o;
    htae_default_options(&o);
    htae_result r;
    sim_run(g, &c, &o, &r);
    double p = 4, B = 300 * GB * o.protocol_efficiency, lat = 2 * 0.7e-6;
    double want = o.coll_launch_s + 2 * (p - 1) * (o.coll_step_s + lat) + 2 * (p - 1) / p * S / B;
    ck_close(want, htae_ring_latency_terms(&o, COLL_ALLREDUCE, 4, lat) + 2 * (p - 1) / p * S / B,
             1e-12);
    for (int i = 0; i < 4; i++) {
        ck_close(r.start[ids[i]], 0.0, 1e-9);
        ck_close(r.end[ids[i]], want, 1e-3); /* 6.5 ms + 86 us */
    }
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Reduce-scatter and all-gather each move (p-1)/p * S per edge in p-1 steps. */
START_TEST(ring_reduce_scatter_and_allgather)
{
    cluster c;
    sim_load("topology/clusters/dgx4.xml", &c);
    exec_graph *g = graph_create(4);
    int ranks[4] = {0, 1, 2, 3};
    int grp = graph_add_group(g, ranks, 4);
    uint32_t rs[4], ag[4];
    double S = 0.6 * GB;
    int l = graph_label(g, "c");
    graph_add_collective(g, COLL_REDUCE_SCATTER, grp, STREAM_TP, S, CAT_TP_COMM, l, 0, rs);
    graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, S, CAT_TP_COMM, l, 0, ag);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    double one = 3 * 1.4e-6 + 0.75 * S / (300 * GB); /* 1.5 ms + 4.2 us */
    ck_close(r.end[rs[0]], one, 1e-3);
    ck_close(r.end[ag[3]], 2 * one, 1e-3);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Three GPUs with a link per pair hold two disjoint directed rings: the all-reduce volume
 * 2(p-1)/p S = 4/3 GB splits over both, 2/3 GB per edge at 100 GB/s. One ring would take 13.3 ms. */
START_TEST(multi_link_topology_uses_two_rings)
{
    cluster c;
    sim_load("tests/data/htae/mesh3.xml", &c);
    exec_graph *g = graph_create(3);
    int ranks[3] = {0, 1, 2};
    uint32_t ids[3];
    graph_add_collective(g, COLL_ALLREDUCE, graph_add_group(g, ranks, 3), STREAM_TP, 1 * GB,
                         CAT_TP_COMM, graph_label(g, "ar"), 0, ids);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], (4.0 / 3.0) / 2.0 * GB / (100 * GB), 1e-3);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* p stages, m micro-batches, forward f and backward b on every stage: GPipe and 1F1B both
 * take (m + p - 1)(f + b), so the bubble is (p - 1) / (m + p - 1) of the iteration. */
static void pipeline_case(pipeline_schedule sched)
{
    cluster c;
    sim_load("topology/clusters/dgx4.xml", &c);
    const int p = 4, m = 8;
    const double f = 1e-3, b = 2e-3;
    exec_graph *g = graph_create(p);
    uint32_t fwd[4][8], bwd[4][8];
    pipeline_unit units[16];
    int lf = graph_label(g, "fwd"), lb = graph_label(g, "bwd");
    for (int s = 0; s < p; s++) {
        int n = pipeline_order(sched, p, s, m, 1, 0, units);
        ck_assert_int_eq(n, 2 * m);
        for (int u = 0; u < n; u++) {
            int mb = units[u].micro;
            if (units[u].backward)
                bwd[s][mb] = graph_add_compute(g, s, CAT_BACKWARD, b, lb, mb);
            else
                fwd[s][mb] = graph_add_compute(g, s, CAT_FORWARD, f, lf, mb);
        }
    }
    for (int s = 0; s < p; s++)
        for (int mb = 0; mb < m; mb++) {
            if (s + 1 < p) {
                graph_add_edge(g, fwd[s][mb], fwd[s + 1][mb]);
                graph_add_edge(g, bwd[s + 1][mb], bwd[s][mb]);
            }
        }
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    double want = (m + p - 1) * (f + b); /* 33 ms */
    ck_close(r.makespan, want, 1e-6);
    double busy = m * (f + b);
    ck_close((r.makespan - busy) / r.makespan, (double)(p - 1) / (m + p - 1), 1e-6);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(gpipe_textbook_bubble)
{
    pipeline_case(SCHED_GPIPE);
}
END_TEST

START_TEST(one_f_one_b_textbook_bubble)
{
    pipeline_case(SCHED_1F1B);
}
END_TEST

/* Compute progresses at 1 / (1 + slowdown) of full speed while its GPU communicates, whether
 * the communication was there first or arrives mid-task. */
START_TEST(compute_overlapping_comm_is_slowed)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t c1 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    uint32_t c2 = graph_add_compute(g, 0, CAT_FORWARD, 5e-3, l, 0);
    uint32_t x = graph_add_transfer(g, 0, 1, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0);
    uint32_t c4 = graph_add_compute(g, 1, CAT_FORWARD, 2e-3, l, 0);
    uint32_t c3 = graph_add_compute(g, 1, CAT_FORWARD, 5e-3, l, 0);
    graph_add_edge(g, c1, x); /* the transfer runs 1 ms .. 11 ms, GPU 0 -> GPU 1 */
    graph_add_edge(g, x, c3);
    htae_options o = sim_bare_options();
    o.overlap_slowdown = 0.2;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[c1], 1e-3, 1e-6); /* alone: full speed */
    ck_close(r.end[x], 0.011, 1e-4);
    ck_close(r.end[c2], 1e-3 + 5e-3 * 1.2, 1e-6); /* all of it under the transfer */
    ck_close(r.end[c4], 1e-3 + 1e-3 * 1.2, 1e-6); /* 1 ms alone, the rest slowed */
    ck_close(r.start[c3], 0.011, 1e-4);           /* after the transfer: full speed again */
    ck_close(r.end[c3], 0.016, 1e-4);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* By default compute beside communication runs on the SMs the communication kernels leave:
 * each stream with a kernel in flight holds comm_sms of the GPU's S SMs (A100: 108), and
 * compute runs at (S - held) / S. Rank 0 sends 1 GB to rank 1 on the DP stream from 1 ms; at
 * 100 GB/s alone that takes 10 ms. Its 5 ms of compute from 1 ms runs beside one kernel:
 * 5 ms x 108 / 84 = 6.4286 ms. A second 1 GB send on the PP stream from 1 ms shares the wire
 * (both end at 21 ms) and, in a second run, rank 0's compute runs beside two kernels:
 * 5 ms x 108 / 60 = 9 ms. A kernel holding more than the GPU has leaves it one SM: with
 * comm_sms 100, held = min(200, 107): 0.1 ms of compute takes 10.8 ms. */
START_TEST(compute_beside_comm_runs_on_the_sms_left)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    ck_assert_int_eq(c.device[0]->sms, 108);
    for (int twice = 0; twice < 3; twice++) {
        exec_graph *g = graph_create(2);
        int l = graph_label(g, "x");
        uint32_t c1 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
        uint32_t c2 = graph_add_compute(g, 0, CAT_FORWARD, twice == 2 ? 1e-4 : 5e-3, l, 0);
        uint32_t x = graph_add_transfer(g, 0, 1, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0);
        graph_add_edge(g, c1, x);
        graph_add_edge(g, x, graph_add_compute(g, 1, CAT_FORWARD, 1e-3, l, 0));
        uint32_t y = 0;
        if (twice) {
            y = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
            graph_add_edge(g, c1, y);
            graph_add_edge(g, y, graph_add_compute(g, 1, CAT_FORWARD, 1e-3, l, 0));
        }
        htae_options o = sim_bare_options();
        o.overlap_slowdown = -1.0;
        o.comm_sms = twice == 2 ? 100.0 : 24.0;
        htae_result r;
        sim_run(g, &c, &o, &r);
        ck_close(r.end[c1], 1e-3, 1e-9);
        if (twice == 0) {
            ck_close(r.end[x], 0.011, 1e-6);
            ck_close(r.end[c2], 1e-3 + 5e-3 * 108.0 / 84.0, 1e-9);
        } else if (twice == 1) {
            ck_close(r.end[x], 0.021, 1e-6);
            ck_close(r.end[y], 0.021, 1e-6);
            ck_close(r.end[c2], 1e-3 + 5e-3 * 108.0 / 60.0, 1e-9);
        } else {
            ck_close(r.end[c2], 1e-3 + 1e-4 * 108.0, 1e-9);
        }
        htae_result_free(&r);
        graph_free(g);
    }
    cluster_free(&c);
}
END_TEST

/* The SM rule against an H200 (132 SMs) measured beside a kernel holding N SMs
 * (tests/data/measured/h200_overlap.csv, scripts/gpu_measure.py `overlap`): every kernel of at
 * least 0.2 ms (GEMMs of nine models' shapes and squares, cuDNN attention) beside 8, 16 or 32
 * copying blocks, run through the executor as a compute task of its measured time alone beside
 * a transfer on comm_sms = N. The rule is within 15% geomean (13.2%: GEMMs, whose 2-SM clusters
 * lose more than the SMs held, come out 13-14% fast; attention, without clusters, 1.4%); the
 * fixed 15% slowdown it replaces misses the same rows by 20%. */
START_TEST(sm_rule_against_h200_measurements)
{
    cluster c;
    sim_load("tests/data/htae/two-h200-100GBps.xml", &c);
    ck_assert_int_eq(c.device[0]->sms, 132);
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/tests/data/measured/h200_overlap.csv", ps_data_dir());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f, "cannot open %s", path);
    ck_assert(fgets(line, sizeof line,
                    f)); /* op,side,side_blocks,sleep_ns,side_smem,alone_ms,none_ms,beside_ms,... */
    double sum[2] = {0}, sum_attn = 0;
    int rows = 0, attn = 0;
    while (fgets(line, sizeof line, f)) {
        char *fld[8], *p = line;
        int k = 0;
        while (k < 8) {
            fld[k++] = p;
            p += strcspn(p, ",");
            if (*p != ',')
                break;
            *p++ = 0;
        }
        if (k < 8 || strcmp(fld[1], "copy") || strcmp(fld[4], "excl") || !*fld[6] ||
            atof(fld[6]) < 0.2)
            continue;
        double none = atof(fld[6]) * 1e-3, beside = atof(fld[7]) * 1e-3;
        int n = atoi(fld[2]);
        exec_graph *g = graph_create(2);
        int l = graph_label(g, "x");
        uint32_t k0 = graph_add_compute(g, 0, CAT_FORWARD, none, l, 0);
        uint32_t x = graph_add_transfer(g, 0, 1, STREAM_DP, 100 * GB, CAT_DP_COMM, l, 0);
        graph_add_edge(g, x, graph_add_compute(g, 1, CAT_FORWARD, 1e-3, l, 0));
        htae_options o = sim_bare_options();
        o.overlap_slowdown = -1.0;
        o.comm_sms = n;
        htae_result r;
        sim_run(g, &c, &o, &r);
        ck_close(r.end[k0], none * 132.0 / (132.0 - n), 1e-9);
        double e = fabs(log(beside / r.end[k0]));
        sum[0] += e;
        sum[1] += fabs(log(beside / (none * 1.15)));
        if (!strncmp(fld[0], "sdpa", 4)) {
            sum_attn += e;
            attn++;
        }
        rows++;
        htae_result_free(&r);
        graph_free(g);
    }
    fclose(f);
    ck_assert_int_eq(rows, 86);
    ck_assert_int_eq(attn, 7);
    double geo = exp(sum[0] / rows) - 1, flat = exp(sum[1] / rows) - 1;
    ck_assert_msg(geo < 0.15 && flat > geo + 0.05, "SM rule %.3f, fixed 15%% %.3f", geo, flat);
    ck_assert_msg(exp(sum_attn / attn) - 1 < 0.03, "attention %.3f", exp(sum_attn / attn) - 1);
    cluster_free(&c);
}
END_TEST

/* A run after another in the same process gives the same times to the last bit as the first
 * (SimGrid's clock is put back to 0 between them: htae_clock_restart), and counts from 0: a
 * 1 GB transfer over 100 GB/s after 1 ms of compute ends at 11 ms both times, the clock too. */
START_TEST(second_run_in_a_process_starts_at_zero)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    htae_result r[2];
    uint32_t x = 0;
    for (int k = 0; k < 2; k++) {
        exec_graph *g = graph_create(2);
        int l = graph_label(g, "x");
        uint32_t c1 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
        graph_add_compute(g, 0, CAT_FORWARD, 5e-3, l, 0);
        x = graph_add_transfer(g, 0, 1, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0);
        uint32_t c3 = graph_add_compute(g, 1, CAT_FORWARD, 5e-3, l, 0);
        graph_add_edge(g, c1, x);
        graph_add_edge(g, x, c3);
        htae_options o = sim_bare_options();
        o.overlap_slowdown = 0.2;
        sim_run(g, &c, &o, &r[k]);
        ck_assert(simgrid_get_clock() == r[k].makespan); /* it ran from 0 */
        graph_free(g);
    }
    ck_close(r[1].end[x], 0.011, 1e-4);
    for (uint32_t t = 0; t < 4; t++) {
        ck_assert(r[1].start[t] == r[0].start[t]);
        ck_assert(r[1].end[t] == r[0].end[t]);
    }
    htae_result_free(&r[0]);
    htae_result_free(&r[1]);
    cluster_free(&c);
}
END_TEST

/* Software overheads add up as documented: a transfer pays its launch cost once. */
START_TEST(p2p_launch_cost_is_added)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    uint32_t t =
        graph_add_transfer(g, 0, 1, STREAM_PP, 0.5 * GB, CAT_PP_COMM, graph_label(g, "x"), 0);
    receive(g, t);
    htae_options o = sim_bare_options();
    o.p2p_launch_s = 20e-6;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[t], 20e-6 + 0.005, 1e-4);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A graph of a CPU thread and two GPU streams (graph_create_streams): the CPU thread's 1 ms
 * of work precedes a 2 ms kernel on stream a (lag 0.5 ms after that work: the launch latency)
 * and a 3 ms kernel on stream b; the streams compute at once, at full speed. So a runs
 * 1.5 .. 3.5 ms, b 1 .. 4 ms, the CPU thread is done at 1 ms. */
START_TEST(cpu_thread_and_two_gpu_streams_with_a_lag)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    stream_kind kinds[3] = {STREAM_KIND_CPU, STREAM_KIND_GPU, STREAM_KIND_GPU};
    const char *names[3] = {"cpu", "a", "b"};
    exec_graph *g = graph_create_streams(2, 3, kinds, names);
    int l = graph_label(g, "x");
    uint32_t host = graph_add_compute_on(g, 0, 0, CAT_HOST, 1e-3, l, 0);
    uint32_t ka = graph_add_compute_on(g, 0, 1, CAT_KERNEL, 2e-3, l, 0);
    uint32_t kb = graph_add_compute_on(g, 0, 2, CAT_KERNEL, 3e-3, l, 0);
    graph_add_edge(g, host, ka);
    graph_add_edge(g, host, kb);
    graph_set_lag(g, ka, 0.5e-3);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[host], 1e-3, 1e-9);
    ck_close(r.start[ka], 1.5e-3, 1e-9);
    ck_close(r.end[ka], 3.5e-3, 1e-9);
    ck_close(r.start[kb], 1e-3, 1e-9);
    ck_close(r.end[kb], 4e-3, 1e-9);
    ck_assert_str_eq(graph_stream_name(g, 2), "b");
    ck_assert(graph_stream_is_cpu(g, 0) && !graph_stream_is_cpu(g, 1));
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* The host thread issues in program order and never waits for the GPU: a compute task starts
 * once its issue starts and ends no earlier than issue start + span. Hand timeline (ms):
 * A issued 0-3 (span 3.5): runs 0 .. max(1, 3.5) = 3.5. B issued 3-3.5: starts when A ends,
 * 3.5 .. max(3.5 + 2, 3 + 2.2) = 5.5. C issued 3.5-7.5: 5.5 .. max(5.6, 3.5 + 4.05) = 7.55. */
START_TEST(host_bound_compute_follows_the_issue_timeline)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    exec_graph *g = graph_create(1);
    int l = graph_label(g, "x");
    uint32_t a = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    uint32_t b = graph_add_compute(g, 0, CAT_FORWARD, 2e-3, l, 0);
    uint32_t k = graph_add_compute(g, 0, CAT_FORWARD, 0.1e-3, l, 0);
    graph_set_host(g, a, HOST_ISSUE, 3e-3, 3.5e-3);
    graph_set_host(g, b, HOST_ISSUE, 0.5e-3, 2.2e-3);
    graph_set_host(g, k, HOST_ISSUE, 4e-3, 4.05e-3);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[a], 3.5e-3, 1e-9);
    ck_close(r.start[b], 3.5e-3, 1e-9);
    ck_close(r.end[b], 5.5e-3, 1e-9);
    ck_close(r.start[k], 5.5e-3, 1e-9);
    ck_close(r.end[k], 7.55e-3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* An all-reduce issued by a host-bound program runs while the host issues what follows: 0.1 GB
 * over 100 GB/s on 2 GPUs is 2(p-1)/p * S / B = 1 ms. Each GPU: A issued 0-2 ms (span 2),
 * the all-reduce issued 2-2.1 (runs 2.1-3.1), B issued 2.1-5.1 (span 3): B runs 3.1 .. 5.1.
 * The iteration takes the host's 5.1 ms, not 2 + 0.1 + 1 + 3. */
START_TEST(collective_hides_behind_a_host_bound_program)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x"), ranks[2] = {0, 1};
    int grp = graph_add_group(g, ranks, 2);
    uint32_t a[2], ar[2], b[2];
    for (int r = 0; r < 2; r++) {
        a[r] = graph_add_compute(g, r, CAT_FORWARD, 0.5e-3, l, 0);
        graph_set_host(g, a[r], HOST_ISSUE, 2e-3, 2e-3);
    }
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, 0.1 * GB, CAT_TP_COMM, l, 0, ar);
    for (int r = 0; r < 2; r++) {
        graph_set_host(g, ar[r], HOST_ISSUE, 0.1e-3, 0.0);
        graph_add_edge(g, a[r], ar[r]);
        b[r] = graph_add_compute(g, r, CAT_FORWARD, 0.5e-3, l, 0);
        graph_set_host(g, b[r], HOST_ISSUE, 3e-3, 3e-3);
        graph_add_edge(g, ar[r], b[r]);
    }
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    for (int k = 0; k < 2; k++) {
        ck_close(r.start[ar[k]], 2.1e-3, 1e-9);
        ck_close(r.end[ar[k]], 3.1e-3, 1e-4);
        ck_close(r.start[b[k]], 3.1e-3, 1e-4);
        ck_close(r.end[b[k]], 5.1e-3, 1e-9);
    }
    ck_close(r.makespan, 5.1e-3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Point-to-point: GPU 0 computes A (2 ms; issued at 0-0.1), then sends 1 GB (issued
 * 0.1-0.15): the send runs 2-12 ms, and the sender's host goes on, so C (issued 0.15-0.65)
 * runs 2-3 beside it. GPU 1's D waits for the data (HOST_WAIT: a blocking receive): its host
 * issues it 12-13 (span 1.5), so D runs 12 .. 13.5. */
START_TEST(host_waits_at_a_blocking_receive_only)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t a = graph_add_compute(g, 0, CAT_FORWARD, 2e-3, l, 0);
    uint32_t x = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t k = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    uint32_t d = graph_add_compute(g, 1, CAT_FORWARD, 1e-3, l, 0);
    graph_set_host(g, a, HOST_ISSUE, 0.1e-3, 0.1e-3);
    graph_set_host(g, x, HOST_ISSUE, 0.05e-3, 0.0);
    graph_set_host(g, k, HOST_ISSUE, 0.5e-3, 0.5e-3);
    graph_set_host(g, d, HOST_ISSUE | HOST_WAIT, 1e-3, 1.5e-3);
    graph_add_edge(g, a, x);
    graph_add_edge(g, x, d);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.start[x], 2e-3, 1e-9);
    ck_close(r.end[x], 12e-3, 1e-4);
    ck_close(r.start[k], 2e-3, 1e-9);
    ck_close(r.end[k], 3e-3, 1e-9);
    ck_close(r.start[d], 12e-3, 1e-4);
    ck_close(r.end[d], 13.5e-3, 1e-4);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Two GPUs reaching two collectives in opposite orders would hang NCCL: refuse the graph. */
START_TEST(inconsistent_collective_order_is_a_cycle)
{
    exec_graph *g = graph_create(2);
    int ranks[2] = {0, 1};
    int grp = graph_add_group(g, ranks, 2);
    uint32_t x[2], y[2];
    int l = graph_label(g, "c");
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, 1e6, CAT_TP_COMM, l, 0, x);
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP, 1e6, CAT_DP_COMM, l, 0, y);
    graph_add_edge(g, x[0], y[0]); /* GPU 0: x then y */
    graph_add_edge(g, y[1], x[1]); /* GPU 1: y then x */
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(graph_finalize(g, &err), PS_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cycle"));
    /* the cycle, each task before the next: x on GPU 0 (its edge) before y on GPU 0, which
     * waits for y on GPU 1 to arrive, which (its edge) waits for x on GPU 1, which waits for
     * x on GPU 0: four tasks, starting where the walk from task 0 (x[0]) closes it */
    uint32_t cyc[8];
    ck_assert_uint_eq(graph_find_cycle(g, cyc, 8), 4);
    uint32_t want[4] = {x[0], y[0], y[1], x[1]};
    int at = -1;
    for (int i = 0; i < 4; i++)
        if (cyc[i] == x[0])
            at = i;
    ck_assert_int_ge(at, 0);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(cyc[(at + i) % 4], want[i]);
    ck_assert_uint_eq(graph_find_cycle(g, cyc, 2), 4); /* the length, two of them written */
    graph_free(g);
}
END_TEST

/* A host that blocks (HOST_WAIT) on data it has not yet issued itself: task 0 waits for the
 * transfer, task 1, which the same host issues only after task 0. The graph is acyclic, the
 * run stalls before any of the 3 tasks ends: htae_run reports it and leaves nothing in the
 * result to free. */
START_TEST(host_waiting_on_its_own_later_issue_stalls)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t b = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    uint32_t x = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    receive(g, x);
    graph_set_host(g, b, HOST_ISSUE | HOST_WAIT, 1e-3, 1e-3);
    graph_set_host(g, x, HOST_ISSUE, 1e-3, 0.0);
    graph_add_edge(g, x, b);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    htae_options o = sim_bare_options();
    htae_result r;
    ck_assert_int_eq(htae_run(g, &c, &o, &r, &err), PS_EINTERNAL);
    ck_assert_msg(strstr(err.message, "stalled: 0 of 3 tasks"), "%s", err.message);
    ck_assert_ptr_null(r.start);
    ck_assert_ptr_null(r.end);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Like nccl-tests, one size after another: an all-reduce on 2 GPUs moves 2(p-1)/p S = S per
 * edge, 1 GB at 100 GB/s in 10 ms, 0.5 GB in 5 ms. A size that is not a finite number of bytes
 * is an input error (the graph builders would assert on it). */
START_TEST(time_collectives_one_size_after_another)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    htae_options o = sim_bare_options();
    double sizes[2] = {1 * GB, 0.5 * GB}, times[2];
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 2, sizes, 2, &o, times, NULL, &err),
                     0);
    ck_close(times[0], 0.010, 1e-6);
    ck_close(times[1], 0.005, 1e-6);
    double bad[2] = {1 * GB, NAN};
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 2, bad, 2, &o, times, NULL, &err),
                     PS_EINPUT);
    ck_assert_str_eq(err.field, "sizes");
    cluster_free(&c);
}
END_TEST

START_TEST(graph_keeps_program_order_per_stream)
{
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    ck_assert_int_eq(graph_label(g, "x"), l);
    uint32_t a = graph_add_compute(g, 1, CAT_FORWARD, 1, l, 0);
    uint32_t b = graph_add_compute(g, 0, CAT_FORWARD, 1, l, 0);
    uint32_t c = graph_add_compute(g, 1, CAT_FORWARD, 1, l, 0);
    graph_add_edge(g, b, c);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    uint32_t s1 = 1 * STREAM_COUNT + STREAM_COMPUTE;
    ck_assert_uint_eq(g->stream_first[s1 + 1] - g->stream_first[s1], 2);
    ck_assert_uint_eq(g->stream_tasks[g->stream_first[s1]], a);
    ck_assert_uint_eq(g->stream_tasks[g->stream_first[s1] + 1], c);
    ck_assert_uint_eq(g->tasks[c].n_pred, 1);
    ck_assert_uint_eq(g->tasks[b].n_succ, 1);
    graph_free(g);
}
END_TEST

/* 1 GB over the 100 GB/s wire (its UP half) takes 10 ms, then 10 ms of compute: the link carried
 * 1e9 bytes and was busy 10 ms of the 20 ms iteration; its DOWN half carried nothing. */
START_TEST(link_busy_half_of_transfer_then_compute)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    exec_graph *g = graph_create(2);
    int l = graph_label(g, "x");
    uint32_t t = graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t k = graph_add_compute(g, 1, CAT_FORWARD, 0.010, l, 0);
    graph_add_edge(g, t, k);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.makespan, 0.020, 1e-9);
    ck_assert_int_eq(r.n_links, 1);
    ck_assert_str_eq(r.links[0].name, "wire_UP");
    ck_assert_str_eq(r.links[0].direction, "up");
    ck_close(r.links[0].bytes, 1e9, 1e-12);
    ck_close(r.links[0].busy_s, 0.010, 1e-9);
    ck_assert(fabs(r.links[0].busy_s / r.makespan - 0.5) <= 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Two 1 GB flows, rank 0 -> 2 and rank 1 -> 3, each limited by its own 10 GB/s NIC (100 ms),
 * share the 1000 GB/s fabric (500 GB/s each would be their share: not the bottleneck). At once:
 * both run 0-100 ms, the fabric carries 2e9 bytes and is busy 100 ms. Back to back: 0-100 ms,
 * then 100-200 ms: the same 2e9 bytes, busy 200 ms. Each NIC carries 1e9 and is busy 100 ms. */
static void two_fabric_flows(int back_to_back, double want_makespan, double want_busy)
{
    static const char *const lat[2] = {"0", "0"};
    cluster c;
    sim_load_two_nodes(2, lat, lat, &c);
    exec_graph *g = graph_create(4);
    int l = graph_label(g, "x");
    uint32_t a = graph_add_transfer(g, 0, 2, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    uint32_t b = graph_add_transfer(g, 1, 3, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    receive(g, a);
    receive(g, b);
    if (back_to_back)
        graph_add_edge(g, a, b);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.makespan, want_makespan, 1e-9);
    const htae_link_stat *f = sim_find_link(&r, "fabric_UP");
    ck_close(f->bytes, 2e9, 1e-12);
    ck_close(f->busy_s, want_busy, 1e-9);
    ck_assert_str_eq(r.links[0].name, "fabric_UP"); /* the busiest */
    const char *nics[] = {"nic0_0_UP", "nic0_1_UP", "nic1_0_DOWN", "nic1_1_DOWN"};
    for (int i = 0; i < 4; i++) {
        const htae_link_stat *n = sim_find_link(&r, nics[i]);
        ck_close(n->bytes, 1e9, 1e-12);
        ck_close(n->busy_s, 0.100, 1e-9);
    }
    ck_assert_int_eq(r.n_links, 5);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(link_busy_flows_at_once)
{
    two_fabric_flows(0, 0.100, 0.100);
}
END_TEST

START_TEST(link_busy_flows_back_to_back)
{
    two_fabric_flows(1, 0.200, 0.200);
}
END_TEST

/* A 1 GB ring all-reduce over the 4 GPUs of dgx4 (NVSwitch: one ring, 300 GB/s ports, 0.7 us
 * each): every ring edge carries 2(p-1)/p S = 1.5e9 bytes over its sender's UP and its
 * receiver's DOWN port, so all 8 port halves carry 1.5e9. The flow starts after 5 hops of
 * 1.4 us route latency (7 us) and lasts 1.4 us + 1.5e9 / 300e9 = 5.0014 ms: busy 5.0014 ms of a
 * 5.0084 ms iteration. */
START_TEST(link_bytes_of_a_ring_allreduce)
{
    cluster c;
    uint32_t ids[4];
    exec_graph *g = dgx4_allreduce(&c, 1 * GB, ids);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.makespan, 0.0050084, 1e-6);
    ck_assert_int_eq(r.n_links, 8);
    for (int i = 0; i < r.n_links; i++) {
        ck_assert_msg(strstr(r.links[i].name, "_nvl_") != NULL, "%s", r.links[i].name);
        ck_close(r.links[i].bytes, 1.5e9, 1e-12);
        ck_close(r.links[i].busy_s, 0.0050014, 1e-6);
    }
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A transfer's companion pairs (TP folding's sends of the folded peers) run in its SimGrid task:
 * two nodes of two GPUs with 10 GB/s NICs and a 1000 GB/s fabric (two-by-two-fabric.xml). GPU
 * 0 -> 2 with companion 1 -> 3: separate NICs, 1 GB each at 10 GB/s, 100 ms, and each NIC on
 * the way carries 1 GB. With companion 1 -> 2 instead, both flows enter GPU 2 through its NIC
 * (DOWN): 5 GB/s each, 200 ms. Ranks 1 and 3 need no task. */
static double companion_transfer(int peer_src, int peer_dst, double *nic0_1_bytes)
{
    cluster c;
    sim_load("tests/data/htae/two-by-two-fabric.xml", &c);
    exec_graph *g = graph_create(4);
    uint32_t t =
        graph_add_transfer(g, 0, 2, STREAM_PP, 1 * GB, CAT_PP_COMM, graph_label(g, "x"), 0);
    int src[1] = {peer_src}, dst[1] = {peer_dst};
    graph_set_companions(g, t, graph_add_pair_set(g, src, dst, 1));
    receive(g, t);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    double d = r.end[t] - r.start[t];
    *nic0_1_bytes = sim_find_link(&r, "nic0_1_UP")->bytes;
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
    return d;
}

START_TEST(transfer_companions_on_their_own_links)
{
    double nic;
    ck_close(companion_transfer(1, 3, &nic), 0.100, 1e-6); /* 1e9 B / 10e9 B/s */
    ck_close(nic, 1e9, 1e-12);
}
END_TEST

START_TEST(transfer_companions_share_a_link_with_it)
{
    double nic;
    ck_close(companion_transfer(1, 2, &nic), 0.200, 1e-6); /* GPU 2's NIC: 5 GB/s each */
    ck_close(nic, 1e9, 1e-12);
}
END_TEST

/* A collective's companion groups (TP folding's gradient collectives of the folded peers) run
 * in its SimGrid task. On two-by-two-fabric.xml (10 GB/s NICs, a 1000 GB/s fabric): a 1 GB
 * all-reduce over GPUs {0, 2} with companion group {1, 3} takes as long as the two all-reduces
 * run side by side as separate collectives (each group's flows on its own NICs), and GPU 1's NIC
 * carries the same bytes; GPUs 1 and 3 need no task. */
static double allreduce_pair(cluster *c, int with_companion, double *nic0_1_bytes)
{
    exec_graph *g = graph_create(4);
    int a[2] = {0, 2}, b[2] = {1, 3}, l = graph_label(g, "ar");
    int ga = graph_add_group(g, a, 2), gb = graph_add_group(g, b, 2);
    uint32_t ta[2], tb[2];
    int ca = graph_add_collective(g, COLL_ALLREDUCE, ga, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0, ta);
    if (with_companion)
        graph_set_coll_companions(g, ca, &gb, 1);
    else
        graph_add_collective(g, COLL_ALLREDUCE, gb, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0, tb);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, c, &o, &r);
    double d = r.makespan;
    *nic0_1_bytes = sim_find_link(&r, "nic0_1_UP")->bytes;
    ck_assert_uint_eq(g->n_tasks, with_companion ? 2 : 4);
    htae_result_free(&r);
    graph_free(g);
    return d;
}

START_TEST(collective_companions_run_with_it)
{
    cluster c;
    sim_load("tests/data/htae/two-by-two-fabric.xml", &c);
    double nic_with, nic_apart;
    double with = allreduce_pair(&c, 1, &nic_with), apart = allreduce_pair(&c, 0, &nic_apart);
    ck_close(with, apart, 1e-12 * apart);
    /* a 2-member ring all-reduce: each member sends 2 (n - 1) / n S = 1 GB over its 10 GB/s
     * NIC (bare options: no latency, full efficiency), 100 ms, whether companion or apart */
    ck_close(with, 0.100, 1e-9);
    ck_close(nic_with, 1e9, 1e-3);
    ck_close(nic_with, nic_apart, 1e-3);
    cluster_free(&c);
}
END_TEST

/* Companion groups too many for one SimGrid task (3 x 172 = 516 hosts, over the 512 a task
 * spans) run one task per group, as they would unfolded, not two arbitrary blocks. 172 nodes of 3
 * GPUs; group j is GPU j of every node, an all-gather ring (one channel: one member per node)
 * of S = 172 MB: each edge moves 171/172 S = 171 MB. Node i -> i + 1 crosses the shared
 * 1000 GB/s fabric up (the wrap-around edge crosses it down), so the fabric's up direction
 * carries 3 x 171 edges and binds (a NIC, 10 GB/s, carries one): 513 x 171 MB / 1000 GB/s.
 * Alone on its links from the start, it would be timed (htae_dyn) if each group alone reached
 * that bottleneck, but one group alone takes 171 x 171 MB / 1000 GB/s, a third: the groups
 * share the fabric, so the three SimGrid tasks run (htae_merged_alone). */
START_TEST(companion_groups_past_a_task_run_one_task_each)
{
    enum { M = 172, K = 3 };
    const char *nvl[M], *nic[K] = {"0", "0", "0"};
    for (int i = 0; i < M; i++)
        nvl[i] = "0";
    cluster c;
    sim_load_nodes(M, K, nvl, nic, &c);
    exec_graph *g = graph_create(M * K);
    int groups[K], members[M], l = graph_label(g, "ag");
    for (int j = 0; j < K; j++) {
        for (int i = 0; i < M; i++)
            members[i] = i * K + j;
        groups[j] = graph_add_group(g, members, M);
    }
    int col = graph_add_collective(g, COLL_ALLGATHER, groups[0], STREAM_DP, 172e6, CAT_DP_COMM, l,
                                   0, NULL);
    graph_set_coll_companions(g, col, groups + 1, K - 1);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_assert_uint_eq(r.activities, 3);
    ck_assert_uint_eq(r.timed_colls, 0);
    ck_close(r.makespan, 513 * 171e6 / 1000e9, 1e-6);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

static Suite *htae_suite(void)
{
    const TTest *const tests[] = {transfer_1gb_over_100gbps_takes_10ms,
                                  two_flows_share_a_link_and_take_20ms,
                                  opposite_directions_do_not_share,
                                  transfer_companions_on_their_own_links,
                                  transfer_companions_share_a_link_with_it,
                                  collective_companions_run_with_it,
                                  companion_groups_past_a_task_run_one_task_each,
                                  ring_allreduce_matches_formula,
                                  ring_reduce_scatter_and_allgather,
                                  multi_link_topology_uses_two_rings,
                                  gpipe_textbook_bubble,
                                  one_f_one_b_textbook_bubble,
                                  compute_overlapping_comm_is_slowed,
                                  compute_beside_comm_runs_on_the_sms_left,
                                  sm_rule_against_h200_measurements,
                                  second_run_in_a_process_starts_at_zero,
                                  p2p_launch_cost_is_added,
                                  cpu_thread_and_two_gpu_streams_with_a_lag,
                                  host_bound_compute_follows_the_issue_timeline,
                                  collective_hides_behind_a_host_bound_program,
                                  host_waits_at_a_blocking_receive_only,
                                  inconsistent_collective_order_is_a_cycle,
                                  graph_keeps_program_order_per_stream,
                                  host_waiting_on_its_own_later_issue_stalls,
                                  time_collectives_one_size_after_another,
                                  link_busy_half_of_transfer_then_compute,
                                  link_busy_flows_at_once,
                                  link_busy_flows_back_to_back,
                                  link_bytes_of_a_ring_allreduce,
                                  NULL};
    return suite_of("htae", "core", 60, tests);
}

int main(void)
{
    return suite_run(htae_suite());
}
