/* test_dlrm_sweep.c: sweeps of recommendation-model plans (issue 13): the sharding, placement
 * and shards axes enumerated by hand, tables_sharding: auto's proposals (only shardings that fit
 * a GPU), the ranked columns of a table-wise plan by hand, a plan whose tables exceed the GPU
 * pruned, the columns carried by --json and merge, located errors for bad values. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/run/run.h"
#include "../strategies/compile/compile.h"
#include "../strategies/sweep_plan.h"
#include "cli_util.h"
#include "fixture.h"
#include "sim_util.h"
#include "suite_util.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The tiny DLRM of test_dlrm_plan.c as a sweep base on two GPUs (`axes` appended). */
static const char *TINY = "base:\n"
                          "  workload:\n"
                          "    family: dlrm\n"
                          "    dense_features: 4\n"
                          "    bottom_mlp: [8, 4]\n"
                          "    top_mlp: [8, 1]\n"
                          "    interaction: dot\n"
                          "    embedding_dim: 4\n"
                          "    tables: [%s]\n"
                          "    pooling: 2\n"
                          "    ids: {distribution: uniform}\n"
                          "    embedding_precision: fp32\n"
                          "  batch: {global: 512, micro: 256}\n"
                          "  precision: fp16\n"
                          "  optimizer: %s\n"
                          "  strategy:\n"
                          "    data: {degree: 2}\n"
                          "    embedding: {sharding: table-wise, placement: greedy}\n"
                          "axes:\n%s";

/* Write TINY with `tables`, `opt` and `axes` to a temporary sweep file; its path in `path`. */
static void write_sweep(const char *tables, const char *opt, const char *axes, char *path, size_t n)
{
    snprintf(path, n, "/tmp/protosim_test_dlrm_sweep_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, TINY, tables, opt, axes);
    fclose(f);
}

static int load_sweep_opt(const char *tables, const char *opt, const char *axes, sweep_spec *s,
                          ps_error *err)
{
    char path[64];
    write_sweep(tables, opt, axes, path, sizeof path);
    ps_error_clear(err);
    int rc = sweep_spec_load(path, ps_data_dir(), s, err);
    unlink(path);
    return rc;
}

static int load_sweep(const char *tables, const char *axes, sweep_spec *s, ps_error *err)
{
    return load_sweep_opt(tables, "sgd", axes, s, err);
}

/* The two-GPU cluster (tests/data/cluster/two_gpus.xml) and the sweep of TINY with `tables`,
 * `opt` and `axes` on it, its tables_sharding: auto proposals made when `propose`; asserts. */
static void sweep_on_two_gpus(const char *tables, const char *opt, const char *axes, int propose,
                              cluster *c, sweep_spec *s)
{
    sim_load("tests/data/cluster/two_gpus.xml", c);
    ps_error err;
    ck_assert_msg(load_sweep_opt(tables, opt, axes, s, &err) == 0, "%s", err.message);
    if (propose)
        ck_assert_msg(sweep_tables_propose(s, c, &err) == 0, "%s", err.message);
}

/* 4 shardings x 2 placements x 2 shards = 16 combinations, enumerated with the last axis
 * fastest: index = 4 x sharding + 2 x placement + shards. Table-wise takes a placement, not
 * shards: its shards-4 plans (1, 3) repeat 0 and 2. Row-wise and data-parallel take neither:
 * only their first combination (4, 12) stays; 5, 7, 13, 15 repeat it by shards, 6, 14 by
 * placement. Column-wise takes both: 8-11 all valid. 8 valid, 6 + 2 invalid. */
START_TEST(axes_enumerate_by_hand)
{
    sweep_spec s;
    ps_error err;
    ck_assert_msg(load_sweep("100, 10",
                             "  sharding: [table-wise, row-wise, column-wise, data-parallel]\n"
                             "  placement: [round-robin, greedy]\n"
                             "  shards: [2, 4]\n",
                             &s, &err) == 0,
                  "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 2, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 16);
    static const int valid[16] = {1, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0};
    int by_shards = 0, by_placement = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(plans[i].status, valid[i] ? SWEEP_PLAN_PENDING : SWEEP_PLAN_INVALID);
        by_shards += !valid[i] && !strcmp(plans[i].reason_kind, "shards");
        by_placement += !valid[i] && !strcmp(plans[i].reason_kind, "placement");
    }
    ck_assert_int_eq(by_shards, 6);
    ck_assert_int_eq(by_placement, 2);
    /* what the valid plans are */
    ck_assert_int_eq(plans[0].desc.emb_sharding, EMB_SHARD_TABLE_WISE);
    ck_assert_int_eq(plans[0].desc.emb_placement, EMB_PLACE_ROUND_ROBIN);
    ck_assert_int_eq(plans[0].desc.emb_shards, 0);
    ck_assert_int_eq(plans[4].desc.emb_sharding, EMB_SHARD_ROW_WISE);
    ck_assert_int_eq(plans[4].desc.emb_placement, -1);
    ck_assert_int_eq(plans[4].desc.emb_shards, 0);
    ck_assert_int_eq(plans[11].desc.emb_sharding, EMB_SHARD_COLUMN_WISE);
    ck_assert_int_eq(plans[11].desc.emb_placement, EMB_PLACE_GREEDY);
    ck_assert_int_eq(plans[11].desc.emb_shards, 4);
    ck_assert_int_eq(plans[12].desc.dense_tables, 1);
    char label[128];
    sweep_plan_label(&plans[11], 0, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "dp2 mb256 column-wise x4 greedy");
    sweep_plan_label(&plans[4], 0, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "dp2 mb256 row-wise");
    free(plans);
    sweep_spec_free(&s);
}
END_TEST

/* Bad values are errors at their place: the sweep file's line and column, the axis item. */
START_TEST(bad_values_are_located)
{
    sweep_spec s;
    ps_error err;
    /* TINY's `axes:` is line 19; the axes follow */
    ck_assert_int_ne(load_sweep("100, 10", "  sharding: [table-wise, diagonal]\n", &s, &err), 0);
    ck_assert_int_eq(err.line, 20);
    ck_assert_int_eq(err.column, 26);
    ck_assert_str_eq(err.field, "axes.sharding[1]");
    ck_assert_ptr_nonnull(strstr(err.message, "diagonal"));
    ck_assert_int_ne(load_sweep("100, 10", "  placement: [explicit]\n", &s, &err), 0);
    ck_assert_int_eq(err.line, 20);
    ck_assert_str_eq(err.field, "axes.placement[0]");
    ck_assert_int_ne(load_sweep("100, 10", "  shards: [1]\n", &s, &err), 0);
    ck_assert_str_eq(err.field, "axes.shards[0]");
    ck_assert_int_ne(load_sweep("100, 10", "  tables_sharding: greedy\n", &s, &err), 0);
    ck_assert_int_eq(err.line, 20);
    ck_assert_int_eq(err.column, 20);
    ck_assert_str_eq(err.field, "axes.tables_sharding");
    ck_assert_int_ne(
        load_sweep("100, 10", "  tables_sharding: auto\n  sharding: [row-wise]\n", &s, &err), 0);
    ck_assert_str_eq(err.field, "axes.tables_sharding");
}
END_TEST

/* The axes need a dlrm base: on a gpt base the axis is refused where written. */
START_TEST(dlrm_axes_need_a_dlrm_base)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/protosim_test_dlrm_sweep_XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("base:\n  workload: gpt3-1.3b\n  batch: {global: 8, micro: 1}\n"
          "  strategy: {data: {degree: 8}}\naxes:\n  placement: [greedy]\n",
          f);
    fclose(f);
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_ne(sweep_spec_load(path, ps_data_dir(), &s, &err), 0);
    unlink(path);
    ck_assert_int_eq(err.line, 6);
    ck_assert_int_eq(err.column, 14);
    ck_assert_str_eq(err.field, "axes.placement");
    ck_assert_ptr_nonnull(strstr(err.message, "dlrm"));
}
END_TEST

static int has_uniform(const sweep_spec *s, int n_tables, int k)
{
    for (int i = 0; i < s->n_proposals; i++) {
        int all = 1;
        for (int t = 0; t < n_tables; t++)
            all &= s->proposals[i][t] == k;
        if (all)
            return 1;
    }
    return 0;
}

/* tables_sharding: auto on two GPUs (one node: no table-row-wise; dim 4 < 2 x 128: no column
 * shards): each table has table-wise, row-wise and data-parallel, all fitting. Each greedy walk
 * gives 1 + 2 x 2 = 5 proposals (the table whose option has the largest shard takes its next
 * one until none has one), the uniform plans 3: at most 13, distinct, the three uniform ones
 * among them. */
START_TEST(tables_auto_proposals)
{
    cluster c;
    sweep_spec s;
    sweep_on_two_gpus("100, 10", "sgd", "  tables_sharding: auto\n", 1, &c, &s);
    ck_assert_int_ge(s.n_proposals, 3);
    ck_assert_int_le(s.n_proposals, 13);
    for (int i = 0; i < s.n_proposals; i++)
        for (int j = 0; j < i; j++)
            ck_assert(memcmp(s.proposals[i], s.proposals[j], 2) != 0);
    ck_assert(has_uniform(&s, 2, EMB_SHARD_TABLE_WISE));
    ck_assert(has_uniform(&s, 2, EMB_SHARD_ROW_WISE));
    ck_assert(has_uniform(&s, 2, EMB_SHARD_DATA_PARALLEL));
    /* one plan per proposal; the placement axis applies where a table is table-wise */
    sweep_plan *plans;
    int n;
    ps_error err;
    ck_assert_int_eq(sweep_enumerate(&s, 2, &plans, &n, &err), 0);
    ck_assert_int_eq(n, s.n_proposals);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(plans[i].proposal, i);
        ck_assert_int_eq(plans[i].status, SWEEP_PLAN_PENDING);
    }
    free(plans);
    sweep_spec_free(&s);
    cluster_free(&c);
}
END_TEST

/* The planner costs lookups with the L2 cache rule: on a GPU without an L2 figure (an entry
 * without l2_mib, as a user's --devices file may give) it refuses, located at the axis, before
 * costing anything. */
START_TEST(tables_auto_needs_the_l2_figure)
{
    cluster c;
    sweep_spec s;
    sweep_on_two_gpus("100, 10", "sgd", "  tables_sharding: auto\n", 0, &c, &s);
    device_spec no_l2 = *c.device[0];
    no_l2.l2_bytes = 0;
    const device_spec *keep[2] = {c.device[0], c.device[1]};
    c.device[0] = c.device[1] = &no_l2;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(sweep_tables_propose(&s, &c, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "axes.tables_sharding");
    ck_assert_msg(strstr(err.message, "no l2_mib") != NULL, "%s", err.message);
    c.device[0] = keep[0];
    c.device[1] = keep[1];
    sweep_spec_free(&s);
    cluster_free(&c);
}
END_TEST

/* Only the shardings that fit a GPU: table 0 has 2e9 rows of dim 4 in fp32 under adam (two
 * fp32 moments): 2e9 x 4 x (4 + 8) B = 96 GB whole, more than an 80 GiB A100 less the 2 GiB
 * reserve (83.75 GB): not table-wise; data-parallel 2e9 x 4 x (4 + 4 + 8) = 128 GB: not either;
 * row-wise over 2 GPUs 48 GB: fits. Every proposal shards it row-wise; no uniform table-wise or
 * data-parallel plan exists. */
START_TEST(tables_auto_only_what_fits)
{
    cluster c;
    sweep_spec s;
    sweep_on_two_gpus("2000000000, 10", "adam", "  tables_sharding: auto\n", 1, &c, &s);
    ck_assert_int_ge(s.n_proposals, 1);
    for (int i = 0; i < s.n_proposals; i++)
        ck_assert_int_eq(s.proposals[i][0], EMB_SHARD_ROW_WISE);
    ck_assert(!has_uniform(&s, 2, EMB_SHARD_TABLE_WISE));
    ck_assert(!has_uniform(&s, 2, EMB_SHARD_DATA_PARALLEL));
    sweep_spec_free(&s);
    cluster_free(&c);
}
END_TEST

/* The lookups of table t of the tiny model at `batch` (sgd: the fused update carries no
 * state). */
static workload_emb tiny_emb(const workload_model *m, int t, int batch)
{
    workload_graph g;
    ps_error err;
    ck_assert(workload_build_dlrm(m, batch, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    workload_emb e = {0};
    for (int i = 0, k = 0; i < g.n_ops; i++)
        if (g.ops[i].kind == OP_EMBEDDING_BAG && k++ == t)
            e = g.ops[i].emb;
    workload_graph_free(&g);
    return e;
}

static double fwd_bwd(const workload_emb *e, const device_spec *dev)
{
    return cost_embedding_seconds(e, 1, PASS_FWD, dev) +
           cost_embedding_seconds(e, 1, PASS_BWD, dev);
}

/* The first proposal of each greedy walk by hand: each table's cheapest option by its busiest
 * shard (the first proposal) and by the sum over its shards (present among the proposals).
 * Per micro-batch on two GPUs of a 100 GB/s link (G = 2, one micro-batch, sgd, fp32, dim 4,
 * pooling 2, 2 x 256 samples): the owner's bytes (G - 1) / G of ids 512 x 3 x 8 B and twice
 * the pooled vectors 512 x 4 x 4 B: (6,144 + 2 x 4,096) B / 100 GB/s = 143.36 ns; table-wise
 * its whole lookup + that (one shard); row-wise a half slice + that (two shards); data-parallel
 * its lookup at 256 with a scatter backward + the ring all-reduce of rows x 4 x 4 B (half of it
 * each way twice) + the dense sgd step (two shards, every GPU). */
START_TEST(tables_auto_first_proposals_by_hand)
{
    cluster c;
    sweep_spec s;
    sweep_on_two_gpus("100, 10", "sgd", "  tables_sharding: auto\n", 1, &c, &s);
    const device_spec *dev = c.device[0];
    const double comm = (6144 + 2 * 4096) / 100e9;
    int depth_pick[2], sum_pick[2];
    for (int t = 0; t < 2; t++) {
        workload_emb global = tiny_emb(&s.base.model, t, 512),
                     local = tiny_emb(&s.base.model, t, 256);
        workload_emb slice = global;
        slice.lookups /= 2;
        slice.unique /= 2;
        slice.row_shards = 2;
        workload_emb scatter = local;
        scatter.update = EMB_UPDATE_SGD;
        double rows = t == 0 ? 100 : 10;
        double tw = fwd_bwd(&global, dev) + comm;
        double rw = fwd_bwd(&slice, dev) + comm;
        double dp = cost_embedding_seconds(&local, 1, PASS_FWD, dev) +
                    cost_embedding_seconds(&scatter, 1, PASS_BWD, dev) +
                    2 * 0.5 * rows * 4 * 4 / 100e9 +
                    cost_optimizer_seconds(rows * 4, 0, PREC_FP32, 1, dev);
        /* ties go to the sharding's order: table-wise, row-wise, ..., data-parallel */
        double depth[3] = {tw, rw, dp}, sum[3] = {tw, 2 * rw, 2 * dp};
        int kind[3] = {EMB_SHARD_TABLE_WISE, EMB_SHARD_ROW_WISE, EMB_SHARD_DATA_PARALLEL};
        int bd = 0, bs = 0;
        for (int i = 1; i < 3; i++) {
            bd = depth[i] < depth[bd] ? i : bd;
            bs = sum[i] < sum[bs] ? i : bs;
        }
        depth_pick[t] = kind[bd];
        sum_pick[t] = kind[bs];
    }
    ck_assert_int_eq(s.proposals[0][0], depth_pick[0]);
    ck_assert_int_eq(s.proposals[0][1], depth_pick[1]);
    int found = 0;
    for (int i = 0; i < s.n_proposals; i++)
        found |= s.proposals[i][0] == sum_pick[0] && s.proposals[i][1] == sum_pick[1];
    ck_assert(found);
    sweep_spec_free(&s);
    cluster_free(&c);
}
END_TEST

/* One table's lookup forward + backward alone at `batch` (its own TBE kernel). */
static double table_lookup(const workload_model *m, int t, int batch, const device_spec *dev)
{
    workload_graph g;
    ps_error err;
    ck_assert(workload_build_dlrm(m, batch, PREC_FP16, EMB_UPDATE_SGD, &g, &err) == 0);
    int k = 0;
    double s = -1;
    for (int i = 0; i < g.n_ops; i++)
        if (g.ops[i].kind == OP_EMBEDDING_BAG && k++ == t)
            s = cost_embedding_seconds(&g.ops[i].emb, 1, PASS_FWD, dev) +
                cost_embedding_seconds(&g.ops[i].emb, 1, PASS_BWD, dev);
    workload_graph_free(&g);
    return s;
}

/* The ranked columns of plan 0 (table-wise round-robin: table 0 on GPU 0, table 1 on GPU 1),
 * as the sweep's worker computes them: each GPU's lookup is its one table at both GPUs'
 * 2 x 256 samples (one micro-batch per iteration), the max and max / mean; the all-to-alls on
 * the 100 GB/s split-duplex link (bare options: no software overhead), both directions at once:
 * ids 256 x (2 + 1) x 8 B = 6,144 B (61.44 ns), pooled vectors 256 x 4 x 4 B = 4,096 B
 * (40.96 ns) and their gradients (40.96 ns): 143.36 ns of emb-comm on every GPU. */
START_TEST(ranked_columns_by_hand)
{
    sim_fixture f;
    sweep_spec s;
    sweep_on_two_gpus("100, 10", "sgd", "  placement: [round-robin]\n", 0, &f.c, &s);
    sweep_plan *plans;
    int n;
    ps_error err;
    ck_assert_int_eq(sweep_enumerate(&s, 2, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 1);
    sweep_plan_strategy(&s, &plans[0], &f.s);
    fixture_compile(&f, NULL);
    fixture_run(&f);
    const compiled_plan *p = &f.p;
    const device_spec *dev = f.c.device[0];
    double l0 = table_lookup(&f.s.model, 0, 512, dev), l1 = table_lookup(&f.s.model, 1, 512, dev);
    double max = fmax(l0, l1);
    ck_assert_int_eq(p->dlrm->owner[0], 0);
    ck_assert_int_eq(p->dlrm->owner[1], 1);
    ck_close(p->dlrm->lookup_max_s, max, 1e-12);
    ck_close(p->dlrm->lookup_imbalance, max / ((l0 + l1) / 2), 1e-12);
    ck_close(f.sum.comm_s[CAT_EMB_COMM], (6144 + 4096 + 4096) / 100e9, 1e-6);
    fixture_free(&f);
    free(plans);
    sweep_spec_free(&s);
}
END_TEST

/* --- through the binary --- */

static const cJSON *plan_named(const cJSON *root, const char *label)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "plans"))
    {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(p, "plan");
        if (cJSON_IsString(l) && !strcmp(l->valuestring, label))
            return p;
    }
    ck_abort_msg("no plan '%s'", label);
    return NULL;
}

/* The bundled tiny sweep: its JSON's embedding columns equal `protosim run`'s plan.embedding
 * of the same plan, the CSV names the columns, and the two shards merged carry them unchanged. */
START_TEST(columns_through_json_csv_and_merge)
{
    char *dir = make_tmpdir();
    char *sweep = src_path("tests/data/sweep/dlrm-tiny.yaml");
    char *cl = src_path("tests/data/cluster/two_gpus.xml");
    char *whole = tmp_path(dir, "whole.json"), *csv = tmp_path(dir, "whole.csv");
    const char *a1[] = {"sweep", sweep, "--cluster",     cl,  "-j", "2", "--json", whole,
                        "--csv", csv,   "--no-progress", NULL};
    run_result r = run_protosim(dir, a1);
    expect_exit(&r, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "lookup ms"));
    ck_assert_ptr_nonnull(strstr(r.out, "samples/s"));
    ck_assert_ptr_null(strstr(r.out, "MFU"));
    run_free(&r);
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(strstr(text, ",sharding,placement,tables_sharding,lookup_max_s,"
                                       "alltoall_s,lookup_imbalance,reason\n"));
    free(text);

    /* the same plan with protosim run */
    char *strat = tmp_path(dir, "tw.yaml"), *runj = tmp_path(dir, "run.json");
    FILE *f = fopen(strat, "w");
    fprintf(f, "workload:\n  family: dlrm\n  dense_features: 4\n  bottom_mlp: [8, 4]\n"
               "  top_mlp: [8, 1]\n  interaction: dot\n  embedding_dim: 4\n  tables: [100, 10]\n"
               "  pooling: 2\n  ids: {distribution: uniform}\n  embedding_precision: fp32\n"
               "batch: {global: 512, micro: 256}\nprecision: fp16\noptimizer: sgd\n"
               "strategy:\n  data: {degree: 2}\n"
               "  embedding: {sharding: table-wise, placement: round-robin}\n");
    fclose(f);
    const char *a2[] = {"run", strat, "--cluster", cl, "--json", runj, NULL};
    run_ok(dir, a2);
    cJSON *w = parse_json_file(whole), *one = parse_json_file(runj);
    const cJSON *e = obj_field(plan_named(w, "dp2 mb256 table-wise round-robin"), "embedding");
    const cJSON *re = obj_field(obj_field(one, "plan"), "embedding");
    ck_assert_double_eq(num_field(e, "lookup_max_s"), num_field(re, "lookup_max_s"));
    ck_assert_double_eq(num_field(e, "lookup_imbalance"), num_field(re, "lookup_imbalance"));
    ck_assert_double_eq(num_field(e, "alltoall_s"), num_field(re, "alltoall_busy_s"));

    /* two shards merged: every plan's embedding block as in the whole sweep */
    char *s1 = tmp_path(dir, "s1.json"), *s2 = tmp_path(dir, "s2.json"),
         *m = tmp_path(dir, "m.json");
    const char *a3[] = {"sweep",  sweep, "--cluster",     cl,  "--shard", "1/2",
                        "--json", s1,    "--no-progress", NULL};
    const char *a4[] = {"sweep",  sweep, "--cluster",     cl,  "--shard", "2/2",
                        "--json", s2,    "--no-progress", NULL};
    const char *a5[] = {"merge", s2, s1, "--json", m, NULL};
    const char *const *runs[] = {a3, a4, a5};
    for (int i = 0; i < 3; i++) {
        r = run_protosim(dir, runs[i]);
        expect_exit(&r, 0);
        if (i == 2)
            ck_assert_ptr_nonnull(strstr(r.out, "lookup ms"));
        run_free(&r);
    }
    cJSON *mj = parse_json_file(m);
    const cJSON *wp = cJSON_GetObjectItemCaseSensitive(w, "plans");
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(mj, "plans");
    ck_assert_int_eq(cJSON_GetArraySize(wp), cJSON_GetArraySize(mp));
    for (int i = 0; i < cJSON_GetArraySize(wp); i++) {
        const cJSON *a = cJSON_GetArrayItem(wp, i), *b = cJSON_GetArrayItem(mp, i);
        ck_assert_str_eq(cJSON_GetObjectItem(a, "plan")->valuestring,
                         cJSON_GetObjectItem(b, "plan")->valuestring);
        char *ea = cJSON_PrintUnformatted(cJSON_GetObjectItem(a, "embedding"));
        char *eb = cJSON_PrintUnformatted(cJSON_GetObjectItem(b, "embedding"));
        ck_assert_str_eq(ea, eb);
        free(ea);
        free(eb);
    }
    cJSON_Delete(w);
    cJSON_Delete(one);
    cJSON_Delete(mj);
    free(s1);
    free(s2);
    free(m);
    free(strat);
    free(runj);
    free(whole);
    free(csv);
    free(sweep);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* Two tables of 50 M rows of dim 128 in fp32 under adagrad: data-parallel, each GPU holds both
 * with their dense gradient and the accumulator, 2 x 50e6 x 128 x (4 + 4 + 4) B = 153.6 GB >
 * 80 GiB: pruned (oom, not simulated), its need within 1 GB above that + the 2 GiB reserve
 * (the tiny MLPs, the activations); table-wise round-robin, one table per GPU, 50e6 x 128 x
 * (4 + 4) = 51.2 GB: simulated. */
START_TEST(tables_beyond_memory_are_pruned)
{
    char *dir = make_tmpdir();
    char *sweep = tmp_path(dir, "big.yaml"), *cl = src_path("tests/data/cluster/two_gpus.xml");
    char *j = tmp_path(dir, "big.json");
    FILE *f = fopen(sweep, "w");
    fprintf(f, "base:\n  workload:\n    family: dlrm\n    dense_features: 4\n"
               "    bottom_mlp: [8, 128]\n    top_mlp: [8, 1]\n    interaction: dot\n"
               "    embedding_dim: 128\n    tables: [50000000, 50000000]\n    pooling: 1\n"
               "    ids: {distribution: uniform}\n    embedding_precision: fp32\n"
               "  batch: {global: 512, micro: 256}\n  precision: fp16\n  optimizer: adagrad\n"
               "  strategy:\n    data: {degree: 2}\n"
               "    embedding: {sharding: table-wise, placement: round-robin}\n"
               "axes:\n  sharding: [table-wise, data-parallel]\n");
    fclose(f);
    const char *a[] = {"sweep", sweep, "--cluster", cl, "--json", j, "--no-progress", NULL};
    run_result r = run_protosim(dir, a);
    expect_exit(&r, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "1 simulated, 1 do not fit in memory"));
    cJSON *root = parse_json_file(j);
    const cJSON *dp = plan_named(root, "dp2 mb256 data-parallel");
    ck_assert_str_eq(cJSON_GetObjectItem(dp, "status")->valuestring, "oom");
    double need = num_field(dp, "peak_memory_bytes");
    ck_assert_double_ge(need, 153.6e9 + 2 * GIB);
    ck_assert_double_le(need, 153.6e9 + 2 * GIB + 1e9);
    ck_assert_double_eq(num_field(dp, "memory_capacity_bytes"), 80 * GIB);
    ck_assert_ptr_null(cJSON_GetObjectItem(obj_field(dp, "embedding"), "lookup_max_s"));
    const cJSON *tw = plan_named(root, "dp2 mb256 table-wise round-robin");
    ck_assert_str_eq(cJSON_GetObjectItem(tw, "status")->valuestring, "ok");
    ck_assert_double_le(num_field(tw, "peak_memory_bytes"), 80 * GIB);
    cJSON_Delete(root);
    run_free(&r);
    free(sweep);
    free(cl);
    free(j);
    remove_tmpdir(dir);
}
END_TEST

/* merge validates the columns of a dlrm sweep: a simulated plan without its embedding block,
 * with a negative lookup time, or with tables_sharding of the wrong length is refused with the
 * JSON path; an embedding block in a gpt sweep too. */
static void expect_merge_refuses(const char *dir, const char *file, const char *path_needle)
{
    const char *a[] = {"merge", file, NULL};
    run_result r = run_protosim(dir, a);
    expect_exit(&r, 1);
    ck_assert_msg(strstr(r.err, path_needle) != NULL, "stderr lacks '%s':\n%s", path_needle, r.err);
    run_free(&r);
}

static void write_json(const char *path, const cJSON *root)
{
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
}

START_TEST(merge_validates_the_columns)
{
    char *dir = make_tmpdir();
    char *sweep = src_path("tests/data/sweep/dlrm-tiny.yaml");
    char *cl = src_path("tests/data/cluster/two_gpus.xml");
    char *whole = tmp_path(dir, "whole.json"), *bad = tmp_path(dir, "bad.json");
    const char *a1[] = {"sweep", sweep, "--cluster", cl, "--json", whole, "--no-progress", NULL};
    run_ok(dir, a1);
    /* plans[0] is the best: simulated */
    cJSON *root = parse_json_file(whole);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "plans"), 0);
    cJSON *e = cJSON_DetachItemFromObject(p0, "embedding");
    write_json(bad, root);
    expect_merge_refuses(dir, bad, "plans[0].embedding");
    cJSON_AddItemToObject(p0, "embedding", e);
    cJSON_ReplaceItemInObject(e, "lookup_max_s", cJSON_CreateNumber(-1));
    write_json(bad, root);
    expect_merge_refuses(dir, bad, "lookup_max_s must be >= 0");
    cJSON_DeleteItemFromObject(e, "lookup_max_s");
    write_json(bad, root);
    expect_merge_refuses(dir, bad, "plans[0].embedding.lookup_max_s");
    cJSON_AddNumberToObject(e, "lookup_max_s", 0.001);
    cJSON_AddNumberToObject(e, "proposal", 0);
    cJSON *ts = cJSON_AddArrayToObject(e, "tables_sharding");
    cJSON_AddItemToArray(ts, cJSON_CreateString("table-wise"));
    write_json(bad, root);
    expect_merge_refuses(dir, bad, "plans[0].embedding.tables_sharding");
    cJSON_DeleteItemFromObject(e, "proposal");
    cJSON_DeleteItemFromObject(e, "tables_sharding");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "sweep"), "family");
    write_json(bad, root);
    expect_merge_refuses(dir, bad, "present in the sweep of a model that is not dlrm");
    cJSON_Delete(root);
    free(sweep);
    free(cl);
    free(whole);
    free(bad);
    remove_tmpdir(dir);
}
END_TEST

/* A plan the compiler refuses is reported failed with its reason, never dropped: on two L4s
 * (devices.yaml gives no l2_mib for them, which the lookup cost needs) every plan of the tiny
 * sweep is valid, compiled in its worker, refused there: 8 failed, the reason naming l2_mib. */
START_TEST(compiler_refusals_are_failed_plans)
{
    char *dir = make_tmpdir();
    char *sweep = src_path("tests/data/sweep/dlrm-tiny.yaml");
    char *cl = tmp_path(dir, "l4.xml"), *j = tmp_path(dir, "l4.json");
    FILE *f = fopen(cl, "w");
    fputs("<?xml version='1.0'?>\n"
          "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<platform version=\"4.1\">\n<zone id=\"node0\" routing=\"Full\">\n"
          "  <host id=\"a\" speed=\"121Tf\"><prop id=\"gpu\" value=\"L4\"/></host>\n"
          "  <host id=\"b\" speed=\"121Tf\"><prop id=\"gpu\" value=\"L4\"/></host>\n"
          "  <link id=\"ab\" bandwidth=\"32GBps\" latency=\"0us\" "
          "sharing_policy=\"SPLITDUPLEX\"/>\n"
          "  <route src=\"a\" dst=\"b\"><link_ctn id=\"ab\" direction=\"UP\"/></route>\n"
          "</zone>\n</platform>\n",
          f);
    fclose(f);
    const char *a[] = {"sweep", sweep, "--cluster", cl, "--json", j, "--no-progress", NULL};
    run_result r = run_protosim(dir, a);
    expect_exit(&r, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "0 simulated, 0 do not fit in memory, 8 failed"));
    cJSON *root = parse_json_file(j);
    int failed = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "plans"))
    {
        if (strcmp(cJSON_GetObjectItem(p, "status")->valuestring, "failed"))
            continue;
        failed++;
        ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(p, "reason")->valuestring, "l2_mib"));
    }
    ck_assert_int_eq(failed, 8);
    cJSON_Delete(root);
    run_free(&r);
    free(sweep);
    free(cl);
    free(j);
    remove_tmpdir(dir);
}
END_TEST

/* tables_sharding: auto on part of a cluster (issue 30): the proposals are made for the GPUs the
 * plans take. With constraints.gpus 2 on one 8-GPU DGX A100 the table is row for row the one
 * the same sweep gives on a 2-GPU node of the same kind (the same NVSwitch ports); with a gpus
 * axis, which would need proposals per count, it is an error at the axis. */
START_TEST(tables_auto_on_part_of_a_cluster)
{
    char *dir = make_tmpdir();
    char *tiny = src_path("tests/data/sweep/dlrm-tiny.yaml");
    char *text = slurp(tiny, NULL);
    *strstr(text, "axes:") = '\0';
    char body[4096];
    snprintf(body, sizeof body,
             "%saxes:\n  tables_sharding: auto\n  placement: [round-robin, greedy]\n"
             "constraints:\n  gpus: 2\n",
             text);
    char *part = write_tmp_file(dir, "part.yaml", body);
    snprintf(body, sizeof body,
             "%saxes:\n  tables_sharding: auto\n  placement: [round-robin, greedy]\n", text);
    char *whole = write_tmp_file(dir, "whole.yaml", body);
    snprintf(body, sizeof body, "%saxes:\n  gpus: [2]\n  tables_sharding: auto\n", text);
    char *axis = write_tmp_file(dir, "axis.yaml", body);
    char *a8 = tmp_path(dir, "a8.yaml"), *a2 = tmp_path(dir, "a2.yaml");
    const char *g8[] = {"cluster", "dgx-a100", "--nodes", "1", "-o", a8, NULL};
    const char *g2[] = {"cluster", "dgx-a100", "--nodes", "1", "--gpus-per-node",
                        "2",       "-o",       a2,        NULL};
    run_result r = run_protosim(dir, g8);
    expect_exit(&r, 0);
    run_free(&r);
    run_ok(dir, g2);
    const char *on8[] = {"sweep", part, "--cluster", a8, "--no-progress", "--top", "0", NULL};
    const char *on2[] = {"sweep", whole, "--cluster", a2, "--no-progress", "--top", "0", NULL};
    run_result p8 = run_protosim(dir, on8), p2 = run_protosim(dir, on2);
    expect_exit(&p8, 0);
    expect_exit(&p2, 0);
    ck_assert_msg(strstr(p8.out, "(the first 2 of its 8 GPUs)"), "%s", p8.out);
    const char *rows8 = strchr(p8.out, '\n'), *rows2 = strchr(p2.out, '\n');
    ck_assert_ptr_nonnull(rows8);
    ck_assert_str_eq(rows8, rows2); /* everything after the header line */
    run_free(&p8);
    run_free(&p2);
    const char *bad[] = {"sweep", axis, "--cluster", a8, "--dry-run", NULL};
    r = run_protosim(dir, bad);
    expect_exit(&r, 1);
    ck_assert_msg(strstr(r.err, "field 'axes.gpus': tables_sharding: auto proposes each table's "
                                "sharding for one GPU count"),
                  "%s", r.err);
    run_free(&r);
    free(text), free(tiny), free(part), free(whole), free(axis), free(a8), free(a2);
    remove_tmpdir(dir);
}
END_TEST

static Suite *suite(void)
{
    const TTest *const tests[] = {axes_enumerate_by_hand,
                                  bad_values_are_located,
                                  dlrm_axes_need_a_dlrm_base,
                                  tables_auto_proposals,
                                  tables_auto_only_what_fits,
                                  tables_auto_needs_the_l2_figure,
                                  tables_auto_first_proposals_by_hand,
                                  ranked_columns_by_hand,
                                  columns_through_json_csv_and_merge,
                                  tables_beyond_memory_are_pruned,
                                  merge_validates_the_columns,
                                  compiler_refusals_are_failed_plans,
                                  tables_auto_on_part_of_a_cluster,
                                  NULL};
    return suite_of("dlrm_sweep", "dlrm_sweep", 120, tests);
}

int main(void)
{
    return suite_run(suite());
}
