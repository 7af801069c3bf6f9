/* test_solo.c: transfers and collectives timed while alone on their links, turned into SimGrid
 * tasks over the bytes they have left when another comes (sim/engine/htae_solo.h): times worked
 * out by hand, and every task, link and activity the same as with every act a SimGrid task. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/run/run.h"
#include "sim_util.h"
#include "suite_util.h"

/* The receiving side of a transfer: an instant task on its peer that depends on it. */
static void receive(exec_graph *g, uint32_t transfer)
{
    const graph_task *x = &g->tasks[transfer];
    graph_add_edge(g, transfer, graph_add_compute(g, x->peer, CAT_FORWARD, 0.0, x->label, 0));
}

/* Transfer A, a GB from rank 0 to `to` on the pipeline stream at 0; transfer B, b bytes on the
 * data-parallel stream after rank 0 computed `after` seconds. ids: A, B. */
static exec_graph *two_transfers(int n_ranks, int to, double a, double b, double after,
                                 uint32_t ids[2])
{
    exec_graph *g = graph_create(n_ranks);
    int l = graph_label(g, "x");
    ids[0] = graph_add_transfer(g, 0, to, STREAM_PP, a, CAT_PP_COMM, l, 0);
    uint32_t c = graph_add_compute(g, 0, CAT_FORWARD, after, l, 0);
    ids[1] = graph_add_transfer(g, 0, to, STREAM_DP, b, CAT_DP_COMM, l, 0);
    graph_add_edge(g, c, ids[1]);
    receive(g, ids[0]);
    receive(g, ids[1]);
    return g;
}

/* g run with acts timed (r[1]) and as SimGrid tasks only (r[0]), options o otherwise: every
 * task, link and activity count the same (1e-12). */
static void same_either_way(exec_graph *g, cluster *c, htae_options o, htae_result r[2])
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    for (int solo = 0; solo < 2; solo++) {
        o.timed_solo = solo;
        ck_assert_msg(htae_run(g, c, &o, &r[solo], &err) == 0, "%s", err.message);
    }
    ck_assert_uint_eq(r[0].solo_acts, 0);
    ck_assert_uint_eq(r[0].activities, r[1].activities);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        ck_assert_msg(fabs(r[1].start[t] - r[0].start[t]) <= 1e-12 * fmax(r[0].start[t], 1e-3),
                      "task %u starts %.15g, %.15g", t, r[1].start[t], r[0].start[t]);
        ck_assert_msg(fabs(r[1].end[t] - r[0].end[t]) <= 1e-12 * fmax(r[0].end[t], 1e-3),
                      "task %u ends %.15g, %.15g", t, r[1].end[t], r[0].end[t]);
    }
    ck_assert_int_eq(r[1].n_links, r[0].n_links);
    for (int i = 0; i < r[0].n_links; i++) {
        const htae_link_stat *l = sim_find_link(&r[1], r[0].links[i].name);
        ck_close(l->bytes, r[0].links[i].bytes, 1e-12);
        ck_close(l->busy_s, r[0].links[i].busy_s, 1e-12);
    }
}

static void free_both(htae_result r[2])
{
    htae_result_free(&r[0]);
    htae_result_free(&r[1]);
}

/* Over the one 100 GB/s wire (no latency), a 1 ms launch a transfer: A's GB moves from 1 ms,
 * alone, timed. B (0.25 GB) is issued at `after`, its bytes move from after + 1 ms. */
static void wire_case(double after, double want_a, double want_b, uint32_t turned)
{
    cluster c;
    sim_load("tests/data/htae/two-100GBps.xml", &c);
    uint32_t id[2];
    exec_graph *g = two_transfers(2, 1, 1 * GB, 0.25 * GB, after, id);
    htae_options o = sim_bare_options();
    o.p2p_launch_s = 1e-3;
    htae_result r[2];
    same_either_way(g, &c, o, r);
    ck_close(r[1].end[id[0]], want_a, 1e-12);
    ck_close(r[1].end[id[1]], want_b, 1e-12);
    ck_assert_uint_eq(r[1].solo_turned, turned);
    ck_assert_uint_eq(r[1].solo_acts, turned ? 1 : 2); /* a turning act runs as tasks */
    const htae_link_stat *w = sim_find_link(&r[1], "wire_UP");
    ck_close(w->bytes, 1.25 * GB, 1e-12);
    free_both(r);
    graph_free(g);
    cluster_free(&c);
}

/* B moves from 6 ms, when A has 0.5 GB left: A is turned into its task over that half, and both
 * share the wire at 50 GB/s; B's 0.25 GB end at 6 + 5 = 11 ms, A's last 0.25 GB move alone at
 * 100 GB/s: 2.5 ms, to 13.5 ms. */
START_TEST(a_later_transfer_turns_a_timed_one)
{
    wire_case(5e-3, 13.5e-3, 11e-3, 1);
}
END_TEST

/* B issued at 0.5 ms moves from 1.5 ms, A having moved 0.05 GB alone: 50 GB/s each, B ends at
 * 1.5 + 5 = 6.5 ms; A has 0.7 GB left, 7 ms alone: 13.5 ms. */
START_TEST(turned_early_in_its_bytes)
{
    wire_case(0.5e-3, 13.5e-3, 6.5e-3, 1);
}
END_TEST

/* B issued at 15 ms, after A ended at 11 ms: both timed, none turned; B 16 - 18.5 ms. */
START_TEST(acts_apart_are_both_timed)
{
    wire_case(15e-3, 11e-3, 18.5e-3, 0);
}
END_TEST

/* Issued together, B comes before A's bytes move: A is turned into its whole task at once, and
 * the two share the wire from 1 ms: 1.25 GB at 100 GB/s, B's 0.25 GB done at 1 + 5 = 6 ms. */
START_TEST(turned_before_its_bytes_move)
{
    wire_case(0.0, 13.5e-3, 6e-3, 1);
}
END_TEST

/* Between two nodes (10 GB/s NICs, each NIC `nic_lat` so the route has twice that; a 1 ms
 * launch), A's GB and, issued at 50 ms, B's 0.25 GB. Route latency 0.5 ms: at most the least
 * launch, so A is timed: its bytes move from 1.5 ms, 0.5 GB alone by 51.5 ms when B's start;
 * 5 GB/s each, B's end at 101.5 ms, when A has 0.25 GB left: 25 ms alone, 126.5 ms. Route
 * latency 2 ms: more than a launch, so a later act could not turn A in time: nothing is timed,
 * and the same by hand with 3 ms before any byte moves. */
static void across_nodes(const char *nic_lat, double lat, uint32_t want_acts)
{
    cluster c;
    const char *const nvl[2] = {"0", "0"}, *const nic[1] = {nic_lat};
    sim_load_two_nodes(1, nvl, nic, &c);
    uint32_t id[2];
    exec_graph *g = two_transfers(2, 1, 1 * GB, 0.25 * GB, 50e-3, id);
    htae_options o = sim_bare_options();
    o.p2p_launch_s = 1e-3;
    htae_result r[2];
    same_either_way(g, &c, o, r);
    ck_assert_uint_eq(r[1].solo_acts, want_acts);
    double a_from = 1e-3 + 2 * lat, b_from = 51e-3 + 2 * lat;
    double a_left = 1.0 - (b_from - a_from) * 10.0 - 0.25; /* GB, when B's end */
    ck_close(r[1].end[id[1]], b_from + 0.25 / 5.0, 1e-12);
    ck_close(r[1].end[id[0]], b_from + 0.25 / 5.0 + a_left / 10.0, 1e-12);
    free_both(r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(a_route_within_the_launch_is_timed)
{
    across_nodes("0.25ms", 0.25e-3, 1);
}
END_TEST

START_TEST(a_route_longer_than_the_launch_is_not)
{
    across_nodes("1ms", 1e-3, 0);
}
END_TEST

/* One node of four GPUs, each on its own 100 GB/s switch port (no latency), a 1 ms launch:
 * A (a_src -> a_dst, 1 GB) from 0; R (r_src -> r_dst) and U (u_src -> u_dst), 0.25 GB each,
 * both issued at 5 ms, R sharing a port with A, U a port with R only. Whichever of R and U the
 * engine issues first, A is turned and U runs beside R: from 6 ms every flow gets 50 GB/s
 * (each shared port carries two), R and U end at 6 + 5 = 11 ms, and A, 0.25 GB left then,
 * at 13.5 ms. */
static void issued_together(int a_src, int a_dst, int r_src, int r_dst, int u_src, int u_dst)
{
    cluster c;
    const char *const nvl[1] = {"0"}, *const nic[4] = {"0", "0", "0", "0"};
    sim_load_nodes(1, 4, nvl, nic, &c);
    exec_graph *g = graph_create(4);
    int l = graph_label(g, "x");
    uint32_t id[3];
    id[0] = graph_add_transfer(g, a_src, a_dst, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0);
    const int src[2] = {r_src, u_src}, dst[2] = {r_dst, u_dst};
    for (int k = 0; k < 2; k++) {
        uint32_t before = graph_add_compute(g, src[k], CAT_FORWARD, 5e-3, l, 0);
        id[1 + k] = graph_add_transfer(g, src[k], dst[k], STREAM_DP, 0.25 * GB, CAT_DP_COMM, l, 0);
        graph_add_edge(g, before, id[1 + k]);
    }
    for (int i = 0; i < 3; i++)
        receive(g, id[i]);
    htae_options o = sim_bare_options();
    o.p2p_launch_s = 1e-3;
    htae_result r[2];
    same_either_way(g, &c, o, r);
    ck_close(r[1].end[id[0]], 13.5e-3, 1e-12);
    ck_close(r[1].end[id[1]], 11e-3, 1e-12);
    ck_close(r[1].end[id[2]], 11e-3, 1e-12);
    /* A, and U too when U came first (timed, then turned by R) */
    ck_assert(r[1].solo_turned >= 1 && r[1].solo_turned <= 2);
    free_both(r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(acts_issued_at_the_instant_of_a_turn)
{
    issued_together(0, 1, 0, 2, 1, 2);
}
END_TEST

START_TEST(acts_issued_at_the_instant_of_a_turn_other_order)
{
    issued_together(1, 3, 1, 2, 0, 2);
}
END_TEST

/* 48 GPUs on one switch each send 10 MB at 5 ms, while one of them (rank 0) turns a 1 GB
 * transfer of its own: the holds grow while the turning actor hands over (no stale pointer,
 * no turn lost): every task the same as with SimGrid tasks only. */
START_TEST(many_acts_at_the_instant_of_a_turn)
{
    enum { K = 48 };
    cluster c;
    const char *nvl[1] = {"0"}, *nic[K];
    for (int i = 0; i < K; i++)
        nic[i] = "0";
    sim_load_nodes(1, K, nvl, nic, &c);
    exec_graph *g = graph_create(K);
    int l = graph_label(g, "x");
    uint32_t before[K];
    for (int r = 0; r < K; r++)
        before[r] = graph_add_compute(g, r, CAT_FORWARD, 5e-3, l, 0);
    receive(g, graph_add_transfer(g, 0, 1, STREAM_PP, 1 * GB, CAT_PP_COMM, l, 0));
    for (int r = 0; r < K; r++) {
        int peer = r == 0 ? 2 : r + 1 < K ? r + 1 : 2;
        uint32_t t = graph_add_transfer(g, r, peer, STREAM_DP, 0.01 * GB, CAT_DP_COMM, l, 0);
        graph_add_edge(g, before[r], t);
        receive(g, t);
    }
    htae_options o = sim_bare_options();
    o.p2p_launch_s = 1e-3;
    htae_result r[2];
    same_either_way(g, &c, o, r);
    ck_assert(r[1].solo_turned >= 1);
    free_both(r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* A plan's both runs (timed_solo on: r[1]; off: r[0]): every task, the makespan and every
 * link the same (1e-12). */
static void plan_either_way(const compiled_plan *p, cluster *c, htae_result r[2])
{
    htae_options o;
    htae_default_options(&o);
    ps_error err;
    for (int solo = 0; solo < 2; solo++) {
        o.timed_solo = solo;
        ck_assert_msg(htae_run(p->graph, c, &o, &r[solo], &err) == 0, "%s", err.message);
    }
    ck_assert_uint_eq(r[0].activities, r[1].activities);
    for (uint32_t t = 0; t < p->graph->n_tasks; t++) {
        ck_assert(fabs(r[1].start[t] - r[0].start[t]) <= 1e-12 * fmax(r[0].start[t], 1e-3));
        ck_assert(fabs(r[1].end[t] - r[0].end[t]) <= 1e-12 * fmax(r[0].end[t], 1e-3));
    }
    ck_close(r[1].makespan, r[0].makespan, 1e-12);
    ck_assert_int_eq(r[1].n_links, r[0].n_links);
    for (int i = 0; i < r[0].n_links; i++) {
        const htae_link_stat *l = sim_find_link(&r[1], r[0].links[i].name);
        ck_close(l->bytes, r[0].links[i].bytes, 1e-12);
        ck_close(l->busy_s, r[0].links[i].busy_s, 1e-12);
    }
}

/* A small GPT, TP 8 x PP 2 x DP 8 with ZeRO-1's overlapped buckets, on 16 DGX A100 (folded:
 * one replica simulated, its data-parallel rings over seven stand-ins each): a bucket still
 * running when a pipeline send crosses its NIC is turned, and its task keeps only the flows on
 * links other tasks may cross, on its busiest private link and with its worst latency: every
 * task the same as with SimGrid tasks only. */
START_TEST(a_turned_collective_leaves_private_flows_out)
{
    const char *text = "workload:\n  name: gpt-small\n  family: gpt\n  layers: 8\n"
                       "  hidden: 1024\n  heads: 16\n  seq: 1024\n  vocab: 50304\n"
                       "batch: {global: 64, micro: 1}\nprecision: bf16\noptimizer: adam\n"
                       "strategy:\n  tensor: {degree: 8, sequence_parallel: true}\n"
                       "  pipeline: {degree: 2, schedule: 1f1b}\n"
                       "  data: {degree: 8, zero: 1, bucket_mb: 25, overlap: true}\n"
                       "  order: [tensor, data, pipeline]\n";
    strategy s;
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, &s, &err) == 0, "%s", err.message);
    cluster c;
    sim_load_generated("dgx-a100", (cluster_gen_opts){.nodes = 16}, &c);
    compiled_plan p;
    ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
    htae_result r[2];
    plan_either_way(&p, &c, r);
    ck_assert(r[1].solo_turned >= 1 && r[1].solo_left_out > 0);
    ck_assert_uint_eq(r[0].solo_left_out, 0);
    free_both(r);
    compiled_plan_free(&p);
    strategy_free(&s);
    cluster_free(&c);
}
END_TEST

/* Four DGX A100 (one leaf: a route between nodes crosses the two GPUs' 25 GB/s NICs), a ring
 * all-gather of 1 GB a member over GPU 0 of each node, rank 0 the one member with a task (the
 * others stand in, as under folding), and 5 ms in a second act of 0.25 GB over the NICs of the
 * ring's edge 16 -> 24: a transfer (own_group 0), or an all-to-all-v of the ring's own group on
 * another stream (own_group 1). They meet; every task is the same as with SimGrid tasks only,
 * into r (freed by the caller). */
static void ring_and_another(int own_group, htae_result r[2])
{
    cluster c;
    sim_load_generated("dgx-a100", (cluster_gen_opts){.nodes = 4}, &c);
    exec_graph *g = graph_create(c.n_gpus);
    int l = graph_label(g, "x"), members[4] = {0, 8, 16, 24};
    int grp = graph_add_group_stand_ins(g, members, 4, 1);
    uint32_t ag, other;
    graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_DP, 1 * GB, CAT_DP_COMM, l, 0, &ag);
    uint32_t before = graph_add_compute(g, own_group ? 0 : 16, CAT_FORWARD, 5e-3, l, 0);
    if (own_group) {
        double m[16] = {0};
        m[2 * 4 + 3] = 0.25 * GB;
        graph_add_alltoallv(g, grp, STREAM_PP, m, CAT_DP_COMM, l, 0, &other);
    } else {
        other = graph_add_transfer(g, 16, 24, STREAM_PP, 0.25 * GB, CAT_PP_COMM, l, 0);
        receive(g, other);
    }
    graph_add_edge(g, before, other);
    htae_options o;
    htae_default_options(&o);
    o.algo = COLL_ALGO_RING;
    same_either_way(g, &c, o, r);
    ck_assert(r[1].end[ag] > r[1].start[other]); /* they did meet */
    graph_free(g);
    cluster_free(&c);
}

/* The transfer: the all-gather is timed, then turned, and its task keeps the edge 16 -> 24 (its
 * links are the transfer's too), the edge on its busiest private link and the one with its
 * worst latency, and leaves the other out (dropping the shared edge instead would end it at
 * 33.8 ms, not 43.8). */
START_TEST(a_turned_ring_keeps_its_shared_edges)
{
    htae_result r[2];
    ring_and_another(0, r);
    ck_assert(r[1].solo_turned >= 1 && r[1].solo_left_out >= 1);
    free_both(r);
}
END_TEST

/* The all-to-all-v: two collectives of one group at once, so its links are no one collective's
 * and the turned all-gather keeps every flow that may meet the other (leaving them out, as when
 * a group's collectives follow one another on one stream, would end it 11 ms early). */
START_TEST(a_group_on_two_streams_keeps_its_flows)
{
    htae_result r[2];
    ring_and_another(1, r);
    free_both(r);
}
END_TEST

/* A small deterministic generator (the C library's rand() differs between libraries). */
static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

/* Random graphs on four DGX A100: 2-5 groups of 2-7 GPUs (some with stand-ins, some with their
 * collectives on two streams), each with 1-3 all-reduces or all-gathers after random compute,
 * and up to 5 transfers: every task, link and activity count the same with acts timed as with
 * SimGrid tasks only, seed after seed; and some acts were turned, some flows left out. */
START_TEST(random_graphs_the_same_either_way)
{
    cluster c;
    sim_load_generated("dgx-a100", (cluster_gen_opts){.nodes = 4}, &c);
    uint32_t turned = 0;
    uint64_t left_out = 0;
    for (unsigned seed = 1; seed <= 24; seed++) {
        unsigned st = seed;
        exec_graph *g = graph_create(c.n_gpus);
        int l = graph_label(g, "x");
        int n_groups = 2 + (int)(next_random(&st) % 4);
        for (int k = 0; k < n_groups; k++) {
            int n = 2 + (int)(next_random(&st) % 6), members[8], used[32] = {0};
            for (int i = 0; i < n;) {
                int r = (int)(next_random(&st) % 32);
                if (!used[r]) {
                    used[r] = 1;
                    members[i++] = r;
                }
            }
            int tasked = next_random(&st) % 3 == 0 ? 1 : n;
            int grp = graph_add_group_stand_ins(g, members, n, tasked);
            int two_streams = next_random(&st) % 4 == 0;
            int n_colls = 1 + (int)(next_random(&st) % 3);
            for (int q = 0; q < n_colls; q++) {
                uint32_t ids[8], before[8];
                for (int i = 0; i < tasked; i++)
                    before[i] = graph_add_compute(g, members[i], CAT_FORWARD,
                                                  (double)(next_random(&st) % 100) * 1e-4, l, 0);
                stream_id s = two_streams && q % 2 ? STREAM_EP : (stream_id)(STREAM_TP + k % 3);
                coll_kind kind = next_random(&st) % 2 ? COLL_ALLREDUCE : COLL_ALLGATHER;
                double bytes = (double)(1 + next_random(&st) % 100) * 0.01 * GB;
                graph_add_collective(g, kind, grp, s, bytes, CAT_DP_COMM, l, 0, ids);
                for (int i = 0; i < tasked; i++)
                    graph_add_edge(g, before[i], ids[i]);
            }
        }
        int n_transfers = (int)(next_random(&st) % 6);
        for (int q = 0; q < n_transfers; q++) {
            int a = (int)(next_random(&st) % 32), b = (int)(next_random(&st) % 32);
            double after = (double)(next_random(&st) % 100) * 1e-4;
            double bytes = (double)(1 + next_random(&st) % 50) * 0.01 * GB;
            if (a == b)
                continue;
            uint32_t before = graph_add_compute(g, a, CAT_FORWARD, after, l, 0);
            uint32_t t = graph_add_transfer(g, a, b, STREAM_PP, bytes, CAT_PP_COMM, l, 0);
            graph_add_edge(g, before, t);
            receive(g, t);
        }
        htae_options o;
        htae_default_options(&o);
        htae_result r[2];
        same_either_way(g, &c, o, r);
        turned += r[1].solo_turned;
        left_out += r[1].solo_left_out;
        free_both(r);
        graph_free(g);
    }
    ck_assert_msg(turned > 0 && left_out > 0, "turned %u, left out %llu", turned,
                  (unsigned long long)left_out);
    cluster_free(&c);
}
END_TEST

/* A plan the compiler builds (GPT-3 1.3B, tensor 2 x data 2 on dgx4, default options: NCCL's
 * launches, NVLink latencies): its tensor-parallel collectives and data-parallel buckets meet
 * on the NVLink ports, so acts are timed and some turned; every task the same either way. */
START_TEST(a_compiled_plan_the_same_either_way)
{
    strategy s;
    sim_strategy_load("strategies/examples/gpt3-1.3b-dp2-tp2.yaml", &s);
    cluster *c = sim_dgx4();
    compiled_plan p;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(compile_plan(&s, c, NULL, &p, &err) == 0, "%s", err.message);
    htae_result r[2];
    plan_either_way(&p, c, r);
    ck_assert(r[1].solo_acts > 100 && r[1].solo_turned > 0);
    free_both(r);
    compiled_plan_free(&p);
    strategy_free(&s);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {a_later_transfer_turns_a_timed_one,
                            turned_early_in_its_bytes,
                            acts_apart_are_both_timed,
                            turned_before_its_bytes_move,
                            a_route_within_the_launch_is_timed,
                            a_route_longer_than_the_launch_is_not,
                            acts_issued_at_the_instant_of_a_turn,
                            acts_issued_at_the_instant_of_a_turn_other_order,
                            many_acts_at_the_instant_of_a_turn,
                            a_compiled_plan_the_same_either_way,
                            a_turned_collective_leaves_private_flows_out,
                            a_turned_ring_keeps_its_shared_edges,
                            a_group_on_two_streams_keeps_its_flows,
                            random_graphs_the_same_either_way,
                            NULL};
    return suite_run(suite_of("solo", "solo", 30, tests));
}
