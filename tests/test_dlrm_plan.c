/* test_dlrm_plan.c: plans of recommendation models (strategies/compile/dlrm_plan.c): one GPU, where the
 * iteration is the sum of the op costs computed here; MLPs data-parallel over two GPUs with
 * data-parallel tables, whose gradient all-reduces have the sizes counted here by hand; the
 * located refusals of what is not modelled yet. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/cost/cost.h"
#include "../strategies/compile/compile.h"
#include "fixture.h"
#include "sim_util.h"
#include "suite_util.h"

/* A tiny DLRM: 4 dense features, bottom MLP 4 -> 8 -> 4, two tables of 100 and 10 rows of
 * dim 4, dot interaction over 3 vectors (3 pairs + the bottom's 4 = 7 wide), top MLP 7 -> 8 -> 1.
 * MLP parameters (weights + biases): 4*8+8 + 8*4+4 + 7*8+8 + 8*1+1 = 40 + 36 + 64 + 9 = 149;
 * table elements 100*4 + 10*4 = 440. */
#define MLP_PARAMS  149.0
#define TABLE_ELEMS 440.0
static const char *MODEL = "workload:\n"
                           "  family: dlrm\n"
                           "  dense_features: 4\n"
                           "  bottom_mlp: [8, 4]\n"
                           "  top_mlp: [8, 1]\n"
                           "  interaction: dot\n"
                           "  embedding_dim: 4\n"
                           "  tables: [100, 10]\n"
                           "  pooling: 2\n"
                           "  ids: {distribution: uniform}\n"
                           "  embedding_precision: fp32\n";

/* Load MODEL + `rest` as a strategy; returns strategy_load's code. */
static int load(const char *rest, strategy *s, ps_error *err)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", MODEL, rest);
    return sim_strategy_text(text, s, err);
}

/* The fixture of MODEL + `rest` compiled on the platform at cluster_rel (NULL: the one the test
 * loaded into f->c). */
static void plan(sim_fixture *f, const char *rest, const char *cluster_rel)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", MODEL, rest);
    fixture_text(f, text, cluster_rel);
}

/* One pass of one micro-batch on `dev`: every op's kernel time, the tables as one TBE kernel
 * (their update replaced by `update` when not NULL). */
static double pass_seconds(const workload_graph *g, op_pass pass, precision_t prec,
                           const device_spec *dev, const emb_update *update)
{
    double t = 0;
    workload_emb embs[2];
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) {
        if (g->ops[i].kind == OP_EMBEDDING_BAG) {
            embs[n] = g->ops[i].emb;
            if (update)
                embs[n].update = *update;
            n++;
        } else {
            t += cost_op_kernel_seconds(&g->ops[i], pass, prec, dev);
        }
    }
    ck_assert_int_eq(n, 2);
    return t + cost_embedding_seconds(embs, n, pass, dev);
}

START_TEST(one_gpu_is_the_sum_of_its_ops)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: bf16\noptimizer: adagrad\n"
         "strategy:\n  data: {degree: 1}\n",
         "tests/data/compile/one-h100.xml");
    ps_error err;
    ck_assert_int_eq(f.p.gpus, 1);
    ck_assert_int_eq(f.p.micro_batches, 2);
    ck_assert_double_eq(f.p.params_total, MLP_PARAMS + TABLE_ELEMS);
    ck_assert_int_eq(f.p.graph->n_colls, 0);

    /* the same op graph, with the tables' adagrad fused into the lookup's backward */
    workload_graph g;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_BF16, EMB_UPDATE_ADAGRAD, &g, &err) == 0);
    const device_spec *dev = f.c.device[0];
    double micro = pass_seconds(&g, PASS_FWD, PREC_BF16, dev, NULL) +
                   pass_seconds(&g, PASS_BWD, PREC_BF16, dev, NULL);
    /* adagrad's MLP step: the bytes of sgd with momentum (one fp32 word read and written) */
    double want = 2 * micro + cost_optimizer_seconds(MLP_PARAMS, 0, PREC_BF16, 1, dev) +
                  cost_iteration_overhead_seconds();
    fixture_run(&f);
    ck_close(f.r.makespan, want, 1e-9);

    /* memory: bf16 MLP (2 B) + fp32 tables (4 B); fp32 gradients of the MLP; master + the
     * accumulator for the MLP (8 B), the tables' fp32 accumulator (4 B) */
    ck_close(f.p.memory[0].weights, MLP_PARAMS * 2 + TABLE_ELEMS * 4, 1e-12);
    ck_close(f.p.memory[0].gradients, MLP_PARAMS * 4, 1e-12);
    ck_close(f.p.memory[0].optimizer, MLP_PARAMS * 8 + TABLE_ELEMS * 4, 1e-12);
    workload_graph_free(&g);
    fixture_free(&f);
}
END_TEST

START_TEST(two_gpus_all_reduce_by_hand)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n  embedding: {sharding: data-parallel}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    ck_assert_int_eq(f.p.dp, 2);
    ck_assert_int_eq(f.p.micro_batches, 1);
    /* the MLP gradients in fp16 (2 B), then the tables' dense fp32 gradients (4 B) */
    ck_assert_int_eq(f.p.graph->n_colls, 2);
    ck_assert_int_eq(f.p.graph->colls[0].kind, COLL_ALLREDUCE);
    ck_assert_double_eq(f.p.graph->colls[0].bytes, MLP_PARAMS * 2);
    ck_assert_int_eq(f.p.graph->colls[1].kind, COLL_ALLREDUCE);
    ck_assert_double_eq(f.p.graph->colls[1].bytes, TABLE_ELEMS * 4);
    /* a data-parallel table's gradient is dense on every GPU */
    ck_close(f.p.memory[1].gradients, MLP_PARAMS * 2 + TABLE_ELEMS * 4, 1e-12);

    /* each GPU's compute: the passes (the lookup's backward only scatters: sgd's bytes),
     * then the dense step of the MLP and of the tables; the all-reduces in between */
    workload_graph g;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    const device_spec *dev = f.c.device[0];
    emb_update scatter = EMB_UPDATE_SGD;
    double compute = pass_seconds(&g, PASS_FWD, PREC_FP16, dev, NULL) +
                     pass_seconds(&g, PASS_BWD, PREC_FP16, dev, &scatter) +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev) +
                     cost_optimizer_seconds(TABLE_ELEMS, 0, PREC_FP32, 1, dev) +
                     cost_iteration_overhead_seconds();
    fixture_run(&f);
    ck_assert(f.r.makespan > compute);
    /* the two all-reduces over one 100 GB/s link, no latency: a ring of two sends S/2 each
     * way in the reduce-scatter and S/2 in the all-gather, S in all */
    ck_close(f.r.makespan, compute + (MLP_PARAMS * 2 + TABLE_ELEMS * 4) / 100e9, 1e-6);
    workload_graph_free(&g);
    fixture_free(&f);
}
END_TEST

/* The non-table ops of one pass (every op but the lookups) on `dev`. */
static double mlp_seconds(const workload_graph *g, op_pass pass, precision_t prec,
                          const device_spec *dev)
{
    double t = 0;
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind != OP_EMBEDDING_BAG)
            t += cost_op_kernel_seconds(&g->ops[i], pass, prec, dev);
    return t;
}

/* Table-wise on two GPUs, both tables on GPU 0 (placement [0, 0]). GPU 0 looks them up for the
 * whole batch (2 x 256 samples); the all-to-alls of the micro-batch: the ids, GPU 1 -> GPU 0,
 * 256 samples x (2 ids + 1 length) x 8 B per table = 12,288 B; the pooled vectors, GPU 0 -> GPU
 * 1, 256 x 2 tables x dim 4 x 4 B (fp32) = 8,192 B; their gradients back, the transpose. On the
 * 100 GB/s link with no latency the pooled all-to-all takes 81.92 ns, on the critical path
 * (the interaction waits for it); the ids' one runs beside the bottom MLP and the gradients'
 * beside the bottom MLP's backward, both hidden. The iteration: GPU 0's compute + 81.92 ns +
 * the MLP all-reduce (149 x 2 B over the ring of two: 2.98 ns) + the MLP step. */
START_TEST(table_wise_alltoall_by_hand)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n"
         "  embedding: {sharding: table-wise, placement: [0, 0]}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    const exec_graph *hg = f.p.graph;
    /* ids, pooled, gradients, then the MLP all-reduce */
    ck_assert_int_eq(hg->n_colls, 4);
    const double *ids = hg->colls[0].matrix, *pooled = hg->colls[1].matrix,
                 *grads = hg->colls[2].matrix;
    ck_assert_ptr_nonnull(ids);
    ck_assert_double_eq(ids[1 * 2 + 0], 256.0 * 3 * 8 * 2);
    ck_assert_double_eq(ids[0 * 2 + 1], 0);
    ck_assert_double_eq(pooled[0 * 2 + 1], 256.0 * 2 * 4 * 4);
    ck_assert_double_eq(pooled[1 * 2 + 0], 0);
    ck_assert_double_eq(grads[1 * 2 + 0], 256.0 * 2 * 4 * 4);
    ck_assert_double_eq(grads[0 * 2 + 1], 0);
    ck_assert_double_eq(hg->colls[3].bytes, MLP_PARAMS * 2);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[0], 2);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[1], 0);
    ck_assert_double_eq(f.p.dlrm->lookup_s[1], 0);
    ck_assert_double_eq(f.p.dlrm->lookup_imbalance, 2.0); /* max / mean = x / (x / 2) */
    ck_assert_double_eq(f.p.dlrm->alltoall_bytes, 12288 + 2 * 8192);

    /* GPU 0's compute: the MLPs at the micro-batch, the tables' TBE at the whole batch */
    workload_graph g, all;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = f.c.device[0];
    double tbe = pass_seconds(&all, PASS_FWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_FWD, PREC_FP16, dev) +
                 pass_seconds(&all, PASS_BWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_BWD, PREC_FP16, dev);
    ck_close(f.p.dlrm->lookup_s[0], tbe, 1e-12);
    double compute = mlp_seconds(&g, PASS_FWD, PREC_FP16, dev) +
                     mlp_seconds(&g, PASS_BWD, PREC_FP16, dev) + tbe +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev) +
                     cost_iteration_overhead_seconds();
    fixture_run(&f);
    for (int k = 0; k < 2; k++) {
        uint32_t t = hg->coll_tasks[hg->colls[1].first_task + k];
        ck_close(f.r.end[t] - f.r.start[t], 8192 / 100e9, 1e-6);
    }
    ck_close(f.r.makespan, compute + 8192 / 100e9 + MLP_PARAMS * 2 / 100e9, 1e-9);
    workload_graph_free(&g);
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* The ops of one pass whose names start with `prefix` ("" every non-table op; "bottom_mlp."),
 * or, with `invert`, the non-table ops whose names do not. */
static double ops_seconds(const workload_graph *g, op_pass pass, precision_t prec,
                          const device_spec *dev, const char *prefix, int invert)
{
    double t = 0;
    for (int i = 0; i < g->n_ops; i++) {
        int match = !strncmp(g->ops[i].name, prefix, strlen(prefix));
        if (g->ops[i].kind != OP_EMBEDDING_BAG && match != invert)
            t += cost_op_kernel_seconds(&g->ops[i], pass, prec, dev);
    }
    return t;
}

/* bottom_mlp_gpu: 0 with both tables on GPU 1. GPU 0 runs the bottom MLP (4 -> 8 -> 4: 76
 * parameters) over both GPUs' 2 x 256 samples, GPU 1 the tables; the pooled all-to-all carries
 * the bottom output GPU 0 -> 1 (256 x 4 x 2 B fp16 = 2,048 B) and the tables' vectors GPU 1 ->
 * 0 (256 x 2 x 4 x 4 B = 8,192 B: 81.92 ns on the 100 GB/s link, the slower direction); the
 * gradients go back the same sizes. Only the top MLP's 73 parameters are all-reduced (146 B).
 * The iteration, by the graph's dependencies: the ids (GPU 0 -> 1, 12,288 B: 122.88 ns) then
 * GPU 1's lookup, beside GPU 0's bottom MLP; the pooled all-to-all; the interaction, top MLP
 * and loss forward and backward (both GPUs alike); the gradients' all-to-all; GPU 0's bottom
 * backward beside GPU 1's lookup backward; the all-reduce (1.46 ns); the optimizer steps. */
START_TEST(bottom_mlp_on_one_gpu_by_hand)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n"
         "  embedding: {sharding: table-wise, placement: [1, 1], bottom_mlp_gpu: 0}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    const exec_graph *hg = f.p.graph;
    ck_assert_int_eq(hg->n_colls, 4);
    const double *ids = hg->colls[0].matrix, *pooled = hg->colls[1].matrix,
                 *grads = hg->colls[2].matrix;
    ck_assert_double_eq(ids[0 * 2 + 1], 256.0 * 3 * 8 * 2);
    ck_assert_double_eq(pooled[0 * 2 + 1], 256.0 * 4 * 2);
    ck_assert_double_eq(pooled[1 * 2 + 0], 256.0 * 2 * 4 * 4);
    ck_assert_double_eq(grads[1 * 2 + 0], 256.0 * 4 * 2);
    ck_assert_double_eq(grads[0 * 2 + 1], 256.0 * 2 * 4 * 4);
    const double TOP = MLP_PARAMS - 76;
    ck_assert_double_eq(hg->colls[3].bytes, TOP * 2);
    ck_assert_int_eq(f.p.dlrm->bottom_mlp_gpu, 0);
    /* memory: GPU 0 holds every MLP and no table, GPU 1 the top MLP and both tables */
    ck_close(f.p.memory[0].weights, MLP_PARAMS * 2, 1e-12);
    ck_close(f.p.memory[1].weights, TOP * 2 + TABLE_ELEMS * 4, 1e-12);

    workload_graph g, all;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = f.c.device[0];
    double tbe_f = pass_seconds(&all, PASS_FWD, PREC_FP16, dev, NULL) -
                   mlp_seconds(&all, PASS_FWD, PREC_FP16, dev);
    double tbe_b = pass_seconds(&all, PASS_BWD, PREC_FP16, dev, NULL) -
                   mlp_seconds(&all, PASS_BWD, PREC_FP16, dev);
    double bottom_f = ops_seconds(&all, PASS_FWD, PREC_FP16, dev, "bottom_mlp.", 0);
    double bottom_b = ops_seconds(&all, PASS_BWD, PREC_FP16, dev, "bottom_mlp.", 0);
    double rest = ops_seconds(&g, PASS_FWD, PREC_FP16, dev, "bottom_mlp.", 1) +
                  ops_seconds(&g, PASS_BWD, PREC_FP16, dev, "bottom_mlp.", 1);
    double step = fmax(cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev),
                       cost_optimizer_seconds(TOP, 0, PREC_FP16, 1, dev));
    double want = fmax(bottom_f, 12288 / 100e9 + tbe_f) + 8192 / 100e9 + rest + 8192 / 100e9 +
                  fmax(bottom_b, tbe_b) + TOP * 2 / 100e9 + step +
                  cost_iteration_overhead_seconds();
    fixture_run(&f);
    ck_close(f.r.makespan, want, 1e-9);
    workload_graph_free(&g);
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* Row-wise on two GPUs: each GPU holds half the rows of both tables and looks up the ids of
 * the whole batch (2 x 256 samples) that fall in its half: 512 x 2 / 2 = 512 ids per table, half
 * the distinct rows, so half the rows read (the tiny tables sit in the L2: each reads its
 * distinct rows once), for all 512 bags (partial sums). The ids' all-to-all sends each other GPU
 * 256 x (2 / 2 ids + 1 length) x 8 B per table = 8,192 B; the partial sums, 512 x (4 + 4) x 4 B =
 * S = 16,384 B per GPU, are reduce-scattered (a ring of two sends S / 2: 81.92 ns on the 100 GB/s
 * link, exposed: the interaction waits for it); their gradients all-gathered back (the same,
 * beside the bottom MLP's backward: hidden). The iteration: the MLPs at the micro-batch, both
 * slices' TBE, 81.92 ns, the MLP all-reduce (2.98 ns), the step. */
START_TEST(row_wise_by_hand)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n  embedding: {sharding: row-wise}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    const exec_graph *hg = f.p.graph;
    /* ids, reduce-scatter, all-gather, the MLP all-reduce */
    ck_assert_int_eq(hg->n_colls, 4);
    ck_assert_double_eq(hg->colls[0].matrix[0 * 2 + 1], 256.0 * 2 * 8 * 2);
    ck_assert_double_eq(hg->colls[0].matrix[1 * 2 + 0], 256.0 * 2 * 8 * 2);
    ck_assert_int_eq(hg->colls[1].kind, COLL_REDUCE_SCATTER);
    ck_assert_double_eq(hg->colls[1].bytes, 512.0 * 8 * 4);
    ck_assert_int_eq(hg->colls[2].kind, COLL_ALLGATHER);
    ck_assert_double_eq(hg->colls[2].bytes, 512.0 * 8 * 4);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[0], 2);
    ck_assert_int_eq(f.p.dlrm->owner[0], -1);
    ck_close(f.p.dlrm->lookup_imbalance, 1.0, 1e-12);
    /* memory: half of each table's rows, fp32 */
    ck_assert_double_eq(f.p.memory[1].weights, MLP_PARAMS * 2 + TABLE_ELEMS / 2 * 4);

    workload_graph g, all;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = f.c.device[0];
    workload_emb half[2];
    int n = 0;
    for (int i = 0; i < all.n_ops; i++)
        if (all.ops[i].kind == OP_EMBEDDING_BAG) {
            workload_emb whole = all.ops[i].emb;
            half[n] = whole;
            half[n].lookups = whole.lookups / 2;
            half[n].unique = whole.unique / 2;
            half[n].row_shards = 2;
            /* the lookup's rows read from HBM: half the table's */
            ck_close(cost_embedding_rows_read(&half[n], dev->l2_bytes / 2),
                     cost_embedding_rows_read(&whole, dev->l2_bytes / 2) / 2, 1e-12);
            n++;
        }
    double tbe = cost_embedding_seconds(half, 2, PASS_FWD, dev) +
                 cost_embedding_seconds(half, 2, PASS_BWD, dev);
    ck_close(f.p.dlrm->lookup_s[0], tbe, 1e-12);
    double compute = mlp_seconds(&g, PASS_FWD, PREC_FP16, dev) +
                     mlp_seconds(&g, PASS_BWD, PREC_FP16, dev) + tbe +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev) +
                     cost_iteration_overhead_seconds();
    fixture_run(&f);
    uint32_t rs = hg->coll_tasks[hg->colls[1].first_task];
    ck_close(f.r.end[rs] - f.r.start[rs], 8192 / 100e9, 1e-6);
    ck_close(f.r.makespan, compute + 8192 / 100e9 + MLP_PARAMS * 2 / 100e9, 1e-9);
    workload_graph_free(&g);
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* Column-wise, 2 shards a table, placed round-robin: shards (table 0: 0, 1; table 1: 0, 1) on
 * GPUs 0, 1, 0, 1, each a table of dim 2 looked up for the whole batch. Each GPU gets the ids
 * of its two shards' tables (256 x (2 + 1) x 8 B x 2 = 12,288 B from the other) and sends its
 * pooled halves, 256 x (2 + 2) x 4 B = 4,096 B, to the other (40.96 ns, exposed); the
 * iteration: the MLPs, the TBE over the two shards, 40.96 ns, the all-reduce, the step. */
START_TEST(column_wise_by_hand)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n"
         "  embedding: {sharding: column-wise, shards: 2, placement: round-robin}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    const exec_graph *hg = f.p.graph;
    ck_assert_int_eq(hg->n_colls, 4); /* ids, pooled, grads, MLP all-reduce */
    for (int i = 0; i < 2; i++) {
        ck_assert_double_eq(hg->colls[0].matrix[i * 2 + 1 - i], 256.0 * 3 * 8 * 2);
        ck_assert_double_eq(hg->colls[1].matrix[i * 2 + 1 - i], 256.0 * 4 * 4);
    }
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[0], 2);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[1], 2);
    ck_assert_double_eq(f.p.memory[0].weights, MLP_PARAMS * 2 + TABLE_ELEMS / 2 * 4);

    workload_graph g, all;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = f.c.device[0];
    workload_emb cols[2];
    int n = 0;
    for (int i = 0; i < all.n_ops; i++)
        if (all.ops[i].kind == OP_EMBEDDING_BAG) {
            cols[n] = all.ops[i].emb;
            cols[n++].dim = 2;
        }
    double tbe = cost_embedding_seconds(cols, 2, PASS_FWD, dev) +
                 cost_embedding_seconds(cols, 2, PASS_BWD, dev);
    ck_close(f.p.dlrm->lookup_s[1], tbe, 1e-12);
    double compute = mlp_seconds(&g, PASS_FWD, PREC_FP16, dev) +
                     mlp_seconds(&g, PASS_BWD, PREC_FP16, dev) + tbe +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev) +
                     cost_iteration_overhead_seconds();
    fixture_run(&f);
    ck_close(f.r.makespan, compute + 4096 / 100e9 + MLP_PARAMS * 2 / 100e9, 1e-9);
    workload_graph_free(&g);
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* children: table 0 table-wise on GPU 1 (the list's entry for the data-parallel table 1 is not
 * used), table 1 data-parallel under the root. The all-to-alls carry table 0 only (ids GPU 0
 * -> 1: 256 x 3 x 8 B = 6,144 B; pooled GPU 1 -> 0: 256 x 4 x 4 B = 4,096 B); table 1's dense
 * gradient is all-reduced alone (10 x 4 x 4 B = 160 B) after the MLPs' (149 x 2 B). Memory:
 * GPU 0 holds table 1, GPU 1 both (fp32); table 1's dense gradient on both. */
START_TEST(children_mix_shardings)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n"
         "  embedding: {sharding: data-parallel, placement: [1, 0]}\n"
         "  children: {\"tables.0\": {sharding: table-wise}}\n",
         "tests/data/cluster/two_gpus.xml");
    const exec_graph *hg = f.p.graph;
    ck_assert_int_eq(hg->n_colls, 5); /* ids, pooled, grads, MLP and table all-reduces */
    ck_assert_double_eq(hg->colls[0].matrix[0 * 2 + 1], 256.0 * 3 * 8);
    ck_assert_double_eq(hg->colls[0].matrix[1 * 2 + 0], 0);
    ck_assert_double_eq(hg->colls[1].matrix[1 * 2 + 0], 256.0 * 4 * 4);
    ck_assert_double_eq(hg->colls[1].matrix[0 * 2 + 1], 0);
    ck_assert_double_eq(hg->colls[3].bytes, MLP_PARAMS * 2);
    ck_assert_double_eq(hg->colls[4].bytes, 10.0 * 4 * 4);
    ck_assert_int_eq(f.p.dlrm->owner[0], 1);
    ck_assert_int_eq(f.p.dlrm->owner[1], -1);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[0], 1);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[1], 2);
    ck_assert_double_eq(f.p.memory[0].weights, MLP_PARAMS * 2 + 40 * 4);
    ck_assert_double_eq(f.p.memory[1].weights, MLP_PARAMS * 2 + TABLE_ELEMS * 4);
    ck_assert_double_eq(f.p.memory[0].gradients, MLP_PARAMS * 2 + 40 * 4);
    fixture_free(&f);
}
END_TEST

/* Table-row-wise on two nodes of two GPUs (sim_load_nodes: 100 GB/s NVLink ports, 10 GB/s NICs,
 * no latency), placement [0, 2]: table 0 on node 0 (GPUs 0, 1), table 1 on node 1 (GPUs 2, 3),
 * each GPU of a node half of its node's table's rows, looked up for the whole batch (4 x 128
 * samples: 512 x 2 / 2 ids). Ids: each GPU sends each GPU of a table's node 128 x (2 / 2 + 1) x
 * 8 B = 2,048 B. Forward: per node a reduce-scatter of the partial sums, S = 128 x 4 x dim 4 x
 * 4 B = 8,192 B (a ring of two sends S / 2 over two 100 GB/s ports: 40.96 ns), then between the
 * nodes an all-to-all among the GPUs of the same local index, 128 x 4 x 4 B = 2,048 B each way
 * (10 GB/s NICs: 204.8 ns). Backward: the transposed all-to-all, then the all-gathers. */
START_TEST(table_row_wise_by_hand)
{
    sim_fixture f;
    const char *const zero[2] = {"0", "0"};
    sim_load_nodes(2, 2, zero, zero, &f.c);
    plan(&f,
         "batch: {global: 512, micro: 128}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 4}\n"
         "  embedding: {sharding: table-row-wise, placement: [0, 2]}\n",
         NULL);
    ps_error err;
    const exec_graph *hg = f.p.graph;
    /* ids; reduce-scatter node 0, node 1; all-to-all local index 0, 1; their gradients' two
     * all-to-alls; all-gather node 0, node 1; the MLP all-reduce */
    ck_assert_int_eq(hg->n_colls, 10);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            ck_assert_double_eq(hg->colls[0].matrix[i * 4 + j], i == j ? 0 : 2048);
    for (int n = 0; n < 2; n++) {
        const graph_collective *rs = &hg->colls[1 + n], *ag = &hg->colls[7 + n];
        ck_assert_int_eq(rs->kind, COLL_REDUCE_SCATTER);
        ck_assert_int_eq(ag->kind, COLL_ALLGATHER);
        ck_assert_double_eq(rs->bytes, 8192);
        ck_assert_double_eq(ag->bytes, 8192);
        ck_assert_int_eq(hg->group_ranks[hg->groups[rs->group].first + 1], 2 * n + 1);
        const graph_collective *x = &hg->colls[3 + n];
        ck_assert_int_eq(hg->groups[x->group].n, 2);
        ck_assert_int_eq(hg->group_ranks[hg->groups[x->group].first + 1], 2 + n);
        ck_assert_double_eq(x->matrix[0 * 2 + 1], 2048);
        ck_assert_double_eq(x->matrix[1 * 2 + 0], 2048);
    }
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[0], 1);
    ck_assert_int_eq(f.p.dlrm->tables_of_gpu[3], 1);
    /* memory: half a table each, fp32 */
    ck_assert_double_eq(f.p.memory[1].weights, MLP_PARAMS * 2 + 50 * 4 * 4);
    ck_assert_double_eq(f.p.memory[2].weights, MLP_PARAMS * 2 + 5 * 4 * 4);

    /* GPU 0's lookup: half of table 0's ids over half its rows, for all 512 bags */
    workload_graph all;
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    workload_emb half = all.ops[4].emb; /* bottom MLP: 2 GEMMs + 2 ReLUs, then table 0 */
    ck_assert_int_eq(all.ops[4].kind, OP_EMBEDDING_BAG);
    half.lookups /= 2;
    half.unique /= 2;
    half.row_shards = 2;
    ck_close(f.p.dlrm->lookup_s[0],
             cost_embedding_seconds(&half, 1, PASS_FWD, f.c.device[0]) +
                 cost_embedding_seconds(&half, 1, PASS_BWD, f.c.device[0]),
             1e-12);

    fixture_run(&f);
    for (int n = 0; n < 2; n++) {
        uint32_t rs = hg->coll_tasks[hg->colls[1 + n].first_task];
        uint32_t x = hg->coll_tasks[hg->colls[3 + n].first_task];
        ck_close(f.r.end[rs] - f.r.start[rs], 4096 / 100e9, 1e-6);
        ck_close(f.r.end[x] - f.r.start[x], 2048 / 10e9, 1e-6);
    }
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* Table-row-wise needs nodes numbered in rank order: GPUs 0, 2 on one node and 1, 3 on the other
 * are refused at the sharding's value (line 16, column 25), at compile time. */
START_TEST(table_row_wise_needs_rank_ordered_nodes)
{
    strategy s;
    ps_error err;
    ck_assert_msg(load("batch: {global: 512, micro: 128}\noptimizer: sgd\nstrategy:\n"
                       "  data: {degree: 4}\n"
                       "  embedding: {sharding: table-row-wise, placement: round-robin}\n",
                       &s, &err) == 0,
                  "%s", err.message);
    cluster c;
    const char *const zero[2] = {"0", "0"};
    sim_load_nodes(2, 2, zero, zero, &c);
    int keep[4], interleaved[4] = {0, 1, 0, 1};
    memcpy(keep, c.node_of_rank, sizeof keep);
    memcpy(c.node_of_rank, interleaved, sizeof keep);
    compiled_plan p;
    ck_assert_int_eq(compile_plan(&s, &c, NULL, &p, &err), PS_EINPUT);
    memcpy(c.node_of_rank, keep, sizeof keep);
    ck_assert_str_eq(err.field, "strategy.embedding.sharding");
    ck_assert_int_eq(err.line, 16);
    ck_assert_int_eq(err.column, 25);
    ck_assert_msg(strstr(err.message, "rank order"), "%s", err.message);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

/* The same table-wise plan with two micro-batches (global 1024): each micro-batch's three
 * all-to-alls in stream order (ids, pooled, gradients; 7 collectives with the all-reduce); the
 * next micro-batch's ids go while GPU 0 finishes the previous backward, so each micro-batch
 * exposes its pooled all-to-all only: 2 x (GPU 0's compute + 81.92 ns) + 2.98 ns + the step. */
START_TEST(table_wise_two_micro_batches)
{
    sim_fixture f;
    plan(&f,
         "batch: {global: 1024, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
         "strategy:\n  data: {degree: 2}\n"
         "  embedding: {sharding: table-wise, placement: [0, 0]}\n",
         "tests/data/cluster/two_gpus.xml");
    ps_error err;
    ck_assert_int_eq(f.p.micro_batches, 2);
    ck_assert_int_eq(f.p.graph->n_colls, 7);
    workload_graph g, all;
    ck_assert(workload_build_dlrm(&f.s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&f.s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = f.c.device[0];
    double tbe = pass_seconds(&all, PASS_FWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_FWD, PREC_FP16, dev) +
                 pass_seconds(&all, PASS_BWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_BWD, PREC_FP16, dev);
    double micro =
        mlp_seconds(&g, PASS_FWD, PREC_FP16, dev) + mlp_seconds(&g, PASS_BWD, PREC_FP16, dev) + tbe;
    ck_close(f.p.dlrm->lookup_s[0], 2 * tbe, 1e-12);
    fixture_run(&f);
    ck_close(f.r.makespan,
             2 * (micro + 8192 / 100e9) + MLP_PARAMS * 2 / 100e9 +
                 cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, 1, dev) +
                 cost_iteration_overhead_seconds(),
             1e-9);
    workload_graph_free(&g);
    workload_graph_free(&all);
    fixture_free(&f);
}
END_TEST

/* Five tables of dim 16 (cat interaction) on two GPUs; rows 1000, 10, 500, 20, 400 and
 * pooling 40, 1, 10, 1, 5 ids per sample. */
static const char *PLACED = "workload:\n"
                            "  family: dlrm\n"
                            "  dense_features: 4\n"
                            "  bottom_mlp: [8, 16]\n"
                            "  top_mlp: [8, 1]\n"
                            "  interaction: cat\n"
                            "  embedding_dim: 16\n"
                            "  tables: [1000, 10, 500, 20, 400]\n"
                            "  pooling: [40, 1, 10, 1, 5]\n"
                            "  ids: {distribution: uniform}\n"
                            "  embedding_precision: fp32\n"
                            "batch: {global: 65536, micro: 32768}\n"
                            "optimizer: sgd\n"
                            "strategy:\n  data: {degree: 2}\n";

/* The owners of the five tables of PLACED under `placement`. */
static void owners_under(const char *placement, int *owner, compiled_plan *p, cluster *c)
{
    char text[1024];
    snprintf(text, sizeof text, "%s  embedding: {sharding: table-wise, placement: %s}\n", PLACED,
             placement);
    strategy s;
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, &s, &err) == 0, "%s", err.message);
    ck_assert_msg(compile_plan(&s, c, NULL, p, &err) == 0, "%s", err.message);
    for (int t = 0; t < 5; t++)
        owner[t] = p->dlrm->owner[t];
    strategy_free(&s);
}

/* round-robin: table t on GPU t mod 2. memory-balanced (NVIDIA's DLRM rule): by bytes (rows x
 * 16 x 4 B), largest first, each in the open bucket holding fewer bytes so far, a bucket closing
 * at ceil(5 / 2) = 3 tables: 1000 -> A, 500 -> B, 400 -> B (500 < 1000), 20 -> B (900 < 1000;
 * B closes first: GPU 0), 10 -> A (GPU 1). greedy: the same rule by each table's lookup time
 * (forward + backward, alone); here the first table's time exceeds the four others' together
 * (asserted), so it alone is on GPU 0. */
START_TEST(placements_by_hand)
{
    cluster c;
    sim_load("tests/data/cluster/two_gpus.xml", &c);
    compiled_plan p;
    int o[5];
    owners_under("round-robin", o, &p, &c);
    ck_assert(o[0] == 0 && o[1] == 1 && o[2] == 0 && o[3] == 1 && o[4] == 0);
    compiled_plan_free(&p);
    owners_under("memory-balanced", o, &p, &c);
    ck_assert(o[0] == 1 && o[1] == 1 && o[2] == 0 && o[3] == 0 && o[4] == 0);
    ck_assert_int_eq(p.dlrm->tables_of_gpu[0], 3);
    ck_assert_int_eq(p.dlrm->tables_of_gpu[1], 2);
    compiled_plan_free(&p);
    owners_under("greedy", o, &p, &c);
    workload_graph all;
    ps_error err;
    ck_assert(workload_build_dlrm(&p.model, 65536, PREC_BF16, EMB_UPDATE_SGD, &all, &err) == 0);
    double w[5];
    int n = 0;
    for (int i = 0; i < all.n_ops; i++)
        if (all.ops[i].kind == OP_EMBEDDING_BAG) {
            w[n] = cost_embedding_seconds(&all.ops[i].emb, 1, PASS_FWD, c.device[0]) +
                   cost_embedding_seconds(&all.ops[i].emb, 1, PASS_BWD, c.device[0]);
            n++;
        }
    ck_assert_msg(w[0] > w[1] + w[2] + w[3] + w[4], "%g %g %g %g %g", w[0], w[1], w[2], w[3], w[4]);
    ck_assert(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 1 && o[4] == 1);
    /* imbalance: GPU 0's lookup time over the mean of the two */
    ck_close(p.dlrm->lookup_imbalance,
             p.dlrm->lookup_s[0] / ((p.dlrm->lookup_s[0] + p.dlrm->lookup_s[1]) / 2), 1e-12);
    workload_graph_free(&all);
    compiled_plan_free(&p);
    cluster_free(&c);
}
END_TEST

/* Two tables of 50,000,000 rows of dim 128 in fp32 with adagrad's fp32 accumulator: 50e6 x 128 x
 * (4 + 4) B = 51.2 GB each. Both on GPU 0 (placement [0, 0]): 102.4 GB of tables there, more
 * than an A100's 80 GiB: the plan does not fit (the one fit rule of run --strict-memory and of
 * sweep pruning: compiled_plan_tightest_rank's total over its capacity). One a GPU
 * (round-robin): 51.2 GB + the MLPs, activations and the 2 GiB reserve fit. */
static void big_tables_plan(const char *placement, compiled_plan *p, cluster *c)
{
    char text[1024];
    snprintf(text, sizeof text,
             "workload:\n  family: dlrm\n  dense_features: 4\n  bottom_mlp: [128]\n"
             "  top_mlp: [8, 1]\n  interaction: dot\n  embedding_dim: 128\n"
             "  tables: [50000000, 50000000]\n  pooling: 1\n  ids: {distribution: uniform}\n"
             "  embedding_precision: fp32\nbatch: {global: 512, micro: 256}\n"
             "optimizer: adagrad\nstrategy:\n  data: {degree: 2}\n"
             "  embedding: {sharding: table-wise, placement: %s}\n",
             placement);
    strategy s;
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, &s, &err) == 0, "%s", err.message);
    ck_assert_msg(compile_plan(&s, c, NULL, p, &err) == 0, "%s", err.message);
    strategy_free(&s);
}

START_TEST(tables_beyond_memory_do_not_fit)
{
    cluster c;
    sim_load("tests/data/cluster/two_gpus.xml", &c);
    const double table = 50e6 * 128;
    compiled_plan p;
    big_tables_plan("[0, 0]", &p, &c);
    ck_assert_int_eq(compiled_plan_tightest_rank(&p), 0);
    /* GPU 0: both tables' weights and accumulators; GPU 1 none */
    ck_assert(p.memory[0].weights > 2 * table * 4 && p.memory[0].weights < 2 * table * 4 + 1e6);
    ck_close(p.memory[0].optimizer - p.memory[1].optimizer, 2 * table * 4, 1e-12);
    ck_assert(p.memory[1].weights < 1e6);
    ck_assert(p.memory[0].total > p.memory_capacity_of_rank[0]);
    compiled_plan_free(&p);
    big_tables_plan("round-robin", &p, &c);
    int m = compiled_plan_tightest_rank(&p);
    ck_assert(p.memory[m].weights > table * 4 && p.memory[m].weights < table * 4 + 1e6);
    ck_assert(p.memory[m].total < p.memory_capacity_of_rank[m]);
    compiled_plan_free(&p);
    cluster_free(&c);
}
END_TEST

/* strategy_load fails at (line, column) with `field` and `msg` in the message. */
static void expect_refused(const char *rest, int line, int column, const char *field,
                           const char *msg)
{
    strategy s;
    ps_error err;
    ck_assert_int_eq(load(rest, &s, &err), PS_EINPUT);
    ck_assert_msg(err.line == line && err.column == column, "%s: %d:%d, expected %d:%d (%s)", field,
                  err.line, err.column, line, column, err.message);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, msg), "%s", err.message);
}

START_TEST(refusals_are_located)
{
    const char *head = "batch: {global: 512, micro: 256}\noptimizer: sgd\nstrategy:\n";
    char rest[512];
    /* MODEL is 11 lines; head's `strategy:` is line 14 */
    snprintf(rest, sizeof rest, "%s  data: {degree: 2}\n  embedding: {sharding: table-row-wise}\n",
             head);
    expect_refused(rest, 16, 14, "strategy.embedding.placement",
                   "table-row-wise sharding need a placement");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: column-wise, placement: greedy}\n",
             head);
    expect_refused(rest, 16, 25, "strategy.embedding.shards", "needs `shards`");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: column-wise, placement: greedy, "
             "shards: 3}\n",
             head);
    expect_refused(rest, 16, 65, "strategy.embedding.shards", "dividing its dim 4");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise, shards: 2}\n", head);
    expect_refused(rest, 16, 43, "strategy.embedding.shards", "apply to column-wise");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise, placement: greedy}\n", head);
    expect_refused(rest, 16, 46, "strategy.embedding.placement", "applies to table-wise");
    /* children: per-table sharding */
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.2\": {sharding: table-wise}}\n",
             head);
    expect_refused(rest, 17, 14, "strategy.children.tables.2", "0 <= A <= B < 2");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.1-0\": {sharding: table-wise}}\n",
             head);
    expect_refused(rest, 17, 14, "strategy.children.tables.1-0", "0 <= A <= B < 2");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"rows.0\": {sharding: table-wise}}\n",
             head);
    expect_refused(rest, 17, 14, "strategy.children.rows.0", "tables.N or tables.A-B");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.0-1\": {sharding: table-wise}, \"tables.1\": {sharding: "
             "row-wise}}\n",
             head);
    expect_refused(rest, 17, 52, "strategy.children.tables.1", "already has its sharding");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.1\": {sharding: column-wise, shards: 8}}\n",
             head);
    expect_refused(rest, 17, 58, "strategy.children.tables.1.shards", "dividing its dim 4");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.1\": {sharding: table-wise}}\n",
             head);
    expect_refused(rest, 16, 14, "strategy.embedding.placement", "need a placement");
    snprintf(rest, sizeof rest, "%s  children: {\"tables.1\": {sharding: table-wise}}\n", head);
    expect_refused(rest, 15, 13, "strategy.children", "needs strategy.embedding");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: row-wise}\n"
             "  children: {\"tables.1\": {sharding: table-wise, recompute: full}}\n",
             head);
    expect_refused(rest, 17, 49, "strategy.children.tables.1.recompute", "unknown key");
    snprintf(rest, sizeof rest, "%s  data: {degree: 2}\n  embedding: {sharding: table-wise}\n",
             head);
    expect_refused(rest, 16, 14, "strategy.embedding.placement", "need a placement");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: data-parallel, placement: greedy}\n",
             head);
    expect_refused(rest, 16, 51, "strategy.embedding.placement", "applies to table-wise");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: table-wise, placement: [0]}\n", head);
    expect_refused(rest, 16, 48, "strategy.embedding.placement", "the model has 2 tables");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: table-wise, placement: [1, 2]}\n",
             head);
    expect_refused(rest, 16, 52, "strategy.embedding.placement[1]", "GPU 2 of table 1");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: table-wise, placement: first}\n",
             head);
    expect_refused(rest, 16, 48, "strategy.embedding.placement", "");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: table-wise, placement: greedy, "
             "bottom_mlp_gpu: 2}\n",
             head);
    expect_refused(rest, 16, 72, "strategy.embedding.bottom_mlp_gpu", "GPU 2 is out of range");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: data-parallel, bottom_mlp_gpu: 0}\n",
             head);
    expect_refused(rest, 16, 56, "strategy.embedding.bottom_mlp_gpu", "needs sharded tables");
    snprintf(rest, sizeof rest, "%s  data: {degree: 2}\n", head);
    expect_refused(rest, 15, 18, "strategy.embedding", "needs strategy.embedding");
    snprintf(rest, sizeof rest, "%s  tensor: {degree: 2}\n", head);
    expect_refused(rest, 15, 20, "strategy.tensor.degree", "not modelled for dlrm");
    snprintf(rest, sizeof rest, "%s  recompute: full\n", head);
    expect_refused(rest, 15, 14, "strategy.recompute", "not modelled for dlrm");
    snprintf(rest, sizeof rest, "%s  data: {degree: 1, bucket_mb: 10}\n", head);
    expect_refused(rest, 15, 32, "strategy.data.bucket_mb", "not modelled for dlrm");
    snprintf(rest, sizeof rest, "%s  pipeline: {schedule: gpipe}\n", head);
    expect_refused(rest, 15, 24, "strategy.pipeline.schedule", "not modelled for dlrm");
    expect_refused("batch: {global: 512, micro: 256}\noptimizer: none\n", 13, 12, "optimizer",
                   "optimizer none");
}
END_TEST

START_TEST(adagrad_and_embedding_only_for_dlrm)
{
    strategy s;
    ps_error err;
    ck_assert_int_eq(sim_strategy_text("workload: gpt2-large\nbatch: {global: 8, micro: 8}\n"
                                       "optimizer: adagrad\n",
                                       &s, &err),
                     PS_EINPUT);
    ck_assert_str_eq(err.field, "optimizer");
    ck_assert_int_eq(err.line, 3);
    ck_assert_int_eq(err.column, 12);
    ck_assert_int_eq(sim_strategy_text("workload: gpt2-large\nbatch: {global: 8, micro: 8}\n"
                                       "strategy:\n  embedding: {sharding: data-parallel}\n",
                                       &s, &err),
                     PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.embedding");
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 14);
}
END_TEST

/* embedding.update: sparse (branch dlrme2e): on one GPU the iteration grows by exactly the two
 * micro-batches' TBE backward difference (the sparse update's streaming bytes, with the fp16 loss
 * scaler's unscale, and no id sort: sim/cost/cost_embedding.c, tested by hand in test_dlrm.c);
 * refused with adagrad and with data-parallel tables, at the value. */
START_TEST(sparse_update_plumbing)
{
    const char *head = "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
                       "strategy:\n  data: {degree: 1}\n";
    char text[512];
    double makespan[2];
    cluster c;
    sim_load("tests/data/compile/one-h100.xml", &c);
    for (int sparse = 0; sparse < 2; sparse++) {
        strategy s;
        ps_error err;
        snprintf(text, sizeof text,
                 "%s  embedding: {sharding: table-wise, placement: greedy, update: %s}\n", head,
                 sparse ? "sparse" : "fused");
        ck_assert_msg(load(text, &s, &err) == 0, "%s", err.message);
        ck_assert_int_eq(s.embedding_sparse_update, sparse);
        compiled_plan p;
        ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
        htae_options o = sim_bare_options();
        htae_result r;
        ck_assert_msg(htae_run(p.graph, &c, &o, &r, &err) == 0, "%s", err.message);
        makespan[sparse] = r.makespan;
        htae_result_free(&r);
        compiled_plan_free(&p);
        strategy_free(&s);
    }
    workload_model m;
    ps_error err;
    strategy s0;
    ck_assert(load(head, &s0, &err) == 0);
    m = s0.model;
    workload_graph g;
    ck_assert(workload_build_dlrm(&m, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    workload_emb embs[2];
    int n = 0;
    for (int i = 0; i < g.n_ops; i++)
        if (g.ops[i].kind == OP_EMBEDDING_BAG)
            embs[n++] = g.ops[i].emb;
    ck_assert_int_eq(n, 2);
    double fused = cost_embedding_seconds(embs, 2, PASS_BWD, c.device[0]);
    for (int t = 0; t < 2; t++)
        embs[t].sparse_update = embs[t].amp_unscale = 1;
    double sparse = cost_embedding_seconds(embs, 2, PASS_BWD, c.device[0]);
    ck_assert(sparse > fused);
    ck_close(makespan[1] - makespan[0], 2 * (sparse - fused), 1e-9);
    workload_graph_free(&g);
    strategy_free(&s0);
    cluster_free(&c);

    const char *ada = "batch: {global: 512, micro: 256}\noptimizer: adagrad\nstrategy:\n"
                      "  data: {degree: 2}\n";
    snprintf(text, sizeof text,
             "%s  embedding: {sharding: table-wise, placement: greedy, update: sparse}\n", ada);
    expect_refused(text, 16, 64, "strategy.embedding.update", "sgd only");
    const char *sgd = "batch: {global: 512, micro: 256}\noptimizer: sgd\nstrategy:\n"
                      "  data: {degree: 2}\n";
    snprintf(text, sizeof text, "%s  embedding: {sharding: data-parallel, update: sparse}\n", sgd);
    expect_refused(text, 16, 48, "strategy.embedding.update", "dense gradient");
}
END_TEST

START_TEST(devices_without_l2_are_refused)
{
    strategy s;
    ps_error err;
    ck_assert(load("batch: {global: 256, micro: 256}\noptimizer: sgd\n", &s, &err) == 0);
    cluster c;
    sim_load("tests/data/compile/one-h100.xml", &c);
    device_spec no_l2 = *c.device[0];
    no_l2.l2_bytes = 0;
    const device_spec *keep = c.device[0];
    c.device[0] = &no_l2;
    compiled_plan p;
    ck_assert_int_eq(compile_plan(&s, &c, NULL, &p, &err), PS_EINPUT);
    c.device[0] = keep;
    ck_assert_str_eq(err.field, "workload");
    ck_assert_int_eq(err.line, 2); /* the workload mapping's first key */
    ck_assert_int_eq(err.column, 3);
    ck_assert_msg(strstr(err.message, "l2_mib"), "%s", err.message);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {one_gpu_is_the_sum_of_its_ops,
                                  two_gpus_all_reduce_by_hand,
                                  table_wise_alltoall_by_hand,
                                  table_wise_two_micro_batches,
                                  placements_by_hand,
                                  row_wise_by_hand,
                                  column_wise_by_hand,
                                  table_row_wise_by_hand,
                                  table_row_wise_needs_rank_ordered_nodes,
                                  children_mix_shardings,
                                  bottom_mlp_on_one_gpu_by_hand,
                                  tables_beyond_memory_do_not_fit,
                                  refusals_are_located,
                                  adagrad_and_embedding_only_for_dlrm,
                                  devices_without_l2_are_refused,
                                  sparse_update_plumbing,
                                  NULL};
    return suite_run(suite_of("dlrm_plan", "core", 60, tests));
}
