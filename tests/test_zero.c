/* test_zero.c: ZeRO 1/2/3 and HSDP in the compiled graph, against numbers computed here: the
 * collectives each stage runs per unit and micro-batch, iteration times on a fast and a slow link
 * with every software overhead off (op costs and link bandwidth only), HSDP's groups, memory. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../strategies/compile/compile.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

#define MAXL 8 /* unit tables: [layer + 1] for the embedding (-1), layers and head (L) */

/* The plan of data-dir-relative strategy_rel with its ZeRO stage replaced by `zero` (-1: as
 * written) on cluster_rel, or on a generated dgx-a100 node of 8 GPUs when cluster_rel is NULL. */
static void zero_plan(sim_fixture *f, const char *strategy_rel, int zero, const char *cluster_rel)
{
    fixture_load(f, strategy_rel, cluster_rel);
    if (!cluster_rel)
        sim_load_generated("dgx-a100", (cluster_gen_opts){.nodes = 1}, &f->c);
    if (zero >= 0)
        f->s.zero = zero;
    fixture_compile(f, NULL);
}

typedef struct zero_run {
    const char *strategy_rel, *cluster_rel;
    int zero;
} zero_run;

static void zero_makespan(const void *arg, void *out)
{
    const zero_run *z = arg;
    sim_fixture f;
    zero_plan(&f, z->strategy_rel, z->zero, z->cluster_rel);
    fixture_run(&f);
    *(double *)out = f.r.makespan;
}

/* Simulate strategy_rel with ZeRO stage `zero` on cluster_rel with every software overhead off
 * (sim_bare_options: no launch or step latency, full link efficiency, no compute slowdown
 * under communication), in a child process (fixture_forked: these tests compare stages).
 * Returns the iteration time. */
static double simulate(const char *strategy_rel, int zero, const char *cluster_rel)
{
    zero_run z = {strategy_rel, cluster_rel, zero};
    double makespan;
    fixture_forked(zero_makespan, &z, &makespan, sizeof makespan);
    return makespan;
}

/* ---- the hand model ---- */

/* A GPT's FSDP units, by hand: the embedding holds the word and position tables (v + s) h; a
 * layer 12 h^2 + 13 h (QKV 3h^2 + 3h, projection h^2 + h, MLP 8h^2 + 5h, two layernorms 4h);
 * the head the final layernorm 2h and the LM head v h (no bias). params[layer + 1]. */
static double gpt_units(const workload_model *m, double params[MAXL])
{
    double h = m->hidden, s = m->seq, v = m->vocab, total = 0;
    ck_assert(m->layers + 2 <= MAXL);
    params[0] = (v + s) * h;
    for (int l = 0; l < m->layers; l++)
        params[l + 1] = 12 * h * h + 13 * h;
    params[m->layers + 1] = v * h + 2 * h;
    for (int u = 0; u < m->layers + 2; u++)
        total += params[u];
    return total;
}

typedef struct hand {
    strategy s;
    workload_graph wg;
    device_table devices;
    const device_spec *dev;
    int L, M;
    double unit[MAXL], params;
} hand;

static void hand_load(hand *h, const char *strategy_rel)
{
    memset(h, 0, sizeof *h);
    sim_strategy_load(strategy_rel, &h->s);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&h->s.model, h->s.micro_batch, h->s.precision, &h->wg, &err),
                     0);
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml", ps_data_dir());
    ck_assert_int_eq(device_table_load(path, &h->devices, &err), 0);
    h->dev = device_table_find(&h->devices, "A100-SXM4-80GB"); /* the test platforms' GPU */
    ck_assert_ptr_nonnull(h->dev);
    h->L = h->s.model.layers;
    h->M = strategy_micro_batches(&h->s);
    h->params = gpt_units(&h->s.model, h->unit);
    ck_close(h->params, h->wg.total_params, 1e-12); /* the workload counts the same */
}

/* The test platforms' GPU alone (h->devices, h->dev), for plans gpt_units does not describe. */
static void hand_load_dev(hand *h)
{
    memset(h, 0, sizeof *h);
    ps_error err;
    ps_error_clear(&err);
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml", ps_data_dir());
    ck_assert_int_eq(device_table_load(path, &h->devices, &err), 0);
    h->dev = device_table_find(&h->devices, "A100-SXM4-80GB");
    ck_assert_ptr_nonnull(h->dev);
}

static void hand_free(hand *h)
{
    workload_graph_free(&h->wg);
    device_table_free(&h->devices);
    strategy_free(&h->s);
}

/* One op's kernels in the flow shop (flow_op), at their cost on the hand model's GPU. */
static void issue(const hand *h, kernel_flow *fl, const workload_op *op, op_pass pass)
{
    flow_op(fl, op, pass, cost_op_kernel_seconds(op, pass, h->s.precision, h->dev));
}

/* A ring of two GPUs on one split-duplex link of `bw` bytes/s per direction, no overheads:
 * an all-gather or reduce-scatter of an S-byte buffer sends S/2 each way. Unit u's parameter
 * gather (bf16) and gradient reduce-scatter (fp32, as Megatron reduces bf16 gradients). */
static double gather_s(const hand *h, int u, double bw)
{
    return h->unit[u] * 2 / 2 / bw;
}

static double reduce_s(const hand *h, int u, double bw)
{
    return h->unit[u] * 4 / 2 / bw;
}

/* When each unit's compute ends, end[mb][backward][layer + 1]: micro-batch after micro-batch,
 * forward then backward (ops in reverse), on a GPU that runs each kernel once the host has
 * issued it (the host never waits) and the previous one is done. With fsdp_bw (the link's
 * bytes/s; 0: no ZeRO-3), each micro-batch's embedding and layer 0 wait for their gathers; the
 * later ones, one unit ahead, are done before their unit could start (checked against the
 * simulation). Micro-batch 0's come first on the DP stream, back to back from 0. A later
 * micro-batch's embedding gather is issued when the previous backward's embedding starts (layer
 * 0's backward done at T) but queues behind layer 0's reduce-scatter: it ends at
 * T + r_l0 + a_emb; then the embedding's reduce-scatter, then layer 0's gather. */
static void hand_chain(const hand *h, double fsdp_bw, double end[][2][MAXL])
{
    kernel_flow fl = {0, 0};
    double gate[2] = {0, 0};
    if (fsdp_bw > 0) {
        gate[0] = gather_s(h, 0, fsdp_bw);
        gate[1] = gate[0] + gather_s(h, 1, fsdp_bw);
    }
    for (int mb = 0; mb < h->M; mb++) {
        if (fsdp_bw > 0 && mb > 0) {
            gate[0] = end[mb - 1][1][1] + reduce_s(h, 1, fsdp_bw) + gather_s(h, 0, fsdp_bw);
            gate[1] = gate[0] + reduce_s(h, 0, fsdp_bw) + gather_s(h, 1, fsdp_bw);
        }
        int prev = -2;
        for (int i = 0; i < h->wg.n_ops; i++) {
            const workload_op *op = &h->wg.ops[i];
            if (op->layer != prev && op->layer <= 0) /* the embedding's or layer 0's first op */
                fl.gpu = fmax(fl.gpu, gate[op->layer + 1]);
            prev = op->layer;
            issue(h, &fl, op, PASS_FWD);
            end[mb][0][op->layer + 1] = fl.gpu;
        }
        for (int i = h->wg.n_ops - 1; i >= 0; i--) {
            issue(h, &fl, &h->wg.ops[i], PASS_BWD);
            end[mb][1][h->wg.ops[i].layer + 1] = fl.gpu;
        }
    }
}

/* Adam on half of the parameters (ZeRO 1-3 over two GPUs) and the step's overhead. */
static double optimizer_s(const hand *h)
{
    return cost_optimizer_seconds(h->params / 2, 1, PREC_BF16, 1, h->dev) +
           cost_iteration_overhead_seconds();
}

/* ---- the collectives ---- */

static const char *coll_label(const exec_graph *g, uint32_t c)
{
    return g->labels[g->tasks[g->coll_tasks[g->colls[c].first_task]].label];
}

/* Collectives labelled `label`, checking each is of `kind`; their bytes in graph order. */
static int count_colls(const exec_graph *g, const char *label, coll_kind kind, double *bytes,
                       int cap)
{
    int n = 0;
    for (uint32_t c = 0; c < g->n_colls; c++) {
        if (strcmp(coll_label(g, c), label))
            continue;
        ck_assert_msg(g->colls[c].kind == kind, "%s is a %s", label,
                      coll_kind_name(g->colls[c].kind));
        if (bytes && n < cap)
            bytes[n] = g->colls[c].bytes;
        n++;
    }
    return n;
}

static int dp_colls(const exec_graph *g)
{
    int n = 0;
    for (uint32_t c = 0; c < g->n_colls; c++)
        n += g->tasks[g->coll_tasks[g->colls[c].first_task]].category == CAT_DP_COMM;
    return n;
}

/* ZeRO-3 on 2 GPUs, 4 layers, 2 micro-batches: 6 units (embedding, 4 layers, head). Per
 * micro-batch each unit's parameters are gathered twice (before its forward, before its
 * backward) and its gradients reduce-scattered once: 2 x 2 x 6 gathers, 2 x 6 reduce-scatters,
 * nothing else (no bucket, no gather after the optimizer). Buffers: the unit's bf16
 * parameters, its fp32 gradients. Each gather gates exactly one compute task of rank 0. */
START_TEST(fsdp_gathers_twice_per_unit_and_reduces_once)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-small.yaml", -1, "tests/data/htae/two-300GBps.xml");
    const exec_graph *g = f.p.graph;
    double unit[MAXL], fwd[16], bwd[16], rs[16];
    gpt_units(&f.s.model, unit);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather fwd", COLL_ALLGATHER, fwd, 16), 12);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather bwd", COLL_ALLGATHER, bwd, 16), 12);
    ck_assert_int_eq(count_colls(g, "fsdp grad reduce-scatter", COLL_REDUCE_SCATTER, rs, 16), 12);
    ck_assert_int_eq(dp_colls(g), 36);
    for (int mb = 0; mb < 2; mb++)
        for (int i = 0; i < 6; i++) {
            ck_close(fwd[mb * 6 + i], unit[i] * 2, 1e-12);     /* embedding first */
            ck_close(bwd[mb * 6 + i], unit[5 - i] * 2, 1e-12); /* head first */
            ck_close(rs[mb * 6 + i], unit[5 - i] * 4, 1e-12);  /* as backward ends */
        }
    for (uint32_t k = 0; k < g->n_colls; k++)
        ck_assert_int_eq(g->groups[g->colls[k].group].n, 2); /* both GPUs */
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != 0 || k->kind != TASK_COLLECTIVE || g->colls[k->coll].kind != COLL_ALLGATHER)
            continue;
        int gated = 0;
        for (uint32_t i = 0; i < k->n_succ; i++) {
            const graph_task *n = &g->tasks[g->succ[k->succ_first + i]];
            gated += n->kind == TASK_COMPUTE && n->rank == 0;
        }
        ck_assert_int_eq(gated, 1);
    }
    fixture_free(&f);
}
END_TEST

/* ZeRO 1 reduce-scatters the buckets once, after the last micro-batch's backward (the others
 * accumulate whole gradients locally); ZeRO 2 holds only its shard of the gradients, so it
 * reduce-scatters every micro-batch's. Both gather the updated parameters once. fsdp-small's
 * default 25 MB buckets: the head (8.4 M fp32 gradients: 33.6 MB) closes one, each layer
 * (12.6 M: 50.4 MB) one, the embedding (8.9 M) the last: 6 per micro-batch. */
START_TEST(zero2_reduces_every_micro_batch_zero1_the_last)
{
    sim_fixture f;
    sim_load("tests/data/htae/two-300GBps.xml", &f.c);
    for (int zero = 1; zero <= 2; zero++) {
        fixture_load(&f, "tests/data/zero/fsdp-small.yaml", NULL);
        f.s.zero = zero;
        fixture_compile(&f, NULL);
        const exec_graph *g = f.p.graph;
        int rs = count_colls(g, "dp grad reduce-scatter", COLL_REDUCE_SCATTER, NULL, 0);
        ck_assert_int_eq(rs, zero == 1 ? 6 : 2 * 6);
        ck_assert_int_eq(count_colls(g, "dp param all-gather", COLL_ALLGATHER, NULL, 0), 1);
        ck_assert_int_eq(dp_colls(g), rs + 1);
        fixture_free_plan(&f);
    }
    cluster_free(&f.c);
}
END_TEST

/* On a fast link (300 GB/s) FSDP's gathers hide behind compute but each micro-batch's first
 * ones. With a GPU-bound model (tests/data/zero/gpu-bound.yaml), no overheads, by hand:
 * - ZeRO-2: the compute chain runs unhindered; each layer's gradient bucket is reduce-scattered
 *   as its backward ends, the embedding's after the last one and after layer 0's (the DP
 *   stream runs in order), then Adam on half the parameters, then all parameters all-gathered:
 *   T2 = max(E_emb, E_l0 + r_l0) + r_emb + opt + sum_u a_u.
 * - ZeRO-3: the same reduce-scatters and no final gather; the chain waits only for each
 *   micro-batch's embedding and layer 0 gathers (hand_chain):
 *   T3 = max(E'_emb, E'_l0 + r_l0) + r_emb + opt.
 * So T3 - T2 = (E'_emb - E_emb) - sum_u a_u: the exposed first gathers of each micro-batch,
 * less ZeRO-2's final gather of every parameter. */
START_TEST(fsdp_fast_link_exposes_only_the_first_gathers)
{
    hand h;
    hand_load(&h, "tests/data/zero/gpu-bound.yaml");
    const double bw = 300e9;
    double plain[2][2][MAXL], gated[2][2][MAXL], all_gathers = 0;
    int last = h.M - 1;
    hand_chain(&h, 0, plain);
    hand_chain(&h, bw, gated);
    for (int u = 0; u < h.L + 2; u++)
        all_gathers += gather_s(&h, u, bw);
    double r_l0 = reduce_s(&h, 1, bw), r_emb = reduce_s(&h, 0, bw), opt = optimizer_s(&h);
    double t2 = fmax(plain[last][1][0], plain[last][1][1] + r_l0) + r_emb + opt + all_gathers;
    double t3 = fmax(gated[last][1][0], gated[last][1][1] + r_l0) + r_emb + opt;
    /* what the first gathers cost: at most the gathers themselves (micro-batch 0) and the
     * reduce-scatters they queue behind (the others) */
    double exposed = gated[last][1][0] - plain[last][1][0];
    double bound = h.M * (gather_s(&h, 0, bw) + gather_s(&h, 1, bw)) + (h.M - 1) * (r_l0 + r_emb);
    ck_assert_msg(exposed > 0 && exposed <= bound, "exposed %g of at most %g", exposed, bound);

    const char *plan = "tests/data/zero/gpu-bound.yaml", *link = "tests/data/htae/two-300GBps.xml";
    double sim2 = simulate(plan, 2, link), sim3 = simulate(plan, 3, link);
    ck_close(sim2, t2, 1e-9);
    ck_close(sim3, t3, 1e-9);
    ck_close(sim3 - sim2, exposed - all_gathers, 1e-6);
    hand_free(&h);
}
END_TEST

/* On a slow link (1 GB/s) the DP stream is the bottleneck and every collective shows, by hand:
 * - ZeRO-3: gathers and reduce-scatters back to back from the start, 2M gathers and M
 *   reduce-scatters per unit, then Adam: T3 = M sum_u (2 a_u + r_u) + opt.
 * - ZeRO-2: idle until micro-batch 0's head backward ends (t0, no gathers to wait for), then
 *   every micro-batch's buckets, Adam and the final gather: T2 = t0 + M sum r + opt + sum a.
 * - ZeRO-1: only the last micro-batch's buckets, from the end of its head backward (t1):
 *   T1 = t1 + sum r + opt + sum a.
 * ZeRO-3 grows by its gathers: T3 - T2 = (2M - 1) sum a - t0. */
START_TEST(fsdp_slow_link_exposes_every_gather)
{
    hand h;
    hand_load(&h, "tests/data/zero/gpu-bound.yaml");
    const double bw = 1e9;
    double plain[2][2][MAXL], sum_a = 0, sum_r = 0;
    hand_chain(&h, 0, plain);
    for (int u = 0; u < h.L + 2; u++) {
        sum_a += gather_s(&h, u, bw);
        sum_r += reduce_s(&h, u, bw);
    }
    double opt = optimizer_s(&h), M = h.M;
    double t0 = plain[0][1][h.L + 1], t1 = plain[h.M - 1][1][h.L + 1];
    double t3 = M * (2 * sum_a + sum_r) + opt;
    double t2 = t0 + M * sum_r + opt + sum_a;
    double t1_ = t1 + sum_r + opt + sum_a;

    const char *plan = "tests/data/zero/gpu-bound.yaml", *link = "tests/data/htae/two-1GBps.xml";
    double sim1 = simulate(plan, 1, link), sim2 = simulate(plan, 2, link);
    double sim3 = simulate(plan, 3, link);
    ck_close(sim1, t1_, 1e-9);
    ck_close(sim2, t2, 1e-9);
    ck_close(sim3, t3, 1e-9);
    ck_close(sim3 - sim2, (2 * M - 1) * sum_a - t0, 1e-6);
    ck_assert(sim1 < sim2 && sim2 < sim3); /* the three stages differ as their traffic does */
    hand_free(&h);
}
END_TEST

/* HSDP on 8 GPUs, shard degree 4: gathers and reduce-scatters inside each group of 4
 * consecutive DP ranks ({0-3}, {4-7}), then each shard's gradients (a quarter of the unit's)
 * all-reduced across the 2 groups ({j, j + 4}). Per unit and micro-batch (6 units, 2
 * micro-batches): 2 gathers and 1 reduce-scatter in each of the 2 shard groups, 1 all-reduce
 * in each of the 4 replica groups. Memory: states sharded 4 ways, not 8. */
START_TEST(hsdp_shards_in_groups_and_reduces_across_them)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/hsdp.yaml", -1, NULL);
    const exec_graph *g = f.p.graph;
    double unit[MAXL], ar[64];
    double P = gpt_units(&f.s.model, unit);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather fwd", COLL_ALLGATHER, NULL, 0), 24);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather bwd", COLL_ALLGATHER, NULL, 0), 24);
    ck_assert_int_eq(count_colls(g, "fsdp grad reduce-scatter", COLL_REDUCE_SCATTER, NULL, 0), 24);
    ck_assert_int_eq(count_colls(g, "hsdp grad all-reduce", COLL_ALLREDUCE, ar, 64), 48);
    for (int mb = 0; mb < 2; mb++)
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 4; j++) /* backward order: head first */
                ck_close(ar[(mb * 6 + i) * 4 + j], unit[5 - i] * 4 / 4, 1e-12);
    for (uint32_t k = 0; k < g->n_colls; k++) {
        if (g->tasks[g->coll_tasks[g->colls[k].first_task]].category != CAT_DP_COMM)
            continue;
        const graph_group *gr = &g->groups[g->colls[k].group];
        const int32_t *r = &g->group_ranks[gr->first];
        if (g->colls[k].kind == COLL_ALLREDUCE) {
            ck_assert_int_eq(gr->n, 2);
            ck_assert_int_eq(r[1], r[0] + 4);
        } else {
            ck_assert_int_eq(gr->n, 4);
            ck_assert(r[0] % 4 == 0 && r[1] == r[0] + 1 && r[2] == r[0] + 2 && r[3] == r[0] + 3);
        }
    }
    ck_close(f.p.memory[0].optimizer, P * 12 / 4, 1e-12);
    /* it runs: every rank reduces its shard across the groups after reducing in its group */
    htae_default_options(&f.o);
    fixture_run(&f);
    const htae_result *res = &f.r;
    for (uint32_t t = 0, last_rs = UINT32_MAX; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != 5 || k->kind != TASK_COLLECTIVE || k->category != CAT_DP_COMM)
            continue;
        if (g->colls[k->coll].kind == COLL_REDUCE_SCATTER)
            last_rs = t;
        if (g->colls[k->coll].kind == COLL_ALLREDUCE)
            ck_assert(last_rs != UINT32_MAX && res->start[t] >= res->end[last_rs] - 1e-12);
    }
    fixture_free(&f);
}
END_TEST

/* strategies/examples/gpt3-6.7b-zero3-8gpu.yaml (L 32, h 4096, s 2048, v 51200; bf16, Adam) on
 * 8 GPUs, by hand: P = (v + s) h + 32 (12 h^2 + 13 h) + 2 h = 6 662 266 880 parameters (GPT ties
 * its LM head to the word embedding: the head unit holds the final layernorm only).
 * Weights: P x 2 B / 8, plus the two units in flight at once: the largest neighbours in the
 * unit program are the embedding's backward and the next micro-batch's embedding forward
 * (prefetched under it), 2 (v + s) h = 436 207 616 parameters, x 2 B. Gradients: fp32 shard
 * P x 4 / 8 plus the largest unit's full fp32 gradients (the embedding, being reduce-scattered).
 * Adam: fp32 master + 2 moments, 12 B / 8. Buffers: the 2 GiB runtime reserve, no buckets. */
START_TEST(fsdp_memory_of_gpt3_6_7b_on_8_gpus)
{
    sim_fixture f;
    zero_plan(&f, "strategies/examples/gpt3-6.7b-zero3-8gpu.yaml", -1, NULL);
    double h = 4096, sq = 2048, v = 51200;
    double emb = (v + sq) * h, layer = 12 * h * h + 13 * h, head = 2 * h;
    double P = emb + 32 * layer + head;
    ck_close(P, 6662266880.0, 1e-15);
    ck_close(f.p.params_total, P, 1e-12);
    double pairs[] = {emb + layer, 2 * layer, layer + head, 2 * head, 2 * emb}, pair = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        pair = fmax(pair, pairs[i]);
    ck_close(pair, 436207616.0, 1e-15);
    for (int r = 0; r < 8; r++) {
        const memory_estimate *m = &f.p.memory[r];
        ck_close(m->weights, P * 2 / 8 + pair * 2, 1e-12);
        ck_close(m->gradients, P * 4 / 8 + emb * 4, 1e-12);
        ck_close(m->optimizer, P * 12 / 8, 1e-12);
        ck_close(m->buffers, 2.0 * 1073741824.0, 1e-12);
    }
    fixture_free(&f);
}
END_TEST

/* ---- FSDP under a pipeline (tests/data/zero/fsdp-pipeline.yaml) ---- */

/* The stage of a DP collective: its group's first rank / dp (ranks d + 2 p: data varies
 * fastest, pipeline slowest, as the default order puts them). */
static int coll_stage(const exec_graph *g, uint32_t c)
{
    return g->group_ranks[g->groups[g->colls[c].group].first] / 2;
}

/* Collectives labelled `label` of stage p: count, bytes and micro-batch in graph order. */
static int stage_colls(const exec_graph *g, const char *label, int p, double *bytes, int *mb,
                       int cap)
{
    int n = 0;
    for (uint32_t c = 0; c < g->n_colls; c++) {
        if (strcmp(coll_label(g, c), label) || coll_stage(g, c) != p)
            continue;
        if (n < cap) {
            bytes[n] = g->colls[c].bytes;
            mb[n] = g->tasks[g->coll_tasks[g->colls[c].first_task]].micro;
        }
        n++;
    }
    return n;
}

/* 2 stages (stage 0: embedding, layers 0-1; stage 1: layers 2-3, head), DP 2, 4 micro-batches,
 * 1F1B. PyTorch's pipelining keeps each stage's FSDP units gathered and their gradients
 * unsynced across micro-batches: per stage, each of its 3 units is all-gathered once (before
 * micro-batch 0's forward, in forward order: bf16 parameters) and reduce-scattered once (after
 * micro-batch 3's backward, in forward order: fp32 gradients). 6 gathers and 6 reduce-scatters
 * in all, against 2 x 4 x 6 = 48 gathers and 4 x 6 = 24 reduce-scatters if every micro-batch
 * gathered and reduced as FULL_SHARD does without a pipeline. Every collective spans the 2
 * ranks of its stage's DP group. */
START_TEST(fsdp_under_a_pipeline_gathers_and_reduces_once_per_unit)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-pipeline.yaml", -1, "tests/data/zero/four-dp1GBps.xml");
    const exec_graph *g = f.p.graph;
    double unit[MAXL], bytes[8];
    int mb[8];
    gpt_units(&f.s.model, unit);
    ck_assert_int_eq(f.p.pp, 2);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather fwd", COLL_ALLGATHER, NULL, 0), 6);
    ck_assert_int_eq(count_colls(g, "fsdp param all-gather bwd", COLL_ALLGATHER, NULL, 0), 0);
    ck_assert_int_eq(count_colls(g, "fsdp grad reduce-scatter", COLL_REDUCE_SCATTER, NULL, 0), 6);
    ck_assert_int_eq(dp_colls(g), 12);
    for (int p = 0; p < 2; p++) {
        ck_assert_int_eq(stage_colls(g, "fsdp param all-gather fwd", p, bytes, mb, 8), 3);
        for (int i = 0; i < 3; i++) { /* stage p's units are unit[3p .. 3p + 2] */
            ck_close(bytes[i], unit[3 * p + i] * 2, 1e-12);
            ck_assert_int_eq(mb[i], 0);
        }
        ck_assert_int_eq(stage_colls(g, "fsdp grad reduce-scatter", p, bytes, mb, 8), 3);
        for (int i = 0; i < 3; i++) {
            ck_close(bytes[i], unit[3 * p + i] * 4, 1e-12);
            ck_assert_int_eq(mb[i], 3);
        }
    }
    for (uint32_t k = 0; k < g->n_colls; k++) {
        const graph_group *gr = &g->groups[g->colls[k].group];
        ck_assert_int_eq(gr->n, 2);
        ck_assert_int_eq(g->group_ranks[gr->first + 1], g->group_ranks[gr->first] + 1);
    }
    fixture_free(&f);
}
END_TEST

/* The same plan with the DP pairs on 1 GB/s links (pipeline pairs on 300 GB/s ones), no
 * overheads. A 2-member ring moves half the buffer each way: unit u gathers in
 * a_u = 2 unit_u / 2 / 1e9 s and reduce-scatters in r_u = 4 unit_u / 2 / 1e9 s (the embedding
 * 8.9 M parameters: 8.9 ms and 17.8 ms; a layer 12.6 M: 12.6 ms and 25.2 ms). On rank 0
 * (stage 0) by hand:
 * - the gathers run back to back from 0: [0, a_e], [a_e, a_e + a_0], [a_e + a_0, a_e + a_0 + a_1]
 *   (each is issued when the unit before starts computing, well before the link is free: a
 *   unit's forward is about 0.1 ms), and micro-batch 0's forward of each unit starts exactly
 *   when its gather ends; no other gather follows (every later pass finds its unit gathered);
 * - the reduce-scatters wait for the stage's last backward (micro-batch 3's embedding, ending
 *   at E) and run back to back in forward order, then Adam on half of the stage's parameters:
 *   the rank's step ends at E + r_e + r_0 + r_1 + opt; on rank 2 (stage 1) likewise with its
 *   units, and rank 0 ends last (stage 0's backward of micro-batch 3 comes after stage 1's):
 *   the iteration. */
START_TEST(fsdp_under_a_pipeline_step_time_by_hand)
{
    hand h;
    hand_load(&h, "tests/data/zero/fsdp-pipeline.yaml");
    const double bw = 1e9;
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-pipeline.yaml", -1, "tests/data/zero/four-dp1GBps.xml");
    fixture_run(&f);
    const exec_graph *g = f.p.graph;
    const htae_result *res = &f.r;
    double rank_end[4] = {0, 0, 0, 0};
    for (int p = 0; p < 2; p++) {
        int r = 2 * p, ng = 0, nr = 0;
        double at = 0, last_bwd = 0, stage_params = 0;
        for (int i = 0; i < 3; i++)
            stage_params += h.unit[3 * p + i];
        for (uint32_t t = 0; t < g->n_tasks; t++) {
            const graph_task *k = &g->tasks[t];
            if (k->rank == r && k->kind == TASK_COMPUTE && k->category == CAT_BACKWARD)
                last_bwd = fmax(last_bwd, res->end[t]);
        }
        for (uint32_t t = 0; t < g->n_tasks; t++) {
            const graph_task *k = &g->tasks[t];
            if (k->rank != r || k->kind != TASK_COLLECTIVE)
                continue;
            int u = 3 * p + (g->colls[k->coll].kind == COLL_ALLGATHER ? ng : nr);
            if (g->colls[k->coll].kind == COLL_ALLGATHER) {
                ck_assert_int_lt(ng, 3);
                if (p == 0) { /* stage 0: nothing else holds its gathers back */
                    ck_close(res->start[t], at, 1e-9);
                    ck_close(res->end[t], at + gather_s(&h, u, bw), 1e-9);
                    for (uint32_t i = 0; i < k->n_succ; i++) {
                        uint32_t n = g->succ[k->succ_first + i];
                        if (g->tasks[n].rank == r && g->tasks[n].kind == TASK_COMPUTE)
                            ck_close(res->start[n], res->end[t], 1e-12);
                    }
                    at = res->end[t];
                } else {
                    ck_close(res->end[t] - res->start[t], gather_s(&h, u, bw), 1e-9);
                }
                ng++;
                continue;
            }
            ck_assert_int_eq(g->colls[k->coll].kind, COLL_REDUCE_SCATTER);
            ck_assert_int_eq(ng, 3); /* every gather before any reduce-scatter */
            if (nr == 0)
                at = last_bwd;
            ck_close(res->start[t], at, 1e-12);
            ck_close(res->end[t], at + reduce_s(&h, u, bw), 1e-9);
            at = res->end[t];
            nr++;
        }
        ck_assert_int_eq(nr, 3);
        double opt = cost_optimizer_seconds(stage_params / 2, 1, PREC_BF16, 1, h.dev) +
                     cost_iteration_overhead_seconds();
        for (uint32_t t = 0; t < g->n_tasks; t++)
            if (g->tasks[t].rank == r && g->tasks[t].category == CAT_OPTIMIZER)
                rank_end[r] = res->end[t];
        ck_close(rank_end[r], at + opt, 1e-9);
    }
    ck_assert(rank_end[0] > rank_end[2]);
    ck_close(res->makespan, rank_end[0], 1e-12);
    fixture_free(&f);
    hand_free(&h);
}
END_TEST

/* Memory of the same plan, by hand. Stage 0 holds P0 = (v + s) h + 2 (12 h^2 + 13 h) parameters,
 * stage 1 P1 = 2 (12 h^2 + 13 h) + v h + 2 h. Under a pipeline FSDP keeps the stage's units
 * gathered and its gradients whole for the step: weights P x 2 B / 2 (the shard) + P x 2 B (all
 * units gathered), gradients P x 4 B (whole, accumulated in fp32), Adam 12 B x P / 2 (sharded),
 * the 2 GiB runtime reserve and no buckets. */
START_TEST(fsdp_under_a_pipeline_memory)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-pipeline.yaml", -1, "tests/data/zero/four-dp1GBps.xml");
    double h = 1024, sq = 512, v = 8192, layer = 12 * h * h + 13 * h;
    double P[2] = {(v + sq) * h + 2 * layer, 2 * layer + v * h + 2 * h};
    ck_close(P[0], 34105344.0, 1e-15);
    ck_close(P[1], 33583104.0, 1e-15);
    for (int r = 0; r < 4; r++) {
        const memory_estimate *m = &f.p.memory[r];
        double p = P[r / 2];
        ck_close(m->weights, p * 2 / 2 + p * 2, 1e-12);
        ck_close(m->gradients, p * 4, 1e-12);
        ck_close(m->optimizer, p * 12 / 2, 1e-12);
        ck_close(m->buffers, 2.0 * 1073741824.0, 1e-12);
    }
    fixture_free(&f);
}
END_TEST

/* ---- FSDP with expert parallelism (tests/data/zero/fsdp-ep.yaml, four-ep-mesh.xml) ---- */

/* The one-layer MoE's FSDP units by hand (llama: no biases, no position table; h 512, 8 heads
 * of 64 and 8 KV heads, vocab 4096, 4 experts of width 1024, EP 2): the embedding v h =
 * 2,097,152; the layer's dense part, attention 4 h^2 + its two RMSNorms 2 h + the router E h =
 * 1,051,648; its routed experts on a rank, E / ep x 3 h ffn (SwiGLU) = 3,145,728; the head,
 * final norm h + LM head v h = 2,097,664. */
#define EP_EMB    2097152.0
#define EP_DENSE  1051648.0
#define EP_EXPERT 3145728.0
#define EP_HEAD   2097664.0

/* Rank 0's DP-stream collectives of the plan, in its stream's order (graph order): DP 4 with
 * one micro-batch, program embedding, layer, head forward then head, layer, embedding backward,
 * each gather one step ahead and before the step's reduce-scatters. A MoE unit gathers its
 * dense parameters over the 4 data-parallel ranks and then its experts over the
 * expert-data-parallel pair {0, 2}, and reduces its gradients in the same order. */
static const struct {
    const char *label;
    double params, elem; /* bytes = params x elem (bf16 gathers, fp32 reductions) */
    int members;
} EP_STREAM[] = {
    {"fsdp param all-gather fwd", EP_EMB, 2, 4},     {"fsdp param all-gather fwd", EP_DENSE, 2, 4},
    {"fsdp expert all-gather fwd", EP_EXPERT, 2, 2}, {"fsdp param all-gather fwd", EP_HEAD, 2, 4},
    {"fsdp param all-gather bwd", EP_HEAD, 2, 4},    {"fsdp param all-gather bwd", EP_DENSE, 2, 4},
    {"fsdp expert all-gather bwd", EP_EXPERT, 2, 2}, {"fsdp grad reduce-scatter", EP_HEAD, 4, 4},
    {"fsdp param all-gather bwd", EP_EMB, 2, 4},     {"fsdp grad reduce-scatter", EP_DENSE, 4, 4},
    {"fsdp expert reduce-scatter", EP_EXPERT, 4, 2}, {"fsdp grad reduce-scatter", EP_EMB, 4, 4},
};
#define EP_STREAM_N 12

/* Every collective's bytes and group. The dense ones span DP ranks 0-3 (in ring order); the
 * expert ones the expert-data-parallel pairs {0, 2} and {1, 3} (efsdp = 4 / ep: stage indices
 * of one EP index, ep apart), 6 of them (2 gathers and 1 reduce-scatter per pair) against 18
 * dense. */
START_TEST(fsdp_with_experts_shards_them_over_the_edp_pairs)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-ep.yaml", -1, "tests/data/zero/four-ep-mesh.xml");
    const exec_graph *g = f.p.graph;
    int n = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != 0 || k->kind != TASK_COLLECTIVE || k->category != CAT_DP_COMM)
            continue;
        ck_assert_int_lt(n, EP_STREAM_N);
        const graph_collective *c = &g->colls[k->coll];
        const graph_group *gr = &g->groups[c->group];
        ck_assert_str_eq(coll_label(g, k->coll), EP_STREAM[n].label);
        ck_close(c->bytes, EP_STREAM[n].params * EP_STREAM[n].elem, 1e-12);
        ck_assert_int_eq(gr->n, EP_STREAM[n].members);
        for (uint32_t m = 0; m < gr->n; m++) /* ranks 0, 1, 2, 3 or 0, 2 */
            ck_assert_int_eq(g->group_ranks[gr->first + m], (int)m * (4 / EP_STREAM[n].members));
        n++;
    }
    ck_assert_int_eq(n, EP_STREAM_N);
    ck_assert_int_eq(count_colls(g, "fsdp expert all-gather fwd", COLL_ALLGATHER, NULL, 0), 2);
    ck_assert_int_eq(count_colls(g, "fsdp expert all-gather bwd", COLL_ALLGATHER, NULL, 0), 2);
    ck_assert_int_eq(count_colls(g, "fsdp expert reduce-scatter", COLL_REDUCE_SCATTER, NULL, 0), 2);
    ck_assert_int_eq(dp_colls(g), 3 * 3 + 6);
    for (uint32_t c = 0; c < g->n_colls; c++)
        if (!strncmp(coll_label(g, c), "fsdp expert", 11)) {
            const graph_group *gr = &g->groups[g->colls[c].group];
            int r0 = g->group_ranks[gr->first];
            ck_assert(r0 == 0 || r0 == 1);
            ck_assert_int_eq(g->group_ranks[gr->first + 1], r0 + 2);
        }
    fixture_free(&f);
}
END_TEST

/* Timings by hand, every overhead off. The 4 GPUs are a full mesh of split-duplex links, the
 * EP pairs' 0-1 and 2-3 at 300 GB/s, the four others at 1 GB/s each way. A 2-member ring (the
 * expert pairs 0-2, 1-3, each on its own link) moves S/2 each way: S/2 / 1e9 s. The 4-member
 * ring: protosim's ring search (htae_rings_build: the ring whose tightest link is widest, its
 * capacity taken, repeated) finds 0-1-2-3, 0-3-2-1, 0-1-3-2 and 0-2-3-1, each taking one
 * 1 GB/s direction of two slow links, then none (every other ring crosses a spent one), and
 * splits the volume equally: each slow direction carries 1/4 of a ring edge's 3/4 S, so the
 * collective takes 3/16 S / 1e9 s. The model computes in far less than its collectives take, so
 * rank 0's DP stream runs its 12 collectives back to back from 0, each issued before the one
 * ahead of it ends (the gathers one step ahead; each reduce-scatter's backward done under the
 * gathers queued before it). Then Adam on the rank's shards, dense / 4 + experts / 2
 * parameters: the iteration ends at (3/16 (2 + 2 + 4)(emb + dense + head) + 1/2 (2 + 2 + 4)
 * experts) / 1e9 + Adam = (1.5 x 5,246,464 + 4 x 3,145,728) / 1e9 = 20.452608 ms + Adam. */
START_TEST(fsdp_with_experts_step_time_by_hand)
{
    hand h;
    hand_load_dev(&h);
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-ep.yaml", -1, "tests/data/zero/four-ep-mesh.xml");
    fixture_run(&f);
    const exec_graph *g = f.p.graph;
    const htae_result *res = &f.r;
    double at = 0;
    int n = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != 0 || k->kind != TASK_COLLECTIVE || k->category != CAT_DP_COMM)
            continue;
        double bytes = EP_STREAM[n].params * EP_STREAM[n].elem;
        double secs = (EP_STREAM[n].members == 4 ? 3.0 / 16 : 1.0 / 2) * bytes / 1e9;
        ck_close(res->start[t], at, 1e-9);
        ck_close(res->end[t], at + secs, 1e-9);
        at = res->end[t];
        n++;
    }
    ck_assert_int_eq(n, EP_STREAM_N);
    ck_close(at, (1.5 * (EP_EMB + EP_DENSE + EP_HEAD) + 4 * EP_EXPERT) / 1e9, 1e-9);
    ck_close(at, 20.452608e-3, 1e-9);
    double opt = cost_optimizer_seconds((EP_EMB + EP_DENSE + EP_HEAD) / 4 + EP_EXPERT / 2, 1,
                                        PREC_BF16, 1, h.dev) +
                 cost_iteration_overhead_seconds();
    ck_close(res->makespan, at + opt, 1e-9);
    fixture_free(&f);
    device_table_free(&h.devices);
}
END_TEST

/* Memory of the plan by hand: weights the shards (dense / 4 + experts / 2) x 2 B plus the two
 * largest consecutive units gathered (the layer, 4,197,376 with its experts, and the head); the
 * gradients the shards x 4 B plus the largest unit's whole (the layer); Adam 12 B x the
 * shards. */
START_TEST(fsdp_with_experts_memory)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-ep.yaml", -1, "tests/data/zero/four-ep-mesh.xml");
    double layer = EP_DENSE + EP_EXPERT, shards = (EP_EMB + EP_DENSE + EP_HEAD) / 4 + EP_EXPERT / 2;
    ck_close(layer, 4197376.0, 1e-15);
    for (int r = 0; r < 4; r++) {
        const memory_estimate *m = &f.p.memory[r];
        ck_close(m->weights, shards * 2 + (layer + EP_HEAD) * 2, 1e-12);
        ck_close(m->gradients, shards * 4 + layer * 4, 1e-12);
        ck_close(m->optimizer, shards * 12, 1e-12);
    }
    fixture_free(&f);
}
END_TEST

/* HSDP with expert parallelism (tests/data/zero/fsdp-ep-hsdp.yaml, 8 GPUs of a generated DGX
 * A100): rank 0's DP stream, as EP_STREAM with each reduce-scatter followed by the all-reduce
 * of its shard across the 2 replicas: the dense units' over {0, 4} (1/4 of the unit's fp32
 * gradients), the experts' over {0, 4} (1/2 of theirs: the expert shard group {0, 2} holds
 * halves). Members: the replica's shard group 0-3, the expert shard group {0, 2} (stage indices
 * of EP index 0 inside replica 0), the replica groups {0, 4}. */
static const struct {
    const char *label;
    double bytes;
    int members[4], n;
} HSDP_STREAM[] = {
    {"fsdp param all-gather fwd", EP_EMB * 2, {0, 1, 2, 3}, 4},
    {"fsdp param all-gather fwd", EP_DENSE * 2, {0, 1, 2, 3}, 4},
    {"fsdp expert all-gather fwd", EP_EXPERT * 2, {0, 2}, 2},
    {"fsdp param all-gather fwd", EP_HEAD * 2, {0, 1, 2, 3}, 4},
    {"fsdp param all-gather bwd", EP_HEAD * 2, {0, 1, 2, 3}, 4},
    {"fsdp param all-gather bwd", EP_DENSE * 2, {0, 1, 2, 3}, 4},
    {"fsdp expert all-gather bwd", EP_EXPERT * 2, {0, 2}, 2},
    {"fsdp grad reduce-scatter", EP_HEAD * 4, {0, 1, 2, 3}, 4},
    {"hsdp grad all-reduce", EP_HEAD * 4 / 4, {0, 4}, 2},
    {"fsdp param all-gather bwd", EP_EMB * 2, {0, 1, 2, 3}, 4},
    {"fsdp grad reduce-scatter", EP_DENSE * 4, {0, 1, 2, 3}, 4},
    {"hsdp grad all-reduce", EP_DENSE * 4 / 4, {0, 4}, 2},
    {"fsdp expert reduce-scatter", EP_EXPERT * 4, {0, 2}, 2},
    {"hsdp expert grad all-reduce", EP_EXPERT * 4 / 2, {0, 4}, 2},
    {"fsdp grad reduce-scatter", EP_EMB * 4, {0, 1, 2, 3}, 4},
    {"hsdp grad all-reduce", EP_EMB * 4 / 4, {0, 4}, 2},
};
#define HSDP_STREAM_N 16

/* The collectives above in order on rank 0, every expert collective's group (shard pairs
 * {r, r + 2} inside a replica, replica pairs {r, r + 4}), and memory: the shards are
 * dense / 4 + experts / 2 as on 4 GPUs without HSDP (the replica is that plan's 4 ranks). */
START_TEST(hsdp_with_experts_shards_inside_a_replica_and_reduces_across)
{
    sim_fixture f;
    zero_plan(&f, "tests/data/zero/fsdp-ep-hsdp.yaml", -1, NULL);
    const exec_graph *g = f.p.graph;
    int n = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != 0 || k->kind != TASK_COLLECTIVE || k->category != CAT_DP_COMM)
            continue;
        ck_assert_int_lt(n, HSDP_STREAM_N);
        const graph_collective *c = &g->colls[k->coll];
        const graph_group *gr = &g->groups[c->group];
        ck_assert_str_eq(coll_label(g, k->coll), HSDP_STREAM[n].label);
        ck_close(c->bytes, HSDP_STREAM[n].bytes, 1e-12);
        ck_assert_int_eq(gr->n, HSDP_STREAM[n].n);
        for (uint32_t m = 0; m < gr->n; m++)
            ck_assert_int_eq(g->group_ranks[gr->first + m], HSDP_STREAM[n].members[m]);
        n++;
    }
    ck_assert_int_eq(n, HSDP_STREAM_N);
    /* 4 expert shard pairs x 3 collectives and 4 replica pairs x 1 all-reduce */
    ck_assert_int_eq(count_colls(g, "fsdp expert reduce-scatter", COLL_REDUCE_SCATTER, NULL, 0), 4);
    ck_assert_int_eq(count_colls(g, "hsdp expert grad all-reduce", COLL_ALLREDUCE, NULL, 0), 4);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const char *l = coll_label(g, c);
        const graph_group *gr = &g->groups[g->colls[c].group];
        int r0 = g->group_ranks[gr->first], step = !strncmp(l, "fsdp expert", 11)              ? 2
                                                   : !strcmp(l, "hsdp expert grad all-reduce") ? 4
                                                                                               : 0;
        if (!step)
            continue;
        ck_assert_int_eq(gr->n, 2);
        ck_assert_int_eq(g->group_ranks[gr->first + 1], r0 + step);
        if (step == 2) /* inside one replica */
            ck_assert_int_eq(r0 / 4, (r0 + 2) / 4);
        else /* replica 0's rank and its counterpart in replica 1 */
            ck_assert_int_lt(r0, 4);
    }
    double shards = (EP_EMB + EP_DENSE + EP_HEAD) / 4 + EP_EXPERT / 2, layer = EP_DENSE + EP_EXPERT;
    for (int r = 0; r < 8; r++) {
        const memory_estimate *m = &f.p.memory[r];
        ck_close(m->weights, shards * 2 + (layer + EP_HEAD) * 2, 1e-12);
        ck_close(m->gradients, shards * 4 + layer * 4, 1e-12);
        ck_close(m->optimizer, shards * 12, 1e-12);
    }
    fixture_free(&f);
}
END_TEST

static Suite *zero_suite(void)
{
    const TTest *const tests[] = {fsdp_gathers_twice_per_unit_and_reduces_once,
                                  zero2_reduces_every_micro_batch_zero1_the_last,
                                  fsdp_fast_link_exposes_only_the_first_gathers,
                                  fsdp_slow_link_exposes_every_gather,
                                  hsdp_shards_in_groups_and_reduces_across_them,
                                  fsdp_memory_of_gpt3_6_7b_on_8_gpus,
                                  fsdp_under_a_pipeline_gathers_and_reduces_once_per_unit,
                                  fsdp_under_a_pipeline_step_time_by_hand,
                                  fsdp_under_a_pipeline_memory,
                                  fsdp_with_experts_shards_them_over_the_edp_pairs,
                                  fsdp_with_experts_step_time_by_hand,
                                  fsdp_with_experts_memory,
                                  hsdp_with_experts_shards_inside_a_replica_and_reduces_across,
                                  NULL};
    return suite_of("zero", "core", 120, tests);
}

int main(void)
{
    return suite_run(zero_suite());
}
