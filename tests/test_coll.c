/* test_coll.c: NCCL's collective algorithms in the executor against timings computed by hand:
 * rings with one channel per NIC across nodes, the double binary tree and its latency advantage
 * for small messages, NVLink SHARP's bandwidth, all-to-all, the choice between them and forcing
 * one. Every software overhead is off (sim_bare_options) unless a test says otherwise. */
#include <check.h>
#include <math.h>
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

/* One group over ranks 0..n-1 running, one after another, a collective of each kind[i] with
 * bytes[i]; ids[i] is the first member's task of collective i. */
static exec_graph *sequence(int n_ranks, int n, const coll_kind *kind, const double *bytes,
                            int count, uint32_t *ids)
{
    exec_graph *g = graph_create(n_ranks);
    int ranks[64];
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    int grp = graph_add_group(g, ranks, n), l = graph_label(g, "c");
    uint32_t members[64];
    for (int i = 0; i < count; i++) {
        graph_add_collective(g, kind[i], grp, STREAM_DP, bytes[i], CAT_DP_COMM, l, 0, members);
        ids[i] = members[0];
    }
    return g;
}

/* Two nodes of two GPUs (sim_load_two_by_two: 100 GB/s NVLink ports, 10 GB/s NICs; local GPU
 * 1's NICs 0.5 ms). Ring forced, all-reduce of S = 1 GB: two channels, each S/2; channel 0
 * leaves node 0 from local GPU 1 to node 1's local GPU 0, channel 1 from local GPU 0 to local
 * GPU 1, so every NIC carries one channel each way: 2(n-1)/n * S/2 = 0.75 GB at 10 GB/s, 75 ms.
 * Latency: 2(n-1) = 6 steps, 2(m-1) = 2 of them across nodes, each route 0.5 ms: 1 ms; 76 ms.
 * Reduce-scatter and all-gather: (n-1)/n * S/2 = 0.375 GB per NIC, 37.5 ms, one step across
 * nodes, 0.5 ms: 38 ms each. Each NIC's UP half carried 0.75 + 2 x 0.375 = 1.5 GB. */
START_TEST(ring_across_nodes_one_channel_per_nic)
{
    cluster c;
    sim_load_two_by_two(&c);
    coll_kind kind[3] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    double bytes[3] = {1 * GB, 1 * GB, 1 * GB};
    uint32_t ids[3];
    exec_graph *g = sequence(4, 4, kind, bytes, 3, ids);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], 76e-3, 1e-9);
    ck_close(r.end[ids[1]], 76e-3 + 38e-3, 1e-9);
    ck_close(r.end[ids[2]], 76e-3 + 2 * 38e-3, 1e-9);
    const char *nics[4] = {"nic0_0_UP", "nic0_1_UP", "nic1_0_UP", "nic1_1_UP"};
    for (int i = 0; i < 4; i++)
        ck_close(sim_find_link(&r, nics[i])->bytes, 1.5e9, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* The same all-reduce over the double binary tree: on two nodes it moves less over the NICs.
 * Each tree carries S/2; node 0 is the root of one tree and the child of the other, so per
 * channel (S/2 each) its NIC sends S/4 per tree each way: 0.5 GB at 10 GB/s, 50 ms. The chain
 * inside a node (two GPUs) carries S/2 per channel over NVLink, 5 ms. Latency: 2((k-1) intra
 * steps + log2(m) = 1 step across nodes), the worst tree route being local GPU 1's, 1 ms:
 * 2 ms. 52 ms, less than the ring's 76 ms; yet left to choose, protosim runs the ring, as
 * NCCL's tuner would: it credits the tree with 0.46 of the ring's bus bandwidth (10 GB/s, one
 * NIC per channel), so it estimates the tree at 2 ms + 1 GB / 4.6 GB/s = 219 ms. */
START_TEST(tree_moves_less_on_two_nodes_but_nccl_picks_the_ring)
{
    cluster c;
    sim_load_two_by_two(&c);
    htae_options o = sim_bare_options();
    double sizes[1] = {1 * GB}, times[1];
    coll_algo algos[1];
    ps_error err;
    ps_error_clear(&err);
    o.algo = COLL_ALGO_TREE;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 4, sizes, 1, &o, times, algos, &err),
                     0);
    ck_close(times[0], 52e-3, 1e-9);
    ck_assert_int_eq(algos[0], COLL_ALGO_TREE);
    o.algo = COLL_ALGO_AUTO;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 4, sizes, 1, &o, times, algos, &err),
                     0);
    ck_close(times[0], 76e-3, 1e-9);
    ck_assert_int_eq(algos[0], COLL_ALGO_RING);
    cluster_free(&c);
}
END_TEST

/* Three GPUs on each of two nodes, node 1's NVLink ports 0.25 ms (0.5 ms a route), NICs
 * without latency: the steps inside nodes pay the worst intra-node route, those across nodes
 * the inter-node one. Ring all-reduce of S = 1.5 GB: three channels of S/3; each NIC carries
 * one: 2(n-1)/n * 0.5 GB = 0.8333 GB at 10 GB/s, 83.33 ms; 10 steps, 2 across nodes (0 ms),
 * 8 inside (0.5 ms): 4 ms. 87.33 ms. */
START_TEST(ring_steps_pay_their_own_route_latency)
{
    cluster c;
    static const char *const nvl_lat[2] = {"0", "0.25ms"}, *const nic_lat[3] = {"0", "0", "0"};
    sim_load_two_nodes(3, nvl_lat, nic_lat, &c);
    coll_kind kind[1] = {COLL_ALLREDUCE};
    double bytes[1] = {1.5 * GB};
    uint32_t ids[1];
    exec_graph *g = sequence(6, 6, kind, bytes, 1, ids);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], 5.0 / 6.0 / 10 + 4e-3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Ranks 0, 1 (node 0) and 2 (node 1): nodes with unequal member counts get one ring in group
 * order. All-reduce of S = 1 GB: 2(p-1)/p S = 4/3 GB per edge; two edges cross 10 GB/s NICs:
 * 133.33 ms. 4 steps, 2(m-1) = 2 across nodes at the worst inter-node edge (ranks 1 to 2,
 * 0.5 ms): 1 ms; the two inside node 0 have none. */
START_TEST(unequal_nodes_get_one_ring)
{
    cluster c;
    sim_load_two_by_two(&c);
    coll_kind kind[1] = {COLL_ALLREDUCE};
    double bytes[1] = {1 * GB};
    uint32_t ids[1];
    exec_graph *g = sequence(4, 3, kind, bytes, 1, ids);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], (4.0 / 3.0) * GB / (10 * GB) + 1e-3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Eight nodes of one GPU, NICs of 10 GB/s and 2.5 us (5 us a route). A ring all-reduce takes
 * 2(m-1) = 14 steps across nodes: 70 us of latency; the double binary tree 2 log2(8) = 6: 30 us.
 * So an empty all-reduce picks the tree. At 1 GB the ring moves 2(m-1)/m S = 1.75 GB per NIC:
 * 175 ms; the tree (forced) 2 S through the NIC of a node inner in one tree (up S/2, down to
 * two children S/2 each) and a leaf in the other (up S/2): 200 ms. Choosing, the tree's
 * estimate is 30 us + 1 GB / (0.46 x 10 GB/s) = 217 ms (NCCL's tuner's view): 1 GB runs the
 * ring. */
START_TEST(tree_wins_small_messages_ring_large_ones)
{
    cluster c;
    const char *nvl[8] = {"0", "0", "0", "0", "0", "0", "0", "0"}, *nic[1] = {"2.5us"};
    sim_load_nodes(8, 1, nvl, nic, &c);
    htae_options o = sim_bare_options();
    double sizes[2] = {0, 1 * GB}, times[2];
    coll_algo algos[2];
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 8, sizes, 2, &o, times, algos, &err),
                     0);
    ck_assert_int_eq(algos[0], COLL_ALGO_TREE);
    ck_close(times[0], 30e-6, 1e-6);
    ck_assert_int_eq(algos[1], COLL_ALGO_RING);
    ck_close(times[1], 0.175 + 70e-6, 1e-9);
    o.algo = COLL_ALGO_RING;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 8, sizes, 1, &o, times, NULL, &err),
                     0);
    ck_close(times[0], 70e-6, 1e-6);
    o.algo = COLL_ALGO_TREE;
    sizes[0] = 1 * GB;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 8, sizes, 1, &o, times, NULL, &err),
                     0);
    ck_close(times[0], 0.200 + 30e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

/* One generated node of `kind` (protosim cluster KIND --nodes 1) loaded into c; err cleared. */
static void load_one_node(const char *kind, cluster *c, ps_error *err)
{
    char path[] = "/tmp/protosim_test_coll_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    cluster_gen_opts go = {.nodes = 1};
    ps_error_clear(err);
    ck_assert_int_eq(cluster_generate(kind, &go, f, err), 0);
    fclose(f);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err->message);
}

/* A GB200 NVL72 rack (protosim cluster gb200-nvl72: 72 GPUs, NVLink ports of 900 GB/s, 0.7 us
 * each) with the GB200's own NVLS efficiency (devices.yaml: 0.48, fitted on the published
 * full-rack curve). All-reduce of S = 4 GiB on all 72 GPUs: each port carries S (k+1)/k =
 * 4294967296 x 73/72 bytes each way at 0.48 x 900 GB/s: 10.0798 ms, plus two steps of a 1.4 us
 * route. nccl-tests' bus bandwidth 2 (k-1)/k S / t = 835 GB/s; the published figure
 * (coreweave/nccl-tests PR #43, all_reduce_perf on a full GB200 NVL72 rack) is 839.16 GB/s at
 * 4 GiB: within 15% (issue 32's check; in-sample, since the efficiency was fitted there). */
START_TEST(nvl72_allreduce_against_the_published_rack)
{
    cluster c;
    ps_error err;
    load_one_node("gb200-nvl72", &c, &err);
    htae_options o = sim_bare_options();
    o.device_constants = 1; /* the GB200's NVLS efficiency; launch and step costs stay 0 */
    o.algo = COLL_ALGO_NVLS;
    double S = 4294967296.0, sizes[1] = {S}, times[1];
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 72, sizes, 1, &o, times, NULL, &err),
                     0);
    double want = S * 73.0 / 72.0 / (0.48 * 900e9) + 2 * 1.4e-6;
    ck_close(times[0], want, 1e-9);
    double busbw = 2.0 * 71.0 / 72.0 * S / times[0] / 1e9;
    ck_assert_msg(fabs(busbw / 839.16 - 1) < 0.15, "busbw %.1f GB/s", busbw);
    cluster_free(&c);
}
END_TEST

/* An 8 x H100 node (protosim cluster dgx-h100: NVLink ports of 450 GB/s, 0.7 us each). NVLS
 * all-reduce of S = 1 GB: each GPU's port carries S(k+1)/k = 1.125 GB each way: 2.5 ms, plus two
 * steps (reduce, multicast) of a 1.4 us route. The ring would move 2(k-1)/k S = 1.75 GB:
 * 3.889 ms plus 14 steps. NVLS is chosen; forcing the ring gives the ring's time. */
START_TEST(nvls_moves_k_plus_one_over_k)
{
    cluster c;
    ps_error err;
    load_one_node("dgx-h100", &c, &err);
    htae_options o = sim_bare_options();
    double sizes[1] = {1 * GB}, times[1];
    coll_algo algos[1];
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 8, sizes, 1, &o, times, algos, &err),
                     0);
    ck_assert_int_eq(algos[0], COLL_ALGO_NVLS);
    ck_close(times[0], 1.125 / 450 + 2 * 1.4e-6, 1e-9);
    o.algo = COLL_ALGO_RING;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 8, sizes, 1, &o, times, NULL, &err),
                     0);
    ck_close(times[0], 1.75 / 450 + 14 * 1.4e-6, 1e-9);
    cluster_free(&c);
}
END_TEST

/* All-to-all of S = 1 GB over 2 x 2 GPUs: each GPU sends S/4 to each other one, two of them on
 * the other node: 0.5 GB out of every NIC at 10 GB/s, 50 ms, plus one step at the worst route
 * (local GPUs 1 to each other, 1 ms). */
START_TEST(all_to_all_sends_a_share_to_every_peer)
{
    cluster c;
    sim_load_two_by_two(&c);
    coll_kind kind[1] = {COLL_ALLTOALL};
    double bytes[1] = {1 * GB};
    uint32_t ids[1];
    exec_graph *g = sequence(4, 4, kind, bytes, 1, ids);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]], 51e-3, 1e-9);
    ck_close(sim_find_link(&r, "nic0_0_UP")->bytes, 0.5e9, 1e-9);
    ck_close(sim_find_link(&r, "nvl0_0_UP")->bytes, 0.25e9, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* NCCL's P2P through an intermediate GPU (NVB): GPUs 0 and 2 have no NVLink (their route is
 * PCIe, 10 GB/s each end) but both have one to GPU 1 (50 GB/s each way). An all-to-all of
 * S = 3 GB sends 1 GB from each GPU to each other one; 0 -> 2 and 2 -> 0 go through GPU 1,
 * so each NVLink direction carries 2 GB: 40 ms, where PCIe alone would take 100 ms. An
 * all-reduce of 1 GB still runs its rings over PCIe: two rings, one each way round (each on its
 * own link directions), each S/2, whose 0 <-> 2 hop moves 2 (n-1)/n x 0.5 GB = 0.667 GB at
 * 10 GB/s: 66.7 ms; nvl01's UP direction carried the all-to-all's 2 GB and one ring's 0.667. */
START_TEST(all_to_all_goes_through_an_nvlink_neighbour)
{
    char *path = sim_temp_file(
        ".xml",
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n<zone id=\"node0\" routing=\"Full\">\n"
        "<host id=\"g0\" speed=\"1Tf\"><prop id=\"gpu\" value=\"A100-SXM4-80GB\"/>"
        "<prop id=\"rank\" value=\"0\"/></host>\n"
        "<host id=\"g1\" speed=\"1Tf\"><prop id=\"gpu\" value=\"A100-SXM4-80GB\"/>"
        "<prop id=\"rank\" value=\"1\"/></host>\n"
        "<host id=\"g2\" speed=\"1Tf\"><prop id=\"gpu\" value=\"A100-SXM4-80GB\"/>"
        "<prop id=\"rank\" value=\"2\"/></host>\n"
        "<link id=\"nvl01\" bandwidth=\"50GBps\" latency=\"0\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"nvl12\" bandwidth=\"50GBps\" latency=\"0\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"pcie0\" bandwidth=\"10GBps\" latency=\"0\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"pcie2\" bandwidth=\"10GBps\" latency=\"0\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<route src=\"g0\" dst=\"g1\"><link_ctn id=\"nvl01\" direction=\"UP\"/></route>\n"
        "<route src=\"g1\" dst=\"g2\"><link_ctn id=\"nvl12\" direction=\"UP\"/></route>\n"
        "<route src=\"g0\" dst=\"g2\"><link_ctn id=\"pcie0\" direction=\"UP\"/>"
        "<link_ctn id=\"pcie2\" direction=\"DOWN\"/></route>\n"
        "</zone>\n</platform>\n");
    cluster_engine_start();
    cluster c;
    ps_error err;
    ps_error_clear(&err);
    int rc = cluster_load(path, ps_data_dir(), &c, &err);
    unlink(path);
    free(path);
    ck_assert_msg(rc == 0, "%s", err.message);
    coll_kind kind[2] = {COLL_ALLTOALL, COLL_ALLREDUCE};
    double bytes[2] = {3 * GB, 1 * GB};
    uint32_t ids[2];
    exec_graph *g = sequence(3, 3, kind, bytes, 2, ids);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[ids[0]] - r.start[ids[0]], 40e-3, 1e-9);
    ck_close(r.end[ids[1]] - r.start[ids[1]], 2.0 / 3 / 10, 1e-9);
    ck_close(sim_find_link(&r, "nvl01_UP")->bytes, 2e9 + 1e9 * 2 / 3, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* An uneven all-to-all (all-to-all-v) over 2 x 2 GPUs: rank 0 sends 1 GB to rank 2 (over
 * its 10 GB/s NIC: 100 ms) and 0.5 GB to rank 1 (NVLink: 5 ms); rank 3 sends 0.2 GB to rank 1
 * (20 ms over local GPU 1's NICs, 1 ms of route latency, the worst of the flows). 101 ms. The
 * collective's size is the widest row, 1.5 GB. */
START_TEST(all_to_all_v_moves_each_pairs_bytes)
{
    cluster c;
    sim_load_two_by_two(&c);
    exec_graph *g = graph_create(4);
    int ranks[4] = {0, 1, 2, 3};
    int grp = graph_add_group(g, ranks, 4);
    double m[16] = {0};
    m[0 * 4 + 2] = 1 * GB;
    m[0 * 4 + 1] = 0.5 * GB;
    m[3 * 4 + 1] = 0.2 * GB;
    uint32_t ids[4];
    int col =
        graph_add_alltoallv(g, grp, STREAM_DP, m, CAT_DP_COMM, graph_label(g, "a2av"), 0, ids);
    ck_close(g->colls[col].bytes, 1.5 * GB, 1e-12);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    for (int i = 0; i < 4; i++)
        ck_close(r.end[ids[i]], 101e-3, 1e-9);
    ck_close(sim_find_link(&r, "nic0_0_UP")->bytes, 1e9, 1e-9);
    ck_close(sim_find_link(&r, "nic1_1_UP")->bytes, 0.2e9, 1e-9);
    ck_close(sim_find_link(&r, "nvl0_0_UP")->bytes, 0.5e9, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Forcing an algorithm a group cannot run is an input error before anything runs: the tree on
 * nodes of unequal members (12 GPUs of two 8-GPU nodes), NVLS on A100s. The tree inside one
 * node runs (NCCL's chain): on dgx4's NVSwitch each GPU's port carries 2(k-1)/k S each way, as
 * in the ring, in as many steps, so the two take the same time. */
START_TEST(forced_algorithm_must_fit_the_group)
{
    cluster c;
    sim_load("topology/clusters/dgx-a100-2node.xml", &c);
    htae_options o = sim_bare_options();
    double sizes[1] = {1 * GB}, times[1], ring[1];
    ps_error err;
    ps_error_clear(&err);
    o.algo = COLL_ALGO_TREE;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 12, sizes, 1, &o, times, NULL, &err),
                     PS_EINPUT);
    ck_assert_str_eq(err.field, "algo");
    ck_assert_ptr_nonnull(strstr(err.message, "unequal nodes"));
    ps_error_clear(&err);
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 4, sizes, 1, &o, times, NULL, &err),
                     0);
    o.algo = COLL_ALGO_RING;
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 4, sizes, 1, &o, ring, NULL, &err),
                     0);
    ck_assert_double_eq_tol(times[0], ring[0], 1e-9);
    o.algo = COLL_ALGO_NVLS;
    ps_error_clear(&err);
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLREDUCE, 4, sizes, 1, &o, times, NULL, &err),
                     PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.message, "NVLS"));
    /* a forced all-reduce algorithm leaves the other kinds alone */
    ck_assert_int_eq(htae_time_collectives(&c, COLL_ALLGATHER, 4, sizes, 1, &o, times, NULL, &err),
                     0);
    cluster_free(&c);
}
END_TEST

/* A collective alone on its links is a timed wait of the time SimGrid would give its task.
 * Ring all-reduce of S = 1 GB over the 8 GPUs of node 0 of dgx-a100-2node.xml (one 300 GB/s
 * NVSwitch port per GPU and direction, 0.7 us each, two per route), every overhead off: each
 * port carries 2(n-1)/n S = 1.75 GB, 5.8333 ms; 2(n-1) = 14 steps of 1.4 us, 19.6 us. The
 * ports are busy from the flows' start, after 13 steps' latency: the task's own (one route's,
 * 1.4 us) and the bytes. */
START_TEST(lone_ring_allreduce_is_a_timed_wait)
{
    cluster c;
    sim_load("topology/clusters/dgx-a100-2node.xml", &c);
    exec_graph *g = graph_create(16);
    int ranks[8];
    for (int i = 0; i < 8; i++)
        ranks[i] = i;
    int grp = graph_add_group(g, ranks, 8);
    uint32_t ids[8];
    graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_TP, 1 * GB, CAT_TP_COMM,
                         graph_label(g, "ar"), 0, ids);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_assert_uint_eq(r.timed_colls, 1);
    for (int i = 0; i < 8; i++)
        ck_close(r.end[ids[i]], 14 * 1.4e-6 + 1.75 * GB / (300 * GB), 1e-12);
    ck_close(sim_find_link(&r, "n0g0_nvl_UP")->bytes, 1.75e9, 1e-12);
    ck_close(sim_find_link(&r, "n0g7_nvl_DOWN")->bytes, 1.75e9, 1e-12);
    ck_close(sim_find_link(&r, "n0g3_nvl_UP")->busy_s, 1.4e-6 + 1.75 / 300, 1e-12);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* Two tensor-parallel groups of 8 (one per node of dgx-a100-2node.xml) and eight data-parallel
 * pairs across the nodes: compute of unequal lengths per rank, then TP all-reduce, compute, TP
 * all-gather, DP all-reduce; a transfer from rank 8 to rank 9 over node 1's NVLink ports (30
 * MB), one of 20 MB from rank 0 to rank 8 over their NICs that rank 8's second compute waits
 * for, and (extra_0_8 > 0) another from 0 to 8 that only a last compute of rank 8 waits for.
 * Node 0's TP group is alone on its ports for the whole run (the DP pairs cross the NICs only,
 * both nodes being on one leaf switch), and so are the DP pairs but the first on their NICs: 2
 * + 7 collectives are timed from the start (no foreign activity, htae_dyn). Node 1's TP group
 * shares its ports with the first transfer, the first DP pair its NICs with the others: each of
 * those collectives is timed too if those transfers have ended when it starts, else it runs as
 * a SimGrid task. Every task starts and ends as when every collective runs as a SimGrid task. */
static exec_graph *two_tp_groups(uint32_t *tp0_ids, double extra_0_8)
{
    exec_graph *g = graph_create(16);
    int tp[2], dp[8], l = graph_label(g, "x");
    for (int n = 0; n < 2; n++) {
        int ranks[8];
        for (int i = 0; i < 8; i++)
            ranks[i] = n * 8 + i;
        tp[n] = graph_add_group(g, ranks, 8);
    }
    for (int i = 0; i < 8; i++)
        dp[i] = graph_add_group(g, (int[2]){i, 8 + i}, 2);
    uint32_t c1[16], ar[2][8], c2[16], ag[2][8], dar[8][2];
    for (int r = 0; r < 16; r++)
        c1[r] = graph_add_compute(g, r, CAT_FORWARD, 1e-3 * (1.0 + 0.1 * r), l, 0);
    for (int n = 0; n < 2; n++)
        graph_add_collective(g, COLL_ALLREDUCE, tp[n], STREAM_TP, 100e6, CAT_TP_COMM, l, 0, ar[n]);
    for (int r = 0; r < 16; r++) {
        graph_add_edge(g, c1[r], ar[r / 8][r % 8]);
        c2[r] = graph_add_compute(g, r, CAT_FORWARD, 0.5e-3 * (1.0 + 0.05 * (15 - r)), l, 0);
        graph_add_edge(g, ar[r / 8][r % 8], c2[r]);
    }
    for (int n = 0; n < 2; n++)
        graph_add_collective(g, COLL_ALLGATHER, tp[n], STREAM_TP, 50e6, CAT_TP_COMM, l, 0, ag[n]);
    for (int i = 0; i < 8; i++)
        graph_add_collective(g, COLL_ALLREDUCE, dp[i], STREAM_DP, 200e6, CAT_DP_COMM, l, 0, dar[i]);
    for (int r = 0; r < 16; r++) {
        graph_add_edge(g, c2[r], ag[r / 8][r % 8]);
        graph_add_edge(g, ag[r / 8][r % 8], dar[r % 8][r / 8]);
    }
    uint32_t t = graph_add_transfer(g, 8, 9, STREAM_PP, 30e6, CAT_PP_COMM, l, 0);
    graph_add_edge(g, c1[8], t);
    graph_add_edge(g, t, c2[9]);
    t = graph_add_transfer(g, 0, 8, STREAM_PP, 20e6, CAT_PP_COMM, l, 0);
    graph_add_edge(g, c1[0], t);
    graph_add_edge(g, t, c2[8]);
    if (extra_0_8 > 0.0) { /* feeds only a last compute of rank 8, after everything else */
        t = graph_add_transfer(g, 0, 8, STREAM_PP, extra_0_8, CAT_PP_COMM, l, 0);
        graph_add_edge(g, c1[0], t);
        graph_add_edge(g, t, graph_add_compute(g, 8, CAT_FORWARD, 1e-4, l, 0));
    }
    for (int i = 0; i < 8; i++)
        tp0_ids[i] = ar[0][i];
    return g;
}

/* The graph above timed and as SimGrid tasks: the same times, links and activities, and
 * `timed` collectives timed. */
static void timed_against_tasks(double extra_0_8, uint32_t timed_colls)
{
    cluster c;
    sim_load("topology/clusters/dgx-a100-2node.xml", &c);
    uint32_t ids[8];
    exec_graph *g = two_tp_groups(ids, extra_0_8);
    htae_options o;
    htae_default_options(&o);
    htae_result timed, tasks;
    sim_run(g, &c, &o, &timed);
    o.timed_alone = 0;
    ck_assert_int_eq(htae_run(g, &c, &o, &tasks, &(ps_error){0}), 0);
    ck_assert_uint_eq(timed.timed_colls, timed_colls);
    ck_assert_uint_eq(tasks.timed_colls, 0);
    ck_assert_uint_eq(timed.activities, tasks.activities);
    ck_assert(timed.end[ids[0]] > timed.start[ids[0]]);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        ck_close(timed.start[t], tasks.start[t], 1e-12);
        ck_close(timed.end[t], tasks.end[t], 1e-12);
    }
    ck_close(timed.makespan, tasks.makespan, 1e-12);
    ck_assert_int_eq(timed.n_links, tasks.n_links);
    for (int i = 0; i < tasks.n_links; i++) {
        const htae_link_stat *l = sim_find_link(&timed, tasks.links[i].name);
        ck_close(l->bytes, tasks.links[i].bytes, 1e-12);
        ck_close(l->busy_s, tasks.links[i].busy_s, 1e-12);
    }
    htae_result_free(&timed);
    htae_result_free(&tasks);
    graph_free(g);
    cluster_free(&c);
}

/* 20 MB from rank 0 to 8 take 0.8 ms over a 25 GB/s NIC from 1 ms (rank 0's first compute):
 * over by 1.9 ms, before node 1's TP all-reduce can start (rank 15's first compute ends at 2.5
 * ms); the 30 MB of 8 -> 9 (from 1.8 ms, 0.1 ms at 300 GB/s) are over by then too. So node 1's
 * two TP collectives and the first DP pair's all-reduce are timed as well: 9 + 3. */
START_TEST(timed_waits_match_simgrid_tasks)
{
    timed_against_tasks(0.0, 2 + 7 + 3);
}
END_TEST

/* 2 GB more from rank 0 to 8, on the NICs from 1 ms for 80 ms: still there when the first DP
 * pair's all-reduce starts (after about 3 ms of compute and TP collectives), which then runs as
 * a SimGrid task beside it; node 1's TP collectives (its NVLink ports only) stay timed: 9 + 2. */
START_TEST(a_transfer_still_running_keeps_a_simgrid_task)
{
    timed_against_tasks(2e9, 2 + 7 + 2);
}
END_TEST

/* Collectives over more hosts than one SimGrid task spans (HTAE_PTASK_MAX_HOSTS, 512) run as
 * several tasks (blocks). On N = 68 DGX A100 nodes (fat tree, 4 nodes a leaf; 25 GB/s NICs,
 * one a GPU; a leaf's uplinks 4 x 8 x 25 = 800 GB/s each way over `oversubscription`), an
 * all-gather of S a member: rails = 1, group j is GPU j of every node (N members, one a node:
 * a ring over the nodes, each GPU's NIC carrying (N - 1)/N S each way), group 0's collective
 * with groups 1..7 as its companions (544 hosts: a block each); rails = 0, one group of all
 * 544 GPUs (an all-reduce: two blocks). Returns the graph; *first: member 0's task. */
enum { PAST_NODES = 68, PAST_GPUS = 8 * PAST_NODES };

static exec_graph *past_a_task(int rails, double S, uint32_t *first)
{
    exec_graph *g = graph_create(PAST_GPUS);
    int members[PAST_GPUS], groups[8], l = graph_label(g, "c");
    uint32_t ids[PAST_GPUS];
    if (!rails) {
        for (int r = 0; r < PAST_GPUS; r++)
            members[r] = r;
        int grp = graph_add_group(g, members, PAST_GPUS);
        graph_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP, S, CAT_DP_COMM, l, 0, ids);
    } else {
        for (int j = 0; j < 8; j++) {
            for (int n = 0; n < PAST_NODES; n++)
                members[n] = 8 * n + j;
            groups[j] = graph_add_group(g, members, PAST_NODES);
        }
        int col = graph_add_collective(g, COLL_ALLGATHER, groups[0], STREAM_DP, S, CAT_DP_COMM, l,
                                       0, ids);
        graph_set_coll_companions(g, col, groups + 1, 7);
    }
    *first = ids[0];
    return g;
}

/* The collective timed (tasks == 0) or as SimGrid tasks into *r, member 0's end into *end;
 * returns the collectives timed. */
static uint32_t run_past_a_task(cluster *c, int rails, double S, int tasks, double *end,
                                htae_result *r)
{
    uint32_t first;
    exec_graph *g = past_a_task(rails, S, &first);
    htae_options o = sim_bare_options();
    o.algo = COLL_ALGO_RING;
    o.timed_alone = !tasks;
    sim_run(g, c, &o, r);
    *end = r->end[first];
    graph_free(g);
    return r->timed_colls;
}

/* Timed block by block and run as SimGrid tasks: every task's end and every link's bytes and
 * busy time the same, and with rails the end grows with S by hand: (N - 1)/N of the extra
 * bytes over the bottleneck, a NIC's 25 GB/s when each block has its own NICs and a leaf's
 * uplink carries 8 x 25 = 200 GB/s of its 800 (each leaf's last node to the next leaf's first,
 * one flow a rail). At oversubscription 8 an uplink has 100 GB/s for the rails' 200: the
 * blocks' lone rates do not fit, they run as tasks, each at 100 / 8 = 12.5 GB/s. */
static void blocks_against_tasks(int rails, double oversubscription, uint32_t want_timed, double bw)
{
    cluster c;
    sim_load_generated(
        "dgx-a100", (cluster_gen_opts){.nodes = PAST_NODES, .oversubscription = oversubscription},
        &c);
    const double N = PAST_NODES, S = 68e6;
    double e1, e2, t1;
    htae_result timed, tasks, big;
    ck_assert_uint_eq(run_past_a_task(&c, rails, S, 0, &e1, &timed), want_timed);
    ck_assert_uint_eq(run_past_a_task(&c, rails, S, 1, &t1, &tasks), 0);
    ck_assert_uint_eq(timed.activities, tasks.activities);
    ck_close(e1, t1, 1e-12);
    ck_assert_int_eq(timed.n_links, tasks.n_links);
    for (int i = 0; i < tasks.n_links; i++) {
        const htae_link_stat *l = sim_find_link(&timed, tasks.links[i].name);
        ck_close(l->bytes, tasks.links[i].bytes, 1e-12);
        ck_close(l->busy_s, tasks.links[i].busy_s, 1e-12);
    }
    if (rails) {
        ck_close(sim_find_link(&timed, "n0g0_nic_UP")->bytes, (N - 1) / N * S, 1e-12);
        run_past_a_task(&c, rails, 2 * S, 0, &e2, &big);
        ck_close(e2 - e1, (N - 1) / N * S / bw, 1e-9);
        htae_result_free(&big);
    }
    htae_result_free(&timed);
    htae_result_free(&tasks);
    cluster_free(&c);
}

START_TEST(companion_blocks_alone_are_timed)
{
    blocks_against_tasks(1, 1.0, 1, 25e9);
}
END_TEST

START_TEST(blocks_overloading_an_uplink_stay_tasks)
{
    blocks_against_tasks(1, 8.0, 0, 12.5e9);
}
END_TEST

START_TEST(a_group_past_a_task_is_timed_block_by_block)
{
    blocks_against_tasks(0, 1.0, 1, 0.0);
}
END_TEST

/* One graph run with collectives inlined (out[1]) and not (out[0]): every task the same
 * (bitwise), and `inlined` of them run by a compute stream's actor with inlining on. */
static void same_with_and_without_inlining(exec_graph *(*build)(void), const char *platform,
                                           uint32_t inlined, htae_result out[2])
{
    cluster c;
    sim_load(platform, &c);
    for (int inl = 0; inl < 2; inl++) {
        exec_graph *g = build();
        htae_options o = sim_bare_options();
        o.inline_collectives = inl;
        sim_run(g, &c, &o, &out[inl]);
        ck_assert_uint_eq(out[inl].inlined_colls, inl ? inlined : 0);
        for (uint32_t t = 0; t < g->n_tasks; t++)
            ck_assert(!inl ||
                      (out[1].start[t] == out[0].start[t] && out[1].end[t] == out[0].end[t]));
        graph_free(g);
    }
    cluster_free(&c);
}

/* Rank 0 computes 1 ms (task 0), then reduce-scatters (1) and all-gathers (2) 1 GB with rank 1
 * (a stand-in: its peer folded, no task of its own) on the TP stream, then computes 1 ms more
 * (3), which waits for the all-gather. Nothing else crosses the 100 GB/s wire, so both
 * collectives are timed waits: each moves (n - 1)/n x 1 GB = 0.5 GB, 5 ms. Run by the compute
 * stream's actor (inline) or by the TP stream's, every task starts and ends at the same
 * instant: 0-1, 1-6, 6-11, 11-12 ms. */
static exec_graph *compute_rs_ag_compute(void)
{
    exec_graph *g = graph_create(2);
    int grp = graph_add_group_stand_ins(g, (int[2]){0, 1}, 2, 1), l = graph_label(g, "x");
    uint32_t c0 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0), rs, ag;
    graph_add_collective(g, COLL_REDUCE_SCATTER, grp, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0, &rs);
    graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0, &ag);
    uint32_t c1 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    ck_assert(c0 == 0 && rs == 1 && ag == 2 && c1 == 3);
    graph_add_edge(g, c0, rs);
    graph_add_edge(g, ag, c1);
    return g;
}

START_TEST(inlined_collectives_same_times)
{
    htae_result r[2];
    same_with_and_without_inlining(compute_rs_ag_compute, "tests/data/htae/two-100GBps.xml", 2, r);
    ck_assert_uint_eq(r[0].timed_colls, 2);
    ck_assert_uint_eq(r[1].timed_colls, 2);
    const double start[4] = {0, 1e-3, 6e-3, 11e-3}, end[4] = {1e-3, 6e-3, 11e-3, 12e-3};
    for (int i = 0; i < 4; i++) {
        ck_assert(fabs(r[1].start[i] - start[i]) <= 1e-12);
        ck_assert(fabs(r[1].end[i] - end[i]) <= 1e-12);
    }
    htae_result_free(&r[0]);
    htae_result_free(&r[1]);
}
END_TEST

/* Each of the 4 ranks of two nodes computes 1 ms (C), which releases both a one-member
 * all-gather S on the TP stream, waited for by its next compute C', and a 1 ms compute X on the
 * PP stream: the four compute actors finish at the same instant, and releasing X lets another
 * actor run before the first goes on; each must still run its own S. */
static exec_graph *ranks_claiming_at_once(void)
{
    exec_graph *g = graph_create(4);
    int l = graph_label(g, "x");
    for (int r = 0; r < 4; r++) {
        int grp = graph_add_group(g, (int[1]){r}, 1);
        uint32_t c = graph_add_compute(g, r, CAT_FORWARD, 1e-3, l, 0), s;
        graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0, &s);
        uint32_t x = graph_add_compute_on(g, r, STREAM_PP, CAT_FORWARD, 1e-3, l, 0);
        uint32_t c2 = graph_add_compute(g, r, CAT_FORWARD, 1e-3, l, 0);
        graph_add_edge(g, c, s);
        graph_add_edge(g, c, x);
        graph_add_edge(g, s, c2);
    }
    return g;
}

START_TEST(ranks_inline_their_own_collectives)
{
    htae_result r[2];
    same_with_and_without_inlining(ranks_claiming_at_once, "tests/data/htae/two-by-two-fabric.xml",
                                   4, r);
    ck_assert(fabs(r[1].makespan - 2e-3) <= 1e-12); /* a one-member collective moves nothing */
    htae_result_free(&r[0]);
    htae_result_free(&r[1]);
}
END_TEST

/* Rank 0: C0 (1 ms), then AG1 and AG2 (0.5 GB each over the 100 GB/s wire, 5 ms) on the TP
 * stream; C1 waits for AG1 and for X (7 ms on the PP stream from 0), not for AG2. C1 must start
 * at 7 ms, when X ends, not after AG2 (11 ms): only AG1 is run by the compute actor. */
static exec_graph *wait_for_one_of_two(void)
{
    exec_graph *g = graph_create(2);
    int grp = graph_add_group_stand_ins(g, (int[2]){0, 1}, 2, 1), l = graph_label(g, "x");
    uint32_t c0 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0), ag1;
    uint32_t x = graph_add_compute_on(g, 0, STREAM_PP, CAT_FORWARD, 7e-3, l, 0);
    graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0, &ag1);
    graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, 1 * GB, CAT_TP_COMM, l, 0, NULL);
    uint32_t c1 = graph_add_compute(g, 0, CAT_FORWARD, 1e-3, l, 0);
    graph_add_edge(g, c0, ag1);
    graph_add_edge(g, ag1, c1);
    graph_add_edge(g, x, c1);
    return g;
}

START_TEST(inlining_delays_nothing)
{
    htae_result r[2];
    same_with_and_without_inlining(wait_for_one_of_two, "tests/data/htae/two-100GBps.xml", 1, r);
    ck_assert(fabs(r[1].start[4] - 7e-3) <= 1e-12 && fabs(r[1].end[4] - 8e-3) <= 1e-12); /* C1 */
    ck_assert(fabs(r[1].makespan - 11e-3) <= 1e-12);
    htae_result_free(&r[0]);
    htae_result_free(&r[1]);
}
END_TEST

static Suite *coll_suite(void)
{
    const TTest *const tests[] = {ring_across_nodes_one_channel_per_nic,
                                  tree_moves_less_on_two_nodes_but_nccl_picks_the_ring,
                                  ring_steps_pay_their_own_route_latency,
                                  unequal_nodes_get_one_ring,
                                  tree_wins_small_messages_ring_large_ones,
                                  nvls_moves_k_plus_one_over_k,
                                  nvl72_allreduce_against_the_published_rack,
                                  all_to_all_sends_a_share_to_every_peer,
                                  all_to_all_goes_through_an_nvlink_neighbour,
                                  all_to_all_v_moves_each_pairs_bytes,
                                  forced_algorithm_must_fit_the_group,
                                  lone_ring_allreduce_is_a_timed_wait,
                                  timed_waits_match_simgrid_tasks,
                                  a_transfer_still_running_keeps_a_simgrid_task,
                                  companion_blocks_alone_are_timed,
                                  blocks_overloading_an_uplink_stay_tasks,
                                  a_group_past_a_task_is_timed_block_by_block,
                                  inlined_collectives_same_times,
                                  ranks_inline_their_own_collectives,
                                  inlining_delays_nothing,
                                  NULL};
    return suite_of("coll", "algorithms", 120, tests);
}

int main(void)
{
    return suite_run(coll_suite());
}
