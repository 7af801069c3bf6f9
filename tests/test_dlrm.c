/* test_dlrm.c: recommendation models (`family: dlrm`): the bundled models, located errors, the
 * id laws (distinct rows, hot share), the lookup cost by hand and the op graph's shapes. */
#include <check.h>

#include "model_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../strategies/strategy.h"
#include "../workloads/workload.h"
#include "suite_util.h"

/* A small valid model; tests replace one line of it. */
static const char *BASE = "family: dlrm\n"
                          "dense_features: 13\n"
                          "bottom_mlp: [64, 16]\n"
                          "top_mlp: [32, 1]\n"
                          "interaction: dot\n"
                          "embedding_dim: 16\n"
                          "tables: [1000, 50]\n"
                          "pooling: 1\n"
                          "ids: {distribution: uniform}\n"
                          "embedding_precision: fp32\n";

/* BASE with the line starting with `key` replaced by `line` (or appended when key is NULL). */
static int load_variant(const char *key, const char *line, workload_model *m, ps_error *err)
{
    char text[2048] = "";
    const char *p = BASE;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (key && strncmp(p, key, strlen(key)) == 0) {
            if (line)
                strcat(strcat(text, line), "\n");
        } else {
            strncat(text, p, (size_t)(nl - p + 1));
        }
        p = nl + 1;
    }
    if (!key)
        strcat(strcat(text, line), "\n");
    ps_error_clear(err);
    return model_load_text(text, m, err);
}

static void expect_error(const char *key, const char *line, int lineno, const char *field,
                         const char *msg)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(load_variant(key, line, &m, &err), PS_EINPUT);
    ck_assert_msg(err.line == lineno, "%s: line %d, expected %d (%s)", field, err.line, lineno,
                  err.message);
    ck_assert_int_ge(err.column, 1);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, msg), "'%s' lacks '%s'", err.message, msg);
}

START_TEST(bundled_models_load)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(workload_model_load("dlrm-criteo-large", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(m.family, FAMILY_DLRM);
    ck_assert_str_eq(m.name, "dlrm-criteo-large");
    ck_assert_int_eq(m.dlrm.n_tables, 26);
    ck_assert_int_eq(m.dlrm.rows[0], 45833188);
    ck_assert_int_eq(m.dlrm.rows[25], 36);
    double rows = 0;
    for (int t = 0; t < 26; t++)
        rows += m.dlrm.rows[t];
    ck_assert_double_eq(rows, 177944291.0); /* dlrm_models.md's total for T3 */
    ck_assert_int_eq(m.dlrm.interaction, INTERACTION_DOT);
    ck_assert_int_eq(m.dlrm.n_bottom, 3);
    ck_assert_int_eq(m.dlrm.top_mlp[4], 1);

    ck_assert_int_eq(workload_model_load("dcnv2-mlperf", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(m.dlrm.interaction, INTERACTION_DCN);
    ck_assert_int_eq(m.dlrm.dcn_layers, 3);
    ck_assert_int_eq(m.dlrm.dcn_rank, 512);
    double ids = 0;
    for (int t = 0; t < 26; t++)
        ids += m.dlrm.pooling[t];
    ck_assert_double_eq(ids, 214.0); /* multi-hot ids per sample */

    ck_assert_int_eq(workload_model_load("dlrm-criteo-small", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(m.dlrm.rows[0], 7912889);
    ck_assert_int_eq(workload_model_load("dlrm-mlperf", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(m.dlrm.rows[0], 39884406);
    ck_assert_int_eq(m.dlrm.ids, IDS_ZIPF);
    ck_assert_double_eq(m.dlrm.alpha, 1.05);
    ck_assert_int_eq(m.dlrm.embedding_precision, PREC_FP32);
}
END_TEST

START_TEST(lists_and_laws)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(
        load_variant("embedding_dim", "embedding_dim: [16, 8]\ninteraction2: x", &m, &err),
        PS_EINPUT); /* unknown key */
    ck_assert_str_eq(err.field, "interaction2");
    ck_assert_int_eq(load_variant("interaction", "interaction: cat", &m, &err), 0);
    ck_assert_int_eq(load_variant("pooling", "pooling: [2.5, 1]", &m, &err), 0);
    ck_assert_double_eq(m.dlrm.pooling[0], 2.5);
    ck_assert_int_eq(load_variant("ids", "ids: {unique_ratio: 0.25}", &m, &err), 0);
    ck_assert_int_eq(m.dlrm.ids, IDS_UNIQUE_RATIO);
    ck_assert_double_eq(m.dlrm.unique_ratio, 0.25);
    ck_assert_int_eq(load_variant("ids", "ids: {distribution: zipf, alpha: 1.2}", &m, &err), 0);
    ck_assert_int_eq(m.dlrm.ids, IDS_ZIPF);
    ck_assert_double_eq(m.dlrm.alpha, 1.2);
}
END_TEST

START_TEST(bad_values_are_located)
{
    expect_error("tables", "tables: [1000, 0]", 7, "tables[1]", "");
    expect_error("tables", "tables: 1000", 7, "tables", "a list");
    expect_error("top_mlp", "top_mlp: [32, 2]", 4, "top_mlp", "must be 1");
    expect_error("embedding_dim", "embedding_dim: 8", 6, "embedding_dim", "dot interaction");
    expect_error("embedding_dim", "embedding_dim: [16, 16, 16]", 6, "embedding_dim",
                 "one entry per table (2)");
    expect_error("pooling", "pooling: [1, -1]", 8, "pooling[1]", "");
    expect_error("ids", "ids: {distribution: zipf}", 9, "ids.alpha", "needs alpha");
    expect_error("ids", "ids: {distribution: uniform, alpha: 1}", 9, "ids.alpha", "zipf");
    expect_error("ids", "ids: {distribution: gauss}", 9, "ids.distribution", "");
    expect_error("ids", "ids: {unique_ratio: 1.5}", 9, "ids.unique_ratio", "(0, 1]");
    expect_error("ids", "ids: {unique_ratio: 0.5, distribution: zipf}", 9, "ids.unique_ratio",
                 "not both");
    expect_error("embedding_precision", "embedding_precision: fp8", 10, "embedding_precision",
                 "not modelled");
    expect_error(NULL, "dcn_layers: 3", 11, "dcn_layers", "interaction: dcn");
    expect_error("interaction", "interaction: dcn", 5, "dcn_layers", "needs dcn_layers");
    expect_error("interaction", "interaction: fm", 5, "interaction", "");
    expect_error("pooling", NULL, 1, "pooling", "missing required key 'pooling'");
    expect_error(NULL, "layers: 3", 11, "layers", "");
}
END_TEST

START_TEST(transformer_check_refuses_dlrm)
{
    /* dlrm plans are strategies/compile/dlrm_plan.c's (tests/test_dlrm_plan.c); the transformer
     * path's own check refuses a dlrm built in code */
    workload_model m;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_model_load("dlrm-criteo-small", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(workload_model_check(&m, 8, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "workload.family");
}
END_TEST

START_TEST(distinct_rows_by_hand)
{
    /* uniform: R (1 - (1 - 1/R)^N) */
    double r = 1000, n = 1000;
    ck_assert_double_eq_tol(workload_dlrm_unique_rows(IDS_UNIFORM, 0, 0, r, n),
                            r * (1 - pow(1 - 1 / r, n)), 1e-9);
    /* zipf on 5 rows, alpha 1: p_k = (1/k) / H_5, H_5 = 137/60; sum of 1 - (1 - p_k)^N */
    double h5 = 137.0 / 60.0, u = 0;
    for (int k = 1; k <= 5; k++)
        u += 1 - pow(1 - (1.0 / k) / h5, 3);
    ck_assert_double_eq_tol(workload_dlrm_unique_rows(IDS_ZIPF, 1.0, 0, 5, 3), u, 1e-12);
    /* a large table: the integral tail against the full sum (within 0.1%) */
    r = 300000, n = 50000;
    double a = 1.05, h = 0, full = 0;
    for (int k = 1; k <= r; k++)
        h += pow(k, -a);
    for (int k = 1; k <= r; k++)
        full += -expm1(n * log1p(-pow(k, -a) / h));
    double got = workload_dlrm_unique_rows(IDS_ZIPF, a, 0, r, n);
    ck_assert_msg(fabs(got / full - 1) < 1e-3, "zipf distinct rows %g vs %g", got, full);
    /* the hot share of the same table: H(1000) / H(R) */
    double h1000 = 0;
    for (int k = 1; k <= 1000; k++)
        h1000 += pow(k, -a);
    ck_assert_double_eq_tol(workload_dlrm_hot_share(IDS_ZIPF, a, r, 1000), h1000 / h, 1e-5);
    ck_assert_double_eq_tol(workload_dlrm_hot_share(IDS_UNIFORM, 0, 1000, 250), 0.25, 1e-12);
    ck_assert_double_eq(workload_dlrm_hot_share(IDS_UNIFORM, 0, 1000, 5000), 1.0);
    /* unique_ratio: ratio x N, capped by the rows */
    ck_assert_double_eq(workload_dlrm_unique_rows(IDS_UNIQUE_RATIO, 0, 0.25, 1e6, 4000), 1000);
    ck_assert_double_eq(workload_dlrm_unique_rows(IDS_UNIQUE_RATIO, 0, 0.25, 10, 4000), 10);
}
END_TEST

static device_spec test_device(double l2)
{
    device_spec d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "test");
    for (int p = 0; p < PREC_COUNT; p++)
        d.peak_flops[p] = 100e12;
    d.hbm_bw = 1e12; /* 1 TB/s */
    d.hbm_bytes = 80e9;
    d.sms = 100;
    d.l2_bytes = l2;
    return d;
}

static workload_emb table(double rows, double dim, double lookups, double bags, dlrm_id_law law,
                          double unique, emb_update update)
{
    workload_emb e = {0};
    e.rows = rows;
    e.dim = dim;
    e.elem_bytes = 4;
    e.lookups = lookups;
    e.bags = bags;
    e.law = law;
    e.unique = unique;
    e.update = update;
    return e;
}

START_TEST(lookup_cost_by_hand)
{
    device_spec dev = test_device(1 << 20); /* 1 MiB of L2 */
    double eff = cost_memory_efficiency(), ovh = cost_cuda_kernel_gpu_overhead_seconds();
    /* N = 10000 distinct ids (unique_ratio 1) over R = 1e6 rows of dim 64 in fp32: 2.56 MB of
     * rows, more than the L2, so every lookup reads its row: N x d x 4 bytes over 1 TB/s at the
     * memory-bound efficiency, with the ids, offsets and pooled outputs */
    double n = 10000, d = 64;
    workload_emb e = table(1e6, d, n, n, IDS_UNIQUE_RATIO, n, EMB_UPDATE_SGD);
    ck_assert_double_eq(cost_embedding_rows_read(&e, dev.l2_bytes), n);
    double gather = n * d * 4; /* 2,560,000 B: N x d x 4 */
    double ids = n * 8 + (n + 1) * 8, out = n * d * 4;
    ck_assert_double_eq(cost_embedding_bytes(&e, PASS_FWD, dev.l2_bytes), gather + ids + out);
    ck_assert_double_eq_tol(cost_embedding_seconds(&e, 1, PASS_FWD, &dev),
                            (gather + ids + out) / (1e12 * eff) + ovh, 1e-15);

    /* the same ids when the touched rows fit the L2 (1000 distinct of 10000): only the distinct
     * rows come from HBM */
    workload_emb small = table(1e6, d, n, n, IDS_UNIQUE_RATIO, 1000, EMB_UPDATE_SGD);
    ck_assert_double_eq(cost_embedding_rows_read(&small, dev.l2_bytes), 1000);
    /* a uniform table of 2048 rows (512 kB) fits 1 MiB: its distinct rows only */
    workload_emb fits = table(2048, d, n, n, IDS_UNIFORM, 2000, EMB_UPDATE_SGD);
    ck_assert_double_eq(cost_embedding_rows_read(&fits, dev.l2_bytes), 2000);
    /* a uniform table of 1e6 rows: the L2 holds 4096 rows, 0.4096% of the lookups hit; the
     * rest miss (9959.04 rows) */
    workload_emb big = table(1e6, d, n, n, IDS_UNIFORM, 9950, EMB_UPDATE_SGD);
    ck_assert_double_eq_tol(cost_embedding_rows_read(&big, dev.l2_bytes), n * (1 - 4096 / 1e6),
                            1e-9);
    /* zipf(1) over 1e6 rows: the 4096 hottest rows (1 MiB / 256 B) take H(4096) / H(1e6) of
     * the lookups; the rest miss */
    double h_hot = 0, h_all = 0;
    for (int k = 1; k <= 1000000; k++) {
        h_all += 1.0 / k;
        if (k <= 4096)
            h_hot += 1.0 / k;
    }
    workload_emb z = table(1e6, d, n, n, IDS_ZIPF, 3000, EMB_UPDATE_SGD);
    z.alpha = 1.0;
    ck_assert_double_eq_tol(cost_embedding_rows_read(&z, dev.l2_bytes), n * (1 - h_hot / h_all),
                            1e-3);
    z.unique = 9000; /* never fewer than the distinct rows */
    ck_assert_double_eq(cost_embedding_rows_read(&z, dev.l2_bytes), 9000);
    /* a row-wise slice of 4 GPUs (hashed ids): a quarter of the lookups, which hit its 4096
     * hottest rows, the table's ranks 1, 5, 9, ...: the share of the table's 16384 hottest */
    double h_hot4 = 0;
    for (int k = 1; k <= 16384; k++)
        h_hot4 += 1.0 / k;
    workload_emb slice = z;
    slice.unique = 100;
    slice.lookups = n / 4;
    slice.row_shards = 4;
    ck_assert_double_eq_tol(cost_embedding_rows_read(&slice, dev.l2_bytes),
                            n / 4 * (1 - h_hot4 / h_all), 1e-3);
    /* the backward sorts a slice's row indices: 2^18 rows need 3 passes of 8 bits, a quarter
     * of them (2^16) 2 */
    workload_emb whole = table(262144, d, n, n, IDS_UNIFORM, 100, EMB_UPDATE_SGD), quarter = whole;
    quarter.row_shards = 4;
    ck_assert_double_eq(cost_embedding_bytes(&whole, PASS_BWD, 0) -
                            cost_embedding_bytes(&quarter, PASS_BWD, 0),
                        n * 12 * 2);
    /* split among 4 tables of a kernel, each gets 256 kB */
    workload_emb four[4] = {fits, fits, fits, fits};
    double t4 = cost_embedding_seconds(four, 4, PASS_FWD, &dev);
    double rows4 = fmax(2000, n * (1 - 1024.0 / 2048)); /* 1024 hot rows of 2048 */
    ck_assert_double_eq_tol(t4, 4 * (rows4 * d * 4 + ids + out) / (1e12 * eff) + ovh, 1e-15);

    /* backward, sgd: ids, the sort (3 passes of 8 bits for 1e6 rows, 12 B read and written),
     * the gradient per lookup, each distinct row read and written */
    double sort = n * 12 * 2 * 3, grads = n * d * 4, rows = 10000 * 2 * d * 4;
    ck_assert_double_eq(cost_embedding_bytes(&e, PASS_BWD, dev.l2_bytes),
                        ids + sort + grads + rows);
    /* adam: + two fp32 moments per element, read and written, per distinct row */
    workload_emb adam = e;
    adam.update = EMB_UPDATE_ADAM;
    ck_assert_double_eq(cost_embedding_bytes(&adam, PASS_BWD, dev.l2_bytes) -
                            cost_embedding_bytes(&e, PASS_BWD, dev.l2_bytes),
                        10000 * 2 * (2 * d * 4));
    workload_emb ada = e;
    ada.update = EMB_UPDATE_ADAGRAD;
    ck_assert_double_eq(cost_embedding_bytes(&ada, PASS_BWD, dev.l2_bytes) -
                            cost_embedding_bytes(&e, PASS_BWD, dev.l2_bytes),
                        10000 * 2 * (d * 4));
}
END_TEST

/* The sparse (unfused) update of NVIDIA's DLRM: no sort; one fp32 gradient row per lookup
 * (N x d x 4 = 2,560,000 B) written, scaled into a new tensor (read + write), index-added (read):
 * 4 passes at the memory-bound efficiency, 2 more under fp16 AMP (the loss scaler's unscale);
 * the gather of the pooled gradients and the rows' read-modify-write stay at the backward's
 * efficiency (0.50). Kernels: 2 + the scaling (+ the unscale). */
START_TEST(sparse_update_by_hand)
{
    device_spec dev = test_device(1 << 20);
    double eff = cost_memory_efficiency(), ovh = cost_cuda_kernel_gpu_overhead_seconds();
    double n = 10000, d = 64;
    workload_emb e = table(1e6, d, n, n, IDS_UNIQUE_RATIO, n, EMB_UPDATE_SGD);
    ck_assert_double_eq(cost_embedding_sparse_stream_bytes(&e), 0);
    double ids = n * 8 + (n + 1) * 8, grads = n * d * 4, rows = n * 2 * d * 4;
    double fused = cost_embedding_seconds(&e, 1, PASS_BWD, &dev);
    ck_assert_double_eq_tol(fused, (ids + n * 12 * 2 * 3 + grads + rows) / (1e12 * 0.50) + 2 * ovh,
                            1e-15);
    e.sparse_update = 1;
    ck_assert_double_eq(cost_embedding_bytes(&e, PASS_BWD, dev.l2_bytes), ids + grads + rows);
    ck_assert_double_eq(cost_embedding_sparse_stream_bytes(&e), 4 * 2560000.0);
    ck_assert_double_eq_tol(
        cost_embedding_seconds(&e, 1, PASS_BWD, &dev),
        (ids + grads + rows) / (1e12 * 0.50) + 4 * 2560000.0 / (1e12 * eff) + 3 * ovh, 1e-15);
    e.amp_unscale = 1;
    ck_assert_double_eq(cost_embedding_sparse_stream_bytes(&e), 6 * 2560000.0);
    ck_assert_double_eq_tol(
        cost_embedding_seconds(&e, 1, PASS_BWD, &dev),
        (ids + grads + rows) / (1e12 * 0.50) + 6 * 2560000.0 / (1e12 * eff) + 4 * ovh, 1e-15);
    /* the forward does not change */
    ck_assert_double_eq(cost_embedding_seconds(&e, 1, PASS_FWD, &dev),
                        cost_embedding_seconds(&(workload_emb){.rows = 1e6,
                                                               .dim = d,
                                                               .elem_bytes = 4,
                                                               .lookups = n,
                                                               .bags = n,
                                                               .law = IDS_UNIQUE_RATIO,
                                                               .unique = n},
                                               1, PASS_FWD, &dev));
}
END_TEST

START_TEST(op_graph_shapes)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(workload_model_load("dlrm-criteo-large", ps_data_dir(), &m, &err), 0);
    workload_graph g;
    double b = 2048;
    ck_assert_int_eq(workload_build_dlrm(&m, (int)b, PREC_FP16, EMB_UPDATE_SGD, &g, &err), 0);
    /* bottom MLP 13-512-256-128, 26 tables, dot over 27 vectors, top 479-1024-1024-512-256-1 */
    double mlp = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 128 + 128) + (479 * 1024 + 1024) +
                 (1024 * 1024 + 1024) + (1024 * 512 + 512) + (512 * 256 + 256) + (256 * 1 + 1);
    ck_assert_double_eq(g.total_params, 177944291.0 * 128 + mlp);
    int tables = 0, found_dot = 0, found_top0 = 0;
    for (int i = 0; i < g.n_ops; i++) {
        const workload_op *op = &g.ops[i];
        if (op->kind == OP_EMBEDDING_BAG) {
            tables++;
            ck_assert_double_eq(op->emb.lookups, b);
            ck_assert(op->emb.unique <= fmin(b, op->emb.rows) + 1e-9);
        }
        if (strcmp(op->name, "interaction.dot") == 0) {
            found_dot = 1;
            ck_assert_double_eq(op->batch, b);
            ck_assert_double_eq(op->m, 27);
            ck_assert_double_eq(op->k, 128);
            ck_assert_double_eq(op->fwd_flops, 2 * b * 27 * 27 * 128);
            /* Z = X X^T: X (27 x 128, fp16) read once, Z written; backward dX = (dZ + dZ^T) X,
             * one GEMM of the forward's FLOPs reading dZ and X, writing dX */
            ck_assert(op->gram);
            ck_assert_double_eq(op->fwd_bytes, b * (27 * 128 + 27 * 27) * 2);
            ck_assert_double_eq(op->bwd_flops, op->fwd_flops);
            ck_assert_double_eq(op->bwd_bytes, b * (27 * 27 + 2 * 27 * 128) * 2);
            /* on 1 TB/s and 100 TFLOP/s both passes are memory bound: 17.1 MB and 31.3 MB at
             * the memory-bound efficiency (compute: ~10 and ~19 us at the small tiles' rates) */
            device_spec dev = test_device(1 << 20);
            /* DLRM's ops are CUDA kernels one by one (DLE: a cuBLAS GEMM, apex's bias-ReLU
             * kernels, the dot): each pays one CUDA kernel's 17 / 2.5 = 6.8 us, not the 17 us
             * of a modelled kernel of Megatron's fused graph */
            ck_assert_int_eq(op->cuda_kernels, 1);
            double bw = 1e12 * cost_memory_efficiency(), ovh = 6.8e-6;
            ck_assert_double_eq_tol(cost_cuda_kernel_gpu_overhead_seconds(), ovh, 1e-18);
            ck_assert_double_eq_tol(cost_op_kernel_seconds(op, PASS_FWD, PREC_FP16, &dev),
                                    b * (27 * 128 + 27 * 27) * 2 / bw + ovh, 1e-12);
            ck_assert_double_eq_tol(cost_op_kernel_seconds(op, PASS_BWD, PREC_FP16, &dev),
                                    b * (27 * 27 + 2 * 27 * 128) * 2 / bw + 2 * ovh, 1e-12);
        }
        if (strcmp(op->name, "top_mlp.0") == 0) {
            found_top0 = 1;
            ck_assert_double_eq(op->k, 27 * 26 / 2 + 128);
            ck_assert_double_eq(op->fwd_flops, 2 * b * 479 * 1024);
        }
    }
    ck_assert_int_eq(tables, 26);
    ck_assert(found_dot && found_top0);
    /* a table of 4 rows with 2048 uniform ids touches all 4 */
    ck_assert_double_eq_tol(g.ops[6 + 5].emb.unique, 4 * (1 - pow(0.75, 2048)), 1e-9);
    workload_graph_free(&g);

    ck_assert_int_eq(workload_model_load("dcnv2-mlperf", ps_data_dir(), &m, &err), 0);
    ck_assert_int_eq(workload_build_dlrm(&m, (int)b, PREC_BF16, EMB_UPDATE_ADAGRAD, &g, &err), 0);
    int cross = 0;
    for (int i = 0; i < g.n_ops; i++)
        if (strcmp(g.ops[i].name, "interaction.cross.0.v") == 0) {
            cross = 1;
            ck_assert_double_eq(g.ops[i].k, 128 * 27); /* bottom + 26 embeddings */
            ck_assert_double_eq(g.ops[i].n, 512);
            ck_assert_double_eq(g.ops[i].params, 128 * 27 * 512);
        }
    ck_assert(cross);
    workload_graph_free(&g);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {bundled_models_load,
                                  lists_and_laws,
                                  bad_values_are_located,
                                  transformer_check_refuses_dlrm,
                                  distinct_rows_by_hand,
                                  lookup_cost_by_hand,
                                  sparse_update_by_hand,
                                  op_graph_shapes,
                                  NULL};
    return suite_run(suite_of("dlrm", "core", 60, tests));
}
