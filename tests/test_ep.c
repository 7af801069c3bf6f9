/* test_ep.c: expert parallelism compiled (Megatron-Core's folding): an expert op's share on a
 * rank, the all-to-all of a compiled Mixtral EP8 plan against (p-1)/p x S / B on one NVSwitch
 * node, the all-to-all-v of an unbalanced router, memory and expert gradients over the
 * expert-data-parallel group, all by hand. Every software overhead is off for timings. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../strategies/compile/compile.h"
#include "../strategies/strategy.h"
#include "../workloads/workload.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* Mixtral 8x7B by hand (tests/test_moe.c): one expert of a layer 3 x 4096 x 14336 =
 * 176,160,768 parameters; 32 layers. The rest (attention 41,943,040 + norms 8,192 + router
 * 32,768 a layer, 32 layers, and 2 x 32000 x 4096 + 4096 outside them) is dense. */
static const double MIXTRAL_EXPERT = 3.0 * 4096 * 14336;
static const double MIXTRAL_DENSE = 32.0 * (41943040 + 8192 + 32768) + 2.0 * 32000 * 4096 + 4096;

/* A one-expert-layer view of Mixtral's fc1: 8 experts of mean 4096 x 2 / 8 = 1024 rows (micro
 * batch 1, seq 4096, top-2), n = 2 x 14336 (gate and up), k = 4096. */
START_TEST(expert_op_share_by_hand)
{
    workload_model m = model_load_named("mixtral-8x7b");
    ps_error err = {0};
    workload_graph g;
    ck_assert_msg(workload_build(&m, 1, PREC_BF16, &g, &err) == 0, "%s", err.message);
    const workload_op *fc1 = find_op(&g, "layers.0.mlp.experts.fc1");
    ck_assert_double_eq(fc1->batch, 8);
    ck_assert_double_eq(fc1->m, 1024);
    double flops = 2.0 * 8 * 1024 * 28672 * 4096;
    ck_close(fc1->fwd_flops, flops, 1e-12);

    /* EP8 on TP1: one expert, the tokens of 8 ranks routed to it: 8192 rows, all FLOPs */
    workload_op o;
    workload_op_shard_expert(fc1, 1, 8, 1, 1.0, &o);
    ck_assert_double_eq(o.batch, 1);
    ck_assert_double_eq(o.m, 8192);
    ck_assert_double_eq(o.n, 28672);
    ck_close(o.fwd_flops, 2.0 * 8192 * 28672 * 4096, 1e-12);
    ck_close(o.params, 4096.0 * 28672, 1e-12);
    /* in bytes: one expert's three matrices (8192 x 4096 + 4096 x 28672 + 8192 x 28672) */
    ck_close(o.fwd_bytes, 2.0 * (8192.0 * 4096 + 4096.0 * 28672 + 8192.0 * 28672), 1e-12);

    /* TP2 x EP4 x ETP2 at the busiest rank's load 1.5: 2 experts, each on the tokens of 4 x 2
     * ranks holding 1/2 of the tokens: 1024 x 4 x 2 / 2 x 1.5 = 6144 rows, half the columns;
     * FLOPs 2 x 2 x 6144 x 14336 x 4096 = the op's x 1.5 / 2 */
    workload_op_shard_expert(fc1, 2, 4, 2, 1.5, &o);
    ck_assert_double_eq(o.batch, 2);
    ck_assert_double_eq(o.m, 6144);
    ck_assert_double_eq(o.n, 14336);
    ck_close(o.fwd_flops, 2.0 * 2 * 6144 * 14336 * 4096, 1e-12);
    ck_close(o.fwd_flops, flops * 1.5 / 2, 1e-12);
    ck_close(o.params, 8.0 * 4096 * 28672 / 8, 1e-12);
    /* fc2 splits its rows (k = 14336 / 2) */
    workload_op_shard_expert(find_op(&g, "layers.0.mlp.experts.fc2"), 2, 4, 2, 1.0, &o);
    ck_assert_double_eq(o.k, 7168);
    ck_assert_double_eq(o.n, 4096);
    ck_assert_double_eq(o.m, 4096);

    /* the other ranks under imbalance 2 with 8 experts: (8 - 2) / 7 of the mean each */
    m.imbalance = 2.0;
    ck_assert_double_eq(workload_expert_rank_load(&m, 8), 2.0);
    ck_close(workload_expert_other_rank_load(&m, 8), 6.0 / 7, 1e-12);
    ck_close(workload_expert_rank_load(&m, 4), (2 + 6.0 / 7) / 2, 1e-12);
    ck_close(workload_expert_other_rank_load(&m, 4), 6.0 / 7, 1e-12);
    workload_graph_free(&g);
}
END_TEST

/* A generated dgx-h100 cluster of `nodes` nodes (NVLink ports of 450 GB/s, 0.7 us each). */
static void load_h100(int nodes, cluster *c)
{
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = nodes}, c);
}

/* Mixtral 8x7B, global batch 64 of micro-batches 1, bf16, Adam, full recompute, with the
 * `strategy:` body. */
static void load_strategy(const char *body, strategy *s)
{
    char text[2048];
    snprintf(text, sizeof text,
             "workload: mixtral-8x7b\nbatch: {global: 64, micro: 1}\n"
             "precision: bf16\noptimizer: adam\nstrategy:\n%s  recompute: full\n",
             body);
    ps_error err;
    int rc = sim_strategy_text(text, s, &err);
    ck_assert_msg(rc == 0, "%s (%s)", err.message, err.field);
}

static const char *const EP8_DP8 = "  data: {degree: 8, zero: 1}\n"
                                   "  expert: {degree: 8}\n";

/* The plan of load_strategy(body) with the router's imbalance (0: the model's) on `nodes`
 * generated dgx-h100 nodes. */
static void ep_plan(sim_fixture *f, int nodes, const char *body, double imbalance)
{
    load_h100(nodes, &f->c);
    load_strategy(body, &f->s);
    if (imbalance > 0)
        f->s.model.imbalance = imbalance;
    fixture_compile(f, NULL);
}

static int label_is(const exec_graph *g, uint32_t task, const char *name)
{
    return strcmp(g->labels[g->tasks[task].label], name) == 0;
}

/* The collectives named `name`: how many, and the first one's index. */
static int find_colls(const exec_graph *g, const char *name, int *first)
{
    int n = 0;
    *first = -1;
    for (uint32_t i = 0; i < g->n_colls; i++)
        if (label_is(g, g->coll_tasks[g->colls[i].first_task], name)) {
            if (n++ == 0)
                *first = (int)i;
        }
    return n;
}

/* The EP8 plan's dispatch: every rank's 4096 tokens x top-2 copies x hidden 4096 x 2 bytes =
 * S = 67,108,864 bytes, all-to-all over the 8 GPUs. Alone on the node each GPU sends 7/8 of S
 * through its 450 GB/s port: 130.49 us, plus one step over a 1.4 us route. Each micro-batch and
 * MoE layer has two all-to-alls each way in forward, again in the recompute and in backward:
 * 8 micro-batches x 32 layers x 3 = 768 of each direction. */
START_TEST(ep8_alltoall_bytes_and_time)
{
    sim_fixture f;
    ep_plan(&f, 1, EP8_DP8, 0);
    const exec_graph *g = f.p.graph;
    int first, n = find_colls(g, "ep all-to-all to experts", &first);
    ck_assert_int_eq(n, 768);
    int first_out, n_out = find_colls(g, "ep all-to-all from experts", &first_out);
    ck_assert_int_eq(n_out, 768);
    const graph_collective *a2a = &g->colls[first];
    double S = 4096.0 * 2 * 4096 * 2;
    ck_assert_int_eq(a2a->kind, COLL_ALLTOALL);
    ck_assert_ptr_null(a2a->matrix);
    ck_assert_uint_eq(g->groups[a2a->group].n, 8);
    ck_close(a2a->bytes, S, 1e-12);
    /* folded: replica 0 alone is simulated, the EP group's 7 other members are stand-ins */
    ck_assert_int_eq(f.p.simulated_replicas, 1);
    ck_assert_uint_eq(g->groups[a2a->group].tasked, 1);

    double times[1];
    ps_error err = {0};
    ck_assert_int_eq(
        htae_time_collectives(&f.c, COLL_ALLTOALL, 8, &a2a->bytes, 1, &f.o, times, NULL, &err), 0);
    ck_close(times[0], 7.0 / 8 * S / 450e9 + 1.4e-6, 1e-9);
    fixture_free(&f);
}
END_TEST

/* Imbalance 2 on EP8 (8 experts, one a rank): the busiest rank (EP index 0) receives twice a
 * balanced share, every other 6/7 of one: the dispatch is an all-to-all-v whose column 0 holds
 * S/8 x 2 and the others S/8 x 6/7 (rows sum to S); its combine is the transpose. Rank 0's port
 * takes 7 x S/4 = 1.75 S in: 1.75 S / 450 GB/s + 1.4 us, as the plan's collective runs alone.
 * The busiest rank's expert GEMMs take longer than another's. */
/* With tensor parallelism two ranks of the folded replica are simulated, here of different
 * expert loads (rank 0 holds the busiest expert, rank 1 another): their chunk templates differ
 * in time and in the activations they save (selective recompute keeps the experts' inputs, and
 * the busiest keeps more routed tokens), and the plan compiles (it aborted: the templates' shape
 * check compared the activations too). The memory estimate counts the busiest rank's, more than
 * the same plan's without imbalance. */
START_TEST(imbalance_with_tensor_parallelism_compiles)
{
    sim_fixture f;
    load_h100(2, &f.c);
    ps_error err;
    ck_assert_int_eq(sim_strategy_text("workload: mixtral-8x7b\nbatch: {global: 64, micro: 1}\n"
                                       "precision: bf16\noptimizer: adam\nstrategy:\n"
                                       "  tensor: {degree: 2, sequence_parallel: true}\n"
                                       "  data: {degree: 8}\n  expert: {degree: 8, tensor: 1}\n"
                                       "  recompute: selective\n",
                                       &f.s, &err),
                     0);
    f.s.model.imbalance = 2.0;
    fixture_compile(&f, NULL);
    double fwd[2] = {0, 0};
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++) {
        const graph_task *k = &f.p.graph->tasks[t];
        if (k->kind == TASK_COMPUTE && k->category == CAT_FORWARD && k->rank < 2)
            fwd[k->rank] += k->seconds;
    }
    ck_assert_msg(fwd[0] > fwd[1], "busiest %g s, other %g s", fwd[0], fwd[1]);
    double busiest = f.p.memory[0].activations;
    fixture_free_plan(&f);
    f.s.model.imbalance = 1.0;
    fixture_compile(&f, NULL);
    ck_assert_msg(busiest > f.p.memory[0].activations, "%g vs %g", busiest,
                  f.p.memory[0].activations);
    fixture_free(&f);
}
END_TEST

START_TEST(imbalance_makes_an_alltoallv_and_a_busiest_rank)
{
    sim_fixture f;
    ep_plan(&f, 1, EP8_DP8, 2.0);
    exec_graph *g = f.p.graph;
    double S = 4096.0 * 2 * 4096 * 2;
    int in, out;
    ck_assert_int_eq(find_colls(g, "ep all-to-all to experts", &in), 768);
    ck_assert_int_eq(find_colls(g, "ep all-to-all from experts", &out), 768);
    const double *m = g->colls[in].matrix, *mt = g->colls[out].matrix;
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(mt);
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            ck_close(m[a * 8 + b], S / 8 * (b == 0 ? 2.0 : 6.0 / 7), 1e-12);
            ck_close(mt[a * 8 + b], m[b * 8 + a], 1e-12);
        }

    /* the busiest rank computes its expert GEMMs on twice the rows: more forward time */
    double fwd[2] = {0, 0};
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE && g->tasks[t].category == CAT_FORWARD &&
            g->tasks[t].rank < 2)
            fwd[g->tasks[t].rank] += g->tasks[t].seconds;
    ck_assert_msg(fwd[0] > fwd[1], "busiest %g s, other %g s", fwd[0], fwd[1]);

    /* the dispatch alone on the node */
    exec_graph *one = graph_create(8);
    int ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int grp = graph_add_group(one, ranks, 8);
    uint32_t ids[8];
    graph_add_alltoallv(one, grp, STREAM_TP, m, CAT_EP_COMM, graph_label(one, "a2av"), 0, ids);
    htae_result r;
    sim_run(one, &f.c, &f.o, &r);
    for (int i = 0; i < 8; i++)
        ck_close(r.end[ids[i]], 1.75 * S / 450e9 + 1.4e-6, 1e-9);
    htae_result_free(&r);
    graph_free(one);
    fixture_free(&f);
}
END_TEST

/* An all-to-all over 16 H100s on two nodes whose one tasked member (rank 0) has 15 stand-ins:
 * it runs over every member's links, as the full all-to-all. Each GPU sends S/16 to each of its
 * 15 peers, 8 of them on the other node: S/2 through its 50 GB/s NIC (7 S/16 through its 450
 * GB/s NVLink port is less), after the worst route's latency (between the nodes). The
 * executor runs it as 16 x 2 flows with the same per-link loads (htae_pattern_build_direct). */
START_TEST(stand_in_alltoall_runs_over_every_member)
{
    cluster c;
    load_h100(2, &c);
    exec_graph *g = graph_create(16);
    int ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    int grp = graph_add_group_stand_ins(g, ranks, 16, 1);
    double S = 64e6;
    uint32_t id;
    graph_add_collective(g, COLL_ALLTOALL, grp, STREAM_TP, S, CAT_EP_COMM, graph_label(g, "a2a"), 0,
                         &id);
    ck_assert_uint_eq(g->n_tasks, 1);
    double bw, lat;
    cluster_route(&c, 0, 8, &bw, &lat);
    htae_options o = sim_bare_options();
    htae_result r;
    sim_run(g, &c, &o, &r);
    ck_close(r.end[id], S / 2 / 50e9 + lat, 1e-9);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}
END_TEST

/* The same all-to-all (rank 0 tasked, 15 stand-ins, S = 64 MB: S/2 out of and into every
 * GPU's NIC of C = 50 GB/s, after the inter-node route's latency l) beside an all-reduce of R
 * bytes between stand-ins 1 and 9, which crosses the NICs of GPUs 1 and 9 both ways (a
 * two-member ring: R each way, after 2 l). The all-to-all may run as a lean task, fewer flows
 * that skip most stand-ins' NICs (htae_alone.h), only when no such collective can overlap it.
 * `after`: the all-to-all waits for the all-reduce. One run per process (SimGrid's clock). */
static void alltoall_beside_allreduce(int after, double R, htae_result *r, uint32_t *ar,
                                      uint32_t *a2a, double *l)
{
    cluster c;
    load_h100(2, &c);
    double bw;
    cluster_route(&c, 1, 9, &bw, l);
    ck_close(bw, 50e9, 1e-12);
    exec_graph *g = graph_create(16);
    int ranks[16], pair[2] = {1, 9};
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    int ep = graph_add_group_stand_ins(g, ranks, 16, 1), dp = graph_add_group(g, pair, 2);
    graph_add_collective(g, COLL_ALLREDUCE, dp, STREAM_DP, R, CAT_DP_COMM, graph_label(g, "ar"), 0,
                         ar);
    graph_add_collective(g, COLL_ALLTOALL, ep, STREAM_TP, 64e6, CAT_EP_COMM, graph_label(g, "a2a"),
                         0, a2a);
    if (after) {
        graph_add_edge(g, ar[0], *a2a);
        graph_add_edge(g, ar[1], *a2a);
    }
    htae_options o = sim_bare_options();
    sim_run(g, &c, &o, r);
    graph_free(g);
    cluster_free(&c);
}

/* The all-to-all waits for the all-reduce (R = S): each runs alone. The all-reduce ends at
 * 2 l + R / C, the all-to-all l + S / (2 C) later; it ran lean. */
START_TEST(stand_in_alltoall_runs_lean_when_alone)
{
    double S = 64e6, C = 50e9, l;
    uint32_t ar[2], a2a;
    htae_result r;
    alltoall_beside_allreduce(1, S, &r, ar, &a2a, &l);
    ck_close(r.end[ar[0]], 2 * l + S / C, 1e-9);
    ck_close(r.end[a2a], 2 * l + S / C + l + S / (2 * C), 1e-9);
    ck_assert_uint_eq(r.lean_colls, 1);
    htae_result_free(&r);
}
END_TEST

/* Both start at 0 (R = 4 S, so the all-reduce outlasts the all-to-all): the all-to-all moves
 * alone from l to 2 l (C l bytes a NIC), then shares those four NICs half and half with the
 * all-reduce (ptask_L07's bottleneck sharing: two tasks on a link, C / 2 each) until its S / 2
 * are through: 2 l + (S / 2 - C l) / (C / 2) = S / C. A lean task would not have met the
 * all-reduce on GPU 1's and 9's NICs: it ran in full. */
START_TEST(stand_in_alltoall_runs_in_full_beside_traffic)
{
    double S = 64e6, C = 50e9, l;
    uint32_t ar[2], a2a;
    htae_result r;
    alltoall_beside_allreduce(0, 4 * S, &r, ar, &a2a, &l);
    ck_close(r.start[a2a], 0.0, 1e-15);
    ck_close(r.end[a2a], S / C, 1e-9);
    ck_assert_uint_eq(r.lean_colls, 0);
    htae_result_free(&r);
}
END_TEST

/* Memory of Mixtral 8x7B with EP8 over DP8 (ZeRO 1) on 8 GPUs: a rank holds one expert of each
 * layer, 32 x 176,160,768 = 5,637,144,576 parameters, and the 1,605,636,096 dense ones: P =
 * 7,242,780,672. bf16 weights 2P, fp32 gradients 4P; Adam's 12 bytes a parameter sharded over
 * DP 8 for the dense part and over the expert-data-parallel group of 8 / 8 = 1 rank for the
 * experts: 12 x (1,605,636,096 / 8 + 5,637,144,576) = 70,054,281,216 bytes. */
START_TEST(mixtral_ep8_memory_by_hand)
{
    sim_fixture f;
    ep_plan(&f, 1, EP8_DP8, 0);
    double expert = 32 * MIXTRAL_EXPERT, dense = MIXTRAL_DENSE;
    ck_close(expert, 5637144576.0, 1e-15);
    ck_close(dense, 1605636096.0, 1e-15);
    for (int r = 0; r < 8; r++) {
        const memory_estimate *me = &f.p.memory[r];
        ck_close(me->weights, 2 * 7242780672.0, 1e-12);
        ck_close(me->gradients, 4 * 7242780672.0, 1e-12);
        ck_close(me->optimizer, 70054189056.0, 1e-12);
        ck_close(me->optimizer, 12 * (dense / 8 + expert), 1e-12);
    }
    fixture_free(&f);
}
END_TEST

/* Sum of the bytes of collectives named `name` whose group holds rank 0, and that group size. */
static double rank0_bytes(const exec_graph *g, const char *name, uint32_t *size)
{
    double sum = 0;
    *size = 0;
    for (uint32_t i = 0; i < g->n_colls; i++) {
        const graph_collective *k = &g->colls[i];
        const graph_group *gr = &g->groups[k->group];
        if (!label_is(g, g->coll_tasks[k->first_task], name) || g->group_ranks[gr->first] != 0)
            continue;
        sum += k->bytes;
        *size = gr->n;
    }
    return sum;
}

/* EP8 over DP16 on 2 nodes: expert-data-parallel groups of 16 / 8 = 2 ranks reduce-scatter the
 * expert gradients (5,637,144,576 fp32 a rank, in buckets) and gather the updated expert
 * parameters (bf16); the dense ones go over all 16 ranks. Replicas fold to replica 0, the
 * other members of its EP group standing in: 1 of 16 simulated. Adam's state: dense / 16 + experts / 2. */
START_TEST(expert_gradients_over_the_edp_group)
{
    sim_fixture f;
    ep_plan(&f, 2, "  data: {degree: 16, zero: 1}\n  expert: {degree: 8}\n", 0);
    const compiled_plan *p = &f.p;
    double expert = 32 * MIXTRAL_EXPERT, dense = MIXTRAL_DENSE;
    uint32_t n;
    ck_close(rank0_bytes(p->graph, "edp expert grad reduce-scatter", &n), 4 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(p->graph, "dp grad reduce-scatter", &n), 4 * dense, 1e-12);
    ck_assert_uint_eq(n, 16);
    ck_close(rank0_bytes(p->graph, "edp expert param all-gather", &n), 2 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(p->graph, "dp param all-gather", &n), 2 * dense, 1e-12);
    ck_assert_uint_eq(n, 16);
    ck_assert_int_eq(p->simulated_replicas, 1);
    ck_close(p->memory[0].optimizer, 12 * (dense / 16 + expert / 2), 1e-12);
    fixture_free(&f);
}
END_TEST

/* EP8 over DP16 with ZeRO 3 (FSDP, as torchtitan): the routed experts (one a rank, 32 layers)
 * are gathered and reduced over the expert-data-parallel pairs {r, r + 8} (efsdp = 16 / 8), the
 * rest over the 16 data-parallel ranks; 4 micro-batches, each unit gathered before its forward
 * and its backward and reduced after its backward: on rank 0's groups, per micro-batch, 32
 * expert gathers of 2 B x 176,160,768 each way and 32 reduce-scatters of 4 B x it, and the
 * dense parameters (MIXTRAL_DENSE, every unit) gathered twice and reduced once. Memory: the
 * shards, dense / 16 + experts / 2, as weights (2 B, plus two layers gathered: 2 x (41,984,000 +
 * 176,160,768), the largest consecutive units), gradients (4 B, plus one whole layer) and Adam
 * (12 B). Folded to one simulated replica, the pairs' other members standing in. */
START_TEST(fsdp_shards_experts_over_the_edp_group)
{
    sim_fixture f;
    ep_plan(&f, 2, "  data: {degree: 16, zero: 3, overlap: true}\n  expert: {degree: 8}\n", 0);
    const compiled_plan *p = &f.p;
    const exec_graph *g = p->graph;
    double expert = 32 * MIXTRAL_EXPERT, dense = MIXTRAL_DENSE, M = 4;
    uint32_t n;
    ck_close(rank0_bytes(g, "fsdp expert all-gather fwd", &n), M * 2 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(g, "fsdp expert all-gather bwd", &n), M * 2 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(g, "fsdp expert reduce-scatter", &n), M * 4 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(g, "fsdp param all-gather fwd", &n), M * 2 * dense, 1e-12);
    ck_assert_uint_eq(n, 16);
    ck_close(rank0_bytes(g, "fsdp param all-gather bwd", &n), M * 2 * dense, 1e-12);
    ck_close(rank0_bytes(g, "fsdp grad reduce-scatter", &n), M * 4 * dense, 1e-12);
    ck_assert_uint_eq(n, 16);
    int first, k = find_colls(g, "fsdp expert reduce-scatter", &first);
    ck_assert_int_eq(k, 8 * 32 * 4); /* 8 pairs, 32 layers, 4 micro-batches */
    for (uint32_t i = 0; i < g->n_colls; i++) {
        const graph_group *gr = &g->groups[g->colls[i].group];
        if (strncmp(g->labels[g->tasks[g->coll_tasks[g->colls[i].first_task]].label], "fsdp expert",
                    11))
            continue;
        ck_assert_uint_eq(gr->n, 2);
        ck_assert_int_eq(g->group_ranks[gr->first + 1], g->group_ranks[gr->first] + 8);
    }
    ck_assert_int_eq(p->simulated_replicas, 1);
    double shards = dense / 16 + expert / 2, layer = 41984000 + MIXTRAL_EXPERT;
    ck_close(p->memory[0].weights, shards * 2 + 2 * layer * 2, 1e-12);
    ck_close(p->memory[0].gradients, shards * 4 + layer * 4, 1e-12);
    ck_close(p->memory[0].optimizer, shards * 12, 1e-12);
    fixture_free(&f);
}
END_TEST

/* EP8 over DP16 with ZeRO 1 as HSDP, one replica a node (shard degree 8): the EP group is the
 * replica's 8 ranks, so each expert is held by one rank of each replica (efsdp 8 / 8 = 1):
 * nothing to reduce-scatter or gather inside a replica, the expert gradients (4 B x 32 x
 * 176,160,768 on rank 0, in buckets) all-reduced whole across the replica pair {r, r + 8}, and
 * Adam keeps every expert parameter of the rank. The dense gradients are reduce-scattered over
 * the replica's 8 ranks, their eighth all-reduced across {r, r + 8}. */
START_TEST(hsdp_reduces_experts_across_replicas)
{
    sim_fixture f;
    ep_plan(&f, 2, "  data: {degree: 16, zero: 1, shard_degree: 8}\n  expert: {degree: 8}\n", 0);
    const compiled_plan *p = &f.p;
    double expert = 32 * MIXTRAL_EXPERT, dense = MIXTRAL_DENSE;
    uint32_t n;
    ck_close(rank0_bytes(p->graph, "edp expert grad reduce-scatter", &n), 0.0, 1e-12);
    ck_close(rank0_bytes(p->graph, "edp expert param all-gather", &n), 0.0, 1e-12);
    ck_close(rank0_bytes(p->graph, "hsdp expert grad all-reduce", &n), 4 * expert, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(p->graph, "dp grad reduce-scatter", &n), 4 * dense, 1e-12);
    ck_assert_uint_eq(n, 8);
    ck_close(rank0_bytes(p->graph, "hsdp grad all-reduce", &n), 4 * dense / 8, 1e-12);
    ck_assert_uint_eq(n, 2);
    ck_close(rank0_bytes(p->graph, "dp param all-gather", &n), 2 * dense, 1e-12);
    ck_assert_uint_eq(n, 8);
    for (uint32_t i = 0; i < p->graph->n_colls; i++) {
        const graph_collective *k = &p->graph->colls[i];
        const graph_group *gr = &p->graph->groups[k->group];
        if (label_is(p->graph, p->graph->coll_tasks[k->first_task], "hsdp expert grad all-reduce"))
            ck_assert_int_eq(p->graph->group_ranks[gr->first + 1],
                             p->graph->group_ranks[gr->first] + 8);
    }
    ck_close(p->memory[0].optimizer, 12 * (dense / 8 + expert), 1e-12);
    fixture_free(&f);
}
END_TEST

/* What is not modelled with an expert layout is refused when the strategy loads
 * (strategy_validate), at the key: HSDP whose replicas (shard degree 2 x tensor 1 ranks) do not
 * hold whole EP groups (4), ZeRO 3 with expert tensor parallelism (torchtitan has none) and ZeRO 3 over one
 * data-context rank with expert-data-parallel groups of more than one rank (tensor 4, expert
 * 2: edp 2). */
START_TEST(unmodelled_combinations_are_refused)
{
    const char *bodies[3] = {"  data: {degree: 8, zero: 1, shard_degree: 2}\n"
                             "  expert: {degree: 4}\n",
                             "  data: {degree: 4, zero: 3, overlap: true}\n"
                             "  tensor: {degree: 2, sequence_parallel: true}\n"
                             "  expert: {degree: 4, tensor: 2}\n",
                             "  data: {degree: 1, zero: 3, overlap: true}\n"
                             "  tensor: {degree: 4, sequence_parallel: true}\n"
                             "  expert: {degree: 2}\n"};
    const char *what[3] = {"inside one replica", "expert tensor degree 2", "data x context = 1"};
    const char *field[3] = {"strategy.expert.degree", "strategy.expert.tensor", "strategy.expert"};
    int line[3] = {5, 6, 6}, column[3] = {20, 31, 20}; /* the degree's (tensor's) value */
    for (int k = 0; k < 3; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "workload: mixtral-8x7b\nbatch: {global: 64, micro: 1}\nstrategy:\n%s", bodies[k]);
        strategy s;
        ps_error err;
        int rc = sim_strategy_text(text, &s, &err);
        ck_assert_int_eq(rc, PS_EINPUT);
        ck_assert_str_eq(err.field, field[k]);
        ck_assert_int_eq(err.line, line[k]);
        ck_assert_int_eq(err.column, column[k]);
        ck_assert_msg(strstr(err.message, what[k]), "%s", err.message);
    }
}
END_TEST

/* ---- expert.overlap_a2a: Megatron-Core's combined 1F1B ---- */

/* A one-layer MoE (hidden 1024, 2 experts of width 2048, top-1, seq 4096, vocab 8192) on two
 * GPUs of one DGX H100, data 2 x expert 2, two micro-batches of 1 (global 4), pp 1; `expert`
 * the expert section's extra keys. */
#define TINY_MOE                                                                                   \
    "workload: {family: llama, layers: 1, hidden: 1024, heads: 8, kv_heads: 8, "                   \
    "ffn_hidden: 2048, seq: 4096, vocab: 8192, attention: flash, experts: 2, experts_topk: 1}\n"   \
    "batch: {global: 4, micro: 1}\nprecision: bf16\noptimizer: adam\nstrategy:\n"                  \
    "  data: {degree: 2}\n"

/* Compile and run TINY_MOE with the expert section `expert`, the host's issue times off (only
 * the GPU's times and the links' shape the step); returns the end of the last forward or
 * backward compute task (the pipeline's end, before the gradient all-reduce), and in *compute
 * the sum of those tasks' durations, in *shortest the shortest, in *a2a the longest
 * all-to-all (each alone on its links). */
static double tiny_moe_run(sim_fixture *f, const char *expert, double *compute, double *shortest,
                           double *a2a)
{
    char text[1024];
    snprintf(text, sizeof text, TINY_MOE "  expert: %s\n", expert);
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 1, .gpus_per_node = 2}, &f->c);
    ps_error err;
    ck_assert_int_eq(sim_strategy_text(text, &f->s, &err), 0);
    fixture_compile(f, NULL);
    exec_graph *g = f->p.graph;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        g->tasks[i].host = 0;
        g->tasks[i].host_s = g->tasks[i].span = 0.0;
    }
    fixture_run(f);
    double end = 0.0;
    *compute = *a2a = 0.0;
    *shortest = INFINITY;
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const graph_task *k = &g->tasks[i];
        if (k->kind == TASK_COMPUTE && k->rank == 0 &&
            (k->category == CAT_FORWARD || k->category == CAT_BACKWARD)) {
            *compute += k->seconds;
            *shortest = fmin(*shortest, k->seconds);
            end = fmax(end, f->r.end[i]);
        }
        if (k->kind == TASK_COLLECTIVE && k->category == CAT_EP_COMM)
            *a2a = fmax(*a2a, f->r.end[i] - f->r.start[i]);
    }
    return end;
}

/* Each all-to-all: a rank's 4096 tokens x top-1 x 1024 x 2 bytes = S = 8,388,608 bytes, half
 * of it to the other GPU through a 450 GB/s NVLink port: S / 2 / 450 GB/s = 9.32 us, plus the
 * route's 1.4 us. */
static const double TINY_A2A = 8388608.0 / 2 / 450e9 + 1.4e-6;

/* Without the key every all-to-all blocks its pass: each micro-batch's forward crosses two
 * (dispatch, combine) and its backward two, so the two micro-batches' pipeline ends at the
 * sum of the compute C plus 8 all-to-alls. */
START_TEST(a2a_blocking_adds_every_alltoall)
{
    sim_fixture f;
    double compute, shortest, a2a;
    double end = tiny_moe_run(&f, "{degree: 2}", &compute, &shortest, &a2a);
    ck_close(a2a, TINY_A2A, 1e-9);
    ck_close(end, compute + 8 * TINY_A2A, 1e-9);
    fixture_free(&f);
}
END_TEST

/* With overlap_a2a the schedule is F0, (F1 + B0) merged, B1. F0 and B1 run alone: their 2 + 2
 * all-to-alls stay exposed. In the merged step, compute b0 f0 b1 f1 b2 f2 and all-to-alls
 * c0 a0 c1 a1 (B0's combine backward beside F1's attention, F1's dispatch beside B0's expert
 * backward, B0's dispatch backward beside F1's experts, F1's combine beside B0's attention
 * backward): each all-to-all (10.7 us) is shorter than the compute it runs beside (asserted:
 * every compute task is longer), so all four hide. The pipeline ends at C + 4 all-to-alls,
 * 4 x 10.72 us = 42.9 us sooner than without the key. */
START_TEST(a2a_overlap_hides_the_merged_steps_alltoalls)
{
    sim_fixture f;
    double compute, shortest, a2a;
    double end = tiny_moe_run(&f, "{degree: 2, overlap_a2a: true}", &compute, &shortest, &a2a);
    ck_close(a2a, TINY_A2A, 1e-9);
    ck_assert_msg(shortest > TINY_A2A, "compute task of %g s", shortest);
    ck_close(end, compute + 4 * TINY_A2A, 1e-9);
    /* the all-to-alls on their own stream; one more forward alive (2 instead of 1) */
    const exec_graph *g = f.p.graph;
    for (uint32_t i = 0; i < g->n_tasks; i++)
        if (g->tasks[i].category == CAT_EP_COMM)
            ck_assert_int_eq(g->tasks[i].stream, STREAM_EP);
    fixture_free(&f);
}
END_TEST

/* Megatron-Core's conditions (TransformerConfig), refused at the key's line and column: an
 * expert degree >= 2, the interleaved schedule when pipelined, no gpipe, bf16/fp16, no full
 * recompute (at the recompute key); delay_wgrad only with overlap_a2a, and then refused as not
 * modelled yet (the weight gradients are not split from the input gradients). */
START_TEST(a2a_overlap_conditions_are_refused)
{
    static const struct {
        const char *body, *field, *what;
        int line, column;
    } cases[] = {
        {"  data: {degree: 8}\n  expert: {degree: 1, overlap_a2a: true}\n",
         "strategy.expert.overlap_a2a", "expert.degree >= 2", 7, 36},
        {"  data: {degree: 8}\n  pipeline: {degree: 2}\n"
         "  expert: {degree: 8, overlap_a2a: true}\n",
         "strategy.expert.overlap_a2a", "interleaved", 8, 36},
        {"  data: {degree: 8}\n  pipeline: {schedule: gpipe}\n"
         "  expert: {degree: 8, overlap_a2a: true}\n",
         "strategy.expert.overlap_a2a", "gpipe", 8, 36},
        {"  data: {degree: 8}\n  expert: {degree: 8, overlap_a2a: true}\n  recompute: full\n",
         "strategy.recompute", "full recompute", 8, 14},
        {"  data: {degree: 8, zero: 3, overlap: true}\n  expert: {degree: 8, overlap_a2a: true}\n",
         "strategy.expert.overlap_a2a", "zero 3 (FSDP) is not modelled", 7, 36},
        {"  data: {degree: 8}\n  expert: {degree: 8, delay_wgrad: true}\n",
         "strategy.expert.delay_wgrad", "needs overlap_a2a", 7, 36},
        {"  data: {degree: 8}\n  expert: {degree: 8, overlap_a2a: true, delay_wgrad: true}\n",
         "strategy.expert.delay_wgrad", "not modelled", 7, 55},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "workload: mixtral-8x7b\nbatch: {global: 64, micro: 1}\nprecision: bf16\n"
                 "optimizer: adam\nstrategy:\n%s",
                 cases[k].body);
        strategy s;
        ps_error err;
        ck_assert_int_eq(sim_strategy_text(text, &s, &err), PS_EINPUT);
        ck_assert_str_eq(err.field, cases[k].field);
        ck_assert_msg(strstr(err.message, cases[k].what), "%s", err.message);
        ck_assert_int_eq(err.line, cases[k].line);
        ck_assert_int_eq(err.column, cases[k].column);
    }
}
END_TEST

static Suite *ep_suite(void)
{
    const TTest *const tests[] = {expert_op_share_by_hand,
                                  ep8_alltoall_bytes_and_time,
                                  imbalance_makes_an_alltoallv_and_a_busiest_rank,
                                  imbalance_with_tensor_parallelism_compiles,
                                  stand_in_alltoall_runs_over_every_member,
                                  stand_in_alltoall_runs_lean_when_alone,
                                  stand_in_alltoall_runs_in_full_beside_traffic,
                                  mixtral_ep8_memory_by_hand,
                                  expert_gradients_over_the_edp_group,
                                  fsdp_shards_experts_over_the_edp_group,
                                  hsdp_reduces_experts_across_replicas,
                                  unmodelled_combinations_are_refused,
                                  a2a_blocking_adds_every_alltoall,
                                  a2a_overlap_hides_the_merged_steps_alltoalls,
                                  a2a_overlap_conditions_are_refused,
                                  NULL};
    return suite_of("ep", "compile", 120, tests);
}

int main(void)
{
    return suite_run(ep_suite());
}
