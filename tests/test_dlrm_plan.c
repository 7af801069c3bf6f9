/* test_dlrm_plan.c: plans of recommendation models (strategies/dlrm_plan.c): one GPU, where the
 * iteration is the sum of the op costs computed here; MLPs data-parallel over two GPUs with
 * data-parallel tables, whose gradient all-reduces have the sizes counted here by hand; the
 * located refusals of what is not modelled yet. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/cost.h"
#include "../strategies/compile.h"
#include "sim_util.h"

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
    char path[64], text[2048];
    snprintf(path, sizeof path, "/tmp/protosim_test_dlrm_plan_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    snprintf(text, sizeof text, "%s%s", MODEL, rest);
    fputs(text, f);
    fclose(f);
    ps_error_clear(err);
    int rc = strategy_load(path, sim_data_dir(), s, err);
    unlink(path);
    return rc;
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
    strategy s;
    ps_error err;
    ck_assert_msg(load("batch: {global: 512, micro: 256}\nprecision: bf16\noptimizer: adagrad\n"
                       "strategy:\n  data: {degree: 1}\n",
                       &s, &err) == 0,
                  "%s", err.message);
    cluster c;
    sim_load("tests/data/compile/one-h100.xml", &c);
    compiled_plan p;
    ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
    ck_assert_int_eq(p.gpus, 1);
    ck_assert_int_eq(p.micro_batches, 2);
    ck_assert_double_eq(p.params_total, MLP_PARAMS + TABLE_ELEMS);
    ck_assert_int_eq(p.graph->n_colls, 0);

    /* the same op graph, with the tables' adagrad fused into the lookup's backward */
    workload_graph g;
    ck_assert(workload_build_dlrm(&s.model, 256, PREC_BF16, EMB_UPDATE_ADAGRAD, &g, &err) == 0);
    const device_spec *dev = c.device[0];
    double micro = pass_seconds(&g, PASS_FWD, PREC_BF16, dev, NULL) +
                   pass_seconds(&g, PASS_BWD, PREC_BF16, dev, NULL);
    /* adagrad's MLP step: the bytes of sgd with momentum (one fp32 word read and written) */
    double want = 2 * micro + cost_optimizer_seconds(MLP_PARAMS, 0, PREC_BF16, dev) +
                  cost_iteration_overhead_seconds();
    htae_options o = sim_bare_options();
    htae_result r;
    ck_assert_msg(htae_run(p.graph, &c, &o, &r, &err) == 0, "%s", err.message);
    ck_close(r.makespan, want, 1e-9);

    /* memory: bf16 MLP (2 B) + fp32 tables (4 B); fp32 gradients of the MLP; master + the
     * accumulator for the MLP (8 B), the tables' fp32 accumulator (4 B) */
    ck_close(p.memory[0].weights, MLP_PARAMS * 2 + TABLE_ELEMS * 4, 1e-12);
    ck_close(p.memory[0].gradients, MLP_PARAMS * 4, 1e-12);
    ck_close(p.memory[0].optimizer, MLP_PARAMS * 8 + TABLE_ELEMS * 4, 1e-12);
    htae_result_free(&r);
    workload_graph_free(&g);
    compiled_plan_free(&p);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

START_TEST(two_gpus_all_reduce_by_hand)
{
    strategy s;
    ps_error err;
    ck_assert_msg(load("batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
                       "strategy:\n  data: {degree: 2}\n  embedding: {sharding: data-parallel}\n",
                       &s, &err) == 0,
                  "%s", err.message);
    cluster c;
    sim_load("tests/data/cluster/two_gpus.xml", &c);
    compiled_plan p;
    ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
    ck_assert_int_eq(p.dp, 2);
    ck_assert_int_eq(p.micro_batches, 1);
    /* the MLP gradients in fp16 (2 B), then the tables' dense fp32 gradients (4 B) */
    ck_assert_int_eq(p.graph->n_colls, 2);
    ck_assert_int_eq(p.graph->colls[0].kind, COLL_ALLREDUCE);
    ck_assert_double_eq(p.graph->colls[0].bytes, MLP_PARAMS * 2);
    ck_assert_int_eq(p.graph->colls[1].kind, COLL_ALLREDUCE);
    ck_assert_double_eq(p.graph->colls[1].bytes, TABLE_ELEMS * 4);
    /* a data-parallel table's gradient is dense on every GPU */
    ck_close(p.memory[1].gradients, MLP_PARAMS * 2 + TABLE_ELEMS * 4, 1e-12);

    /* each GPU's compute: the passes (the lookup's backward only scatters: sgd's bytes),
     * then the dense step of the MLP and of the tables; the all-reduces in between */
    workload_graph g;
    ck_assert(workload_build_dlrm(&s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    const device_spec *dev = c.device[0];
    emb_update scatter = EMB_UPDATE_SGD;
    double compute = pass_seconds(&g, PASS_FWD, PREC_FP16, dev, NULL) +
                     pass_seconds(&g, PASS_BWD, PREC_FP16, dev, &scatter) +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, dev) +
                     cost_optimizer_seconds(TABLE_ELEMS, 0, PREC_FP32, dev) +
                     cost_iteration_overhead_seconds();
    htae_options o = sim_bare_options();
    htae_result r;
    ck_assert_msg(htae_run(p.graph, &c, &o, &r, &err) == 0, "%s", err.message);
    ck_assert(r.makespan > compute);
    /* the two all-reduces over one 100 GB/s link, no latency: a ring of two sends S/2 each
     * way in the reduce-scatter and S/2 in the all-gather, S in all */
    ck_close(r.makespan, compute + (MLP_PARAMS * 2 + TABLE_ELEMS * 4) / 100e9, 1e-6);
    htae_result_free(&r);
    workload_graph_free(&g);
    compiled_plan_free(&p);
    cluster_free(&c);
    strategy_free(&s);
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
    strategy s;
    ps_error err;
    ck_assert_msg(load("batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
                       "strategy:\n  data: {degree: 2}\n"
                       "  embedding: {sharding: table-wise, placement: [0, 0]}\n",
                       &s, &err) == 0,
                  "%s", err.message);
    cluster c;
    sim_load("tests/data/cluster/two_gpus.xml", &c);
    compiled_plan p;
    ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
    const htae_graph *hg = p.graph;
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
    ck_assert_int_eq(p.dlrm->tables_of_gpu[0], 2);
    ck_assert_int_eq(p.dlrm->tables_of_gpu[1], 0);
    ck_assert_double_eq(p.dlrm->lookup_s[1], 0);
    ck_assert_double_eq(p.dlrm->lookup_imbalance, 2.0); /* max / mean = x / (x / 2) */
    ck_assert_double_eq(p.dlrm->alltoall_bytes, 12288 + 2 * 8192);

    /* GPU 0's compute: the MLPs at the micro-batch, the tables' TBE at the whole batch */
    workload_graph g, all;
    ck_assert(workload_build_dlrm(&s.model, 256, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    ck_assert(workload_build_dlrm(&s.model, 512, PREC_FP16, EMB_UPDATE_SGD, &all, &err) == 0);
    const device_spec *dev = c.device[0];
    double tbe = pass_seconds(&all, PASS_FWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_FWD, PREC_FP16, dev) +
                 pass_seconds(&all, PASS_BWD, PREC_FP16, dev, NULL) -
                 mlp_seconds(&all, PASS_BWD, PREC_FP16, dev);
    ck_close(p.dlrm->lookup_s[0], tbe, 1e-12);
    double compute = mlp_seconds(&g, PASS_FWD, PREC_FP16, dev) +
                     mlp_seconds(&g, PASS_BWD, PREC_FP16, dev) + tbe +
                     cost_optimizer_seconds(MLP_PARAMS, 0, PREC_FP16, dev) +
                     cost_iteration_overhead_seconds();
    htae_options o = sim_bare_options();
    htae_result r;
    ck_assert_msg(htae_run(p.graph, &c, &o, &r, &err) == 0, "%s", err.message);
    for (int k = 0; k < 2; k++) {
        uint32_t t = hg->coll_tasks[hg->colls[1].first_task + k];
        ck_close(r.end[t] - r.start[t], 8192 / 100e9, 1e-6);
    }
    ck_close(r.makespan, compute + 8192 / 100e9 + MLP_PARAMS * 2 / 100e9, 1e-9);
    htae_result_free(&r);
    workload_graph_free(&g);
    workload_graph_free(&all);
    compiled_plan_free(&p);
    cluster_free(&c);
    strategy_free(&s);
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
    char path[64], text[1024];
    snprintf(path, sizeof path, "/tmp/protosim_test_dlrm_plan_XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    snprintf(text, sizeof text, "%s  embedding: {sharding: table-wise, placement: %s}\n", PLACED,
             placement);
    fputs(text, f);
    fclose(f);
    strategy s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(strategy_load(path, sim_data_dir(), &s, &err) == 0, "%s", err.message);
    unlink(path);
    ck_assert_msg(compile_plan(&s, c, NULL, p, &err) == 0, "%s", err.message);
    for (int t = 0; t < 5; t++)
        owner[t] = p->dlrm->owner[t];
    strategy_free(&s);
}

/* round-robin: table t on GPU t mod 2. memory-balanced: by bytes (rows x 16 x 4 B), largest
 * first, each on the GPU holding fewer bytes so far: 1000 -> 0, 500 -> 1, 400 -> 1 (500 < 1000),
 * 20 -> 1 (900 < 1000), 10 -> 1 (920 < 1000). greedy: the same rule by each table's lookup time
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
    ck_assert(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 1 && o[4] == 1);
    ck_assert_int_eq(p.dlrm->tables_of_gpu[0], 1);
    ck_assert_int_eq(p.dlrm->tables_of_gpu[1], 4);
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
    snprintf(rest, sizeof rest, "%s  data: {degree: 2}\n  embedding: {sharding: column-wise}\n",
             head);
    expect_refused(rest, 16, 25, "strategy.embedding.sharding", "not modelled yet");
    snprintf(rest, sizeof rest, "%s  data: {degree: 2}\n  embedding: {sharding: table-wise}\n",
             head);
    expect_refused(rest, 16, 14, "strategy.embedding.placement", "needs a placement");
    snprintf(rest, sizeof rest,
             "%s  data: {degree: 2}\n  embedding: {sharding: data-parallel, placement: greedy}\n",
             head);
    expect_refused(rest, 16, 51, "strategy.embedding.placement", "applies to sharded tables");
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
    snprintf(rest, sizeof rest, "%s  children: {\"tables.0\": {recompute: full}}\n", head);
    expect_refused(rest, 15, 13, "strategy.children", "not modelled yet");
    expect_refused("batch: {global: 512, micro: 256}\noptimizer: none\n", 13, 12, "optimizer",
                   "optimizer none");
}
END_TEST

START_TEST(adagrad_and_embedding_only_for_dlrm)
{
    strategy s;
    ps_error err;
    char path[64];
    snprintf(path, sizeof path, "/tmp/protosim_test_dlrm_plan_XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("workload: gpt2-large\nbatch: {global: 8, micro: 8}\noptimizer: adagrad\n", f);
    fclose(f);
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_load(path, sim_data_dir(), &s, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "optimizer");
    ck_assert_int_eq(err.line, 3);
    ck_assert_int_eq(err.column, 12);
    f = fopen(path, "w");
    fputs("workload: gpt2-large\nbatch: {global: 8, micro: 8}\n"
          "strategy:\n  embedding: {sharding: data-parallel}\n",
          f);
    fclose(f);
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_load(path, sim_data_dir(), &s, &err), PS_EINPUT);
    unlink(path);
    ck_assert_str_eq(err.field, "strategy.embedding");
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 14);
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
    Suite *s = suite_create("dlrm_plan");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_gpu_is_the_sum_of_its_ops);
    tcase_add_test(tc, two_gpus_all_reduce_by_hand);
    tcase_add_test(tc, table_wise_alltoall_by_hand);
    tcase_add_test(tc, placements_by_hand);
    tcase_add_test(tc, refusals_are_located);
    tcase_add_test(tc, adagrad_and_embedding_only_for_dlrm);
    tcase_add_test(tc, devices_without_l2_are_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
