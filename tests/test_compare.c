/* test_compare.c: `protosim compare`: a small hand-written trace (tests/data/compare/small.json)
 * whose every measured row is worked out by hand, its predicted rows against the plan's run and
 * the cost model, GEMMs by layer role (small_shapes.json by hand, the real H100 trace), the real
 * H100 trace end to end, and the located errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/compare/compare.h"
#include "../sim/cost/cost.h"
#include "cli_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* compare_job on one trace (source-relative path) and a plan on a cluster; *t freed by the
 * caller; the strategy and cluster into *s and *c. */
static compare_table *table_of(const char *trace_rel, const char *plan_rel, const char *cl_rel,
                               strategy *s, cluster *c)
{
    char *trace = src_path(trace_rel);
    char *plan = src_path(plan_rel);
    const char *p[1] = {trace};
    ps_error err;
    ps_error_clear(&err);
    trace_job j;
    ck_assert_msg(trace_job_load(p, 1, 0, &j, &err) == 0, "%s", err.message);
    ck_assert_msg(strategy_load(plan, ps_data_dir(), s, &err) == 0, "%s", err.message);
    sim_load(cl_rel, c);
    compare_table *t;
    int n;
    ck_assert_msg(compare_job(&j, s, c, &t, &n, &err) == 0, "%s", err.message);
    ck_assert_int_eq(n, 1);
    t->trace = NULL; /* the job's, freed below */
    trace_job_free(&j);
    free(trace);
    free(plan);
    return t;
}

/* small.json (rank 0 of a world of 2, no shapes recorded) and tiny-dp2.yaml on two-h100.xml. */
static compare_table *small_table(strategy *s, cluster *c)
{
    return table_of("tests/data/compare/small.json", "tests/data/compare/tiny-dp2.yaml",
                    "tests/data/compare/two-h100.xml", s, c);
}

/* The row of `which` (a kind or ROW_*; KIND_GEMM: the only GEMM row, or the first). */
static const compare_row *row(const compare_table *t, int which)
{
    for (int i = 0; i < t->n_rows; i++)
        if (t->rows[i].row == which)
            return &t->rows[i];
    ck_abort_msg("row %s missing", compare_row_name(which));
    return NULL;
}

/* The row named `name`, NULL if none. */
static const compare_row *named(const compare_table *t, const char *name)
{
    for (int i = 0; i < t->n_rows; i++)
        if (strcmp(t->rows[i].name, name) == 0)
            return &t->rows[i];
    return NULL;
}

/* The GEMM rows' sums, measured and predicted; their count into *n. */
static void gemm_rows(const compare_table *t, double *measured, double *predicted, int *n)
{
    *measured = *predicted = 0;
    *n = 0;
    for (int i = 0; i < t->n_rows; i++)
        if (t->rows[i].row == KIND_GEMM) {
            *measured += t->rows[i].measured_s;
            *predicted += t->rows[i].predicted_s;
            ++*n;
        }
}

/* small.json, one step of 1000 us on stream 7 (compute) and 20 (NCCL):
 *   GEMM      100-300 (launched at 10)   attention 320-420 (at 70)   layer norm 420-470 (at 110)
 *   all-reduce 440-640 (at 150)          GELU      720-760 (at 700)  fused AdamW 850-950 (at 820)
 * Per kind: GEMM 200, attention 100, norms and elementwise 50 + 40 = 90, optimizer 100,
 * all-reduce 200 us. Busy (union): 100-300, 320-640, 720-760, 850-950 = 660 us; compute alone
 * 200 + 150 + 40 + 100 = 490 us, so the all-reduce is exposed 660 - 490 = 170 us (470-640).
 * Gaps: 300-320 (attention launched at 70, before it: not host-bound), 640-720 (GELU launched at
 * 700: host-bound 80), 760-850 (AdamW launched at 820: host-bound 90): 170 us. Idle: 1000 - 660
 * - 170 = 170 us (0-100, 300-320, 950-1000). */
START_TEST(measured_rows_by_hand)
{
    strategy s;
    cluster c;
    compare_table *t = small_table(&s, &c);
    ck_assert_int_eq(t->steps, 1);
    ck_close(row(t, KIND_GEMM)->measured_s, 200e-6, 1e-9);
    ck_close(row(t, KIND_ATTENTION)->measured_s, 100e-6, 1e-9);
    ck_close(row(t, KIND_NORM_ELEM)->measured_s, 90e-6, 1e-9);
    ck_close(row(t, KIND_OPTIMIZER)->measured_s, 100e-6, 1e-9);
    ck_close(row(t, KIND_ALLREDUCE)->measured_s, 200e-6, 1e-9);
    ck_close(row(t, ROW_EXPOSED)->measured_s, 170e-6, 1e-9);
    ck_close(row(t, ROW_HOST_BOUND)->measured_s, 170e-6, 1e-9);
    ck_close(row(t, ROW_IDLE)->measured_s, 170e-6, 1e-9);
    ck_close(row(t, ROW_STEP)->measured_s, 1000e-6, 1e-9);
    ck_assert(row(t, KIND_EMB_LOSS)->measured_s == 0 && row(t, KIND_OTHER)->measured_s == 0);
    ck_assert(row(t, ROW_RESIDUAL)->measured_s == 0);
    /* no shapes recorded: GEMM is one row, both sides */
    double gm, gp;
    int n;
    gemm_rows(t, &gm, &gp, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(row(t, KIND_GEMM)->name, "GEMM (no shapes in the trace)");
    ck_assert(gp == t->predicted.kind_s[KIND_GEMM] && gm == t->measured.kind_s[KIND_GEMM]);
    /* largest |difference| first, the whole step last */
    ck_assert_int_eq(t->rows[t->n_rows - 1].row, ROW_STEP);
    for (int i = 1; i < t->n_rows - 1; i++)
        ck_assert(fabs(t->rows[i - 1].predicted_s - t->rows[i - 1].measured_s) >=
                  fabs(t->rows[i].predicted_s - t->rows[i].measured_s));
    free(t);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

/* The predicted rows against the plan run on its own (run_execute, every task) and the cost
 * model: the all-reduce row is rank 0's all-reduce tasks' simulated time, the step the
 * iteration time, the compute kinds add up to rank 0's simulated compute (forward, backward)
 * minus the stated residual, and GEMM is the op graph's GEMMs (forward + backward, one
 * micro-batch: global 4 / (micro 2 x data 2)) on the H100 at bf16. */
START_TEST(predicted_rows)
{
    strategy s;
    cluster c;
    compare_table *t = small_table(&s, &c);
    htae_options o;
    htae_default_options(&o);
    run_request rq = {.c = &c, .s = &s, .hopt = &o};
    run_outcome run;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(run_execute(&rq, &run, &err), 0);
    double allreduce = 0, compute = 0;
    const exec_graph *g = run.graph;
    for (uint32_t k = 0; k < g->n_tasks; k++) {
        const graph_task *x = &g->tasks[k];
        double d = run.res.end[k] - run.res.start[k];
        if (x->rank != 0)
            continue;
        if (x->kind == TASK_COLLECTIVE && g->colls[x->coll].kind == COLL_ALLREDUCE)
            allreduce += d;
        if (x->kind == TASK_COMPUTE && (x->category == CAT_FORWARD || x->category == CAT_BACKWARD))
            compute += d;
    }
    ck_assert(allreduce > 0);
    ck_close(row(t, KIND_ALLREDUCE)->predicted_s, allreduce, 1e-9);
    ck_close(row(t, ROW_STEP)->predicted_s, run.sum.fig.iteration_s, 1e-12);
    ck_close(t->simulated_compute_s, compute, 1e-9);
    double kinds = 0;
    for (int k = KIND_GEMM; k <= KIND_OTHER; k++)
        if (k != KIND_OPTIMIZER)
            kinds += row(t, k)->predicted_s;
    ck_close(kinds, t->simulated_compute_s - t->residual_s, 1e-9);
    ck_close(row(t, ROW_RESIDUAL)->predicted_s, t->residual_s, 1e-12);
    workload_graph wg;
    ck_assert_int_eq(workload_build(&s.model, 2, PREC_BF16, &wg, &err), 0);
    double gemm = 0;
    for (int i = 0; i < wg.n_ops; i++)
        if (wg.ops[i].kind == OP_GEMM)
            gemm += cost_op_kernel_seconds(&wg.ops[i], PASS_FWD, PREC_BF16, c.device[0]) +
                    cost_op_kernel_seconds(&wg.ops[i], PASS_BWD, PREC_BF16, c.device[0]);
    ck_close(row(t, KIND_GEMM)->predicted_s, gemm, 1e-9);
    /* step = busy + host-bound + idle on the predicted side too */
    ck_close(t->predicted.busy_s + t->predicted.host_bound_s + t->predicted.idle_s,
             t->predicted.step_s, 1e-9);
    workload_graph_free(&wg);
    run_outcome_free(&run);
    free(t);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

/* The cost model's time of the plan's GEMM ops whose names contain one of `parts` (NULL-ended),
 * forward and backward, one micro-batch, bf16 on c's GPU 0 (tiny-dp2: nothing sharded). */
static double gemm_ops(const strategy *s, const cluster *c, const char *const *parts)
{
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&s->model, 2, PREC_BF16, &wg, &err), 0);
    double sum = 0;
    for (int i = 0; i < wg.n_ops; i++)
        for (const char *const *p = parts; *p; p++)
            if (wg.ops[i].kind == OP_GEMM && strstr(wg.ops[i].name, *p)) {
                sum += cost_op_kernel_seconds(&wg.ops[i], PASS_FWD, PREC_BF16, c->device[0]) +
                       cost_op_kernel_seconds(&wg.ops[i], PASS_BWD, PREC_BF16, c->device[0]);
                break;
            }
    workload_graph_free(&wg);
    return sum;
}

/* small_shapes.json: one step of GEMM kernels on stream 7, each launched by an op with shapes,
 * against tiny-dp2's one layer over T = 2 x 128 = 256 tokens, hidden 256, ffn 1024, vocab 1024:
 * the plan's multisets are QKV {256, 256, 768}, attention output {256, 256, 256}, and MLP in,
 * MLP out and the LM head all {256, 256, 1024}: one row, "GEMM MLP + LM head".
 *   addmm [768] [256 256] [256 768]     100-150  QKV                        50 us
 *   mm [256 256] [256 256]              150-180  attention output           30 us
 *   addmm [1024] [256 256] [256 1024]   180-240  MLP + LM head              60 us
 *   mm [256 1024] [1024 256]            240-280  MLP + LM head              40 us
 *   bmm [8 128 32] [8 32 128]           280-300  other (batched)            20 us
 *   mm [100 256] [256 256]              300-310  other (no plan multiset)   10 us
 *   a launch outside any op             310-315  other (no shapes)           5 us
 * Rows: QKV 50, attention output 30, MLP + LM head 100, other 35 us: 215 us, the GEMM kind. */
START_TEST(gemm_roles_by_hand)
{
    strategy s;
    cluster c;
    compare_table *t =
        table_of("tests/data/compare/small_shapes.json", "tests/data/compare/tiny-dp2.yaml",
                 "tests/data/compare/two-h100.xml", &s, &c);
    const compare_row *qkv = named(t, "GEMM attention QKV");
    const compare_row *out = named(t, "GEMM attention output");
    const compare_row *mlp = named(t, "GEMM MLP + LM head");
    const compare_row *other = named(t, "GEMM other");
    ck_assert(qkv && out && mlp && other);
    ck_close(qkv->measured_s, 50e-6, 1e-9);
    ck_close(out->measured_s, 30e-6, 1e-9);
    ck_close(mlp->measured_s, 100e-6, 1e-9);
    ck_close(other->measured_s, 35e-6, 1e-9);
    ck_close(t->measured.kind_s[KIND_GEMM], 215e-6, 1e-9);
    ck_assert(!named(t, "GEMM MLP in") && !named(t, "GEMM LM head") && !named(t, "GEMM MLP"));
    /* the predicted side: the same roles from the op graph, the cost model's time */
    const char *const p_qkv[] = {".attn.qkv", NULL}, *const p_out[] = {".attn.proj", NULL};
    const char *const p_mlp[] = {".mlp.fc1", ".mlp.fc2", "lm_head", NULL};
    ck_close(qkv->predicted_s, gemm_ops(&s, &c, p_qkv), 1e-9);
    ck_close(out->predicted_s, gemm_ops(&s, &c, p_out), 1e-9);
    ck_close(mlp->predicted_s, gemm_ops(&s, &c, p_mlp), 1e-9);
    ck_assert(other->predicted_s == 0);
    /* the role rows add up to the GEMM kind, both sides */
    double gm, gp;
    int n;
    gemm_rows(t, &gm, &gp, &n);
    ck_close(gm, t->measured.kind_s[KIND_GEMM], 1e-12);
    ck_close(gp, t->predicted.kind_s[KIND_GEMM], 1e-12);
    free(t);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

/* The real H100 trace records its GEMMs' shapes: GPT-3 1.3B's roles (MLP in and out share
 * {8192, 2048, 8192}: one row), nothing left unmatched, and the role rows add up to the GEMM
 * kind the trace's split gives (86.155644 ms measured, before roles). */
START_TEST(gemm_roles_h100)
{
    strategy s;
    cluster c;
    compare_table *t = table_of("tests/data/measured/h100_gpt3_1.3b_trace.json.gz",
                                "tests/data/compare/gpt3-1.3b-h100.yaml",
                                "tests/data/compare/h100-1gpu.xml", &s, &c);
    const char *const roles[] = {"GEMM attention QKV", "GEMM attention output", "GEMM MLP",
                                 "GEMM LM head"};
    for (int i = 0; i < 4; i++) {
        const compare_row *r = named(t, roles[i]);
        ck_assert_msg(r && r->measured_s > 0 && r->predicted_s > 0, "%s", roles[i]);
    }
    const compare_row *other = named(t, "GEMM other");
    ck_assert(other && other->measured_s == 0 && other->predicted_s == 0);
    double gm, gp;
    int n;
    gemm_rows(t, &gm, &gp, &n);
    ck_close(gm, 86.155644e-3, 1e-8);
    ck_close(gm, t->measured.kind_s[KIND_GEMM], 1e-12);
    ck_close(gp, t->predicted.kind_s[KIND_GEMM], 1e-12);
    free(t);
    cluster_free(&c);
    strategy_free(&s);
}
END_TEST

/* The real GPT-3 1.3B step on one H100 through the binary, JSON and CSV: it runs, and its whole
 * step measured is the mean of the trace's two ProfilerStep spans (#2: 148.447167 ms, #3:
 * 149.593192 ms, their `dur`). */
START_TEST(real_h100_trace)
{
    char *dir = make_tmpdir();
    char *json = tmp_path(dir, "c.json"), *csv = tmp_path(dir, "c.csv");
    char *trace = src_path("tests/data/measured/h100_gpt3_1.3b_trace.json.gz");
    char *plan = src_path("tests/data/compare/gpt3-1.3b-h100.yaml");
    char *cl = src_path("tests/data/compare/h100-1gpu.xml");
    const char *args[] = {"compare", trace, plan,    "--cluster", cl,
                          "--json",  json,  "--csv", csv,         NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "whole step"));
    cJSON *root = parse_json_file(json);
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "tables"), 0);
    const cJSON *rows = cJSON_GetObjectItem(t0, "rows");
    const cJSON *last = cJSON_GetArrayItem(rows, cJSON_GetArraySize(rows) - 1);
    ck_assert_str_eq(cJSON_GetObjectItem(last, "kind")->valuestring, "whole step");
    ck_close(num_field(last, "measured_ms"), 0.5 * (148.447167 + 149.593192), 1e-9);
    ck_assert(num_field(last, "predicted_ms") > 0);
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(strstr(text, ",0,whole step,149.020180,"));
    free(text);
    cJSON_Delete(root);
    run_free(&r);
    free(trace);
    free(plan);
    free(cl);
    free(json);
    free(csv);
    remove_tmpdir(dir);
}
END_TEST

/* Errors exit 1 with a located message: an unreadable trace, a trace without GPU work, a rank
 * outside the plan, a strategy that does not load, no --cluster. */
static void expect_compare_error(const char *trace_rel, const char *plan_rel, const char *cl_rel,
                                 const char *words)
{
    char *dir = make_tmpdir();
    char *trace = src_path(trace_rel), *plan = src_path(plan_rel);
    char *cl = src_path(cl_rel);
    const char *args[] = {"compare", trace, plan, "--cluster", cl, NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {words, NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(trace);
    free(plan);
    free(cl);
    remove_tmpdir(dir);
}

/* Both ranks of the data-parallel plan traced (small.json as rank 0, small_rank1.json the same
 * step as rank 1): a table each, and since the plan's two replicas run the same work, rank 1's
 * rows equal rank 0's, measured and predicted; nothing is folded (a folded twin would show
 * only its all-reduce: no compute, no optimizer). */
START_TEST(every_traced_rank)
{
    char *paths[2] = {src_path("tests/data/compare/small.json"),
                      src_path("tests/data/compare/small_rank1.json")};
    char *plan = src_path("tests/data/compare/tiny-dp2.yaml");
    const char *p[2] = {paths[0], paths[1]};
    ps_error err;
    ps_error_clear(&err);
    trace_job j;
    ck_assert_msg(trace_job_load(p, 2, 0, &j, &err) == 0, "%s", err.message);
    strategy s;
    ck_assert_msg(strategy_load(plan, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    cluster c;
    sim_load("tests/data/compare/two-h100.xml", &c);
    compare_table *t;
    int n;
    ck_assert_msg(compare_job(&j, &s, &c, &t, &n, &err) == 0, "%s", err.message);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(t[0].rank, 0);
    ck_assert_int_eq(t[1].rank, 1);
    ck_assert_int_eq(t[0].n_rows, t[1].n_rows);
    ck_assert(row(&t[1], KIND_OPTIMIZER)->predicted_s > 0);
    ck_assert(t[1].simulated_compute_s > 0);
    for (int i = 0; i < t[0].n_rows; i++) {
        const compare_row *a = &t[0].rows[i], *b = named(&t[1], a->name);
        ck_assert_msg(b, "rank 1 has no row %s", a->name);
        ck_close(b->measured_s, a->measured_s, 1e-12);
        ck_close(b->predicted_s, a->predicted_s, 1e-12);
    }
    free(t);
    trace_job_free(&j);
    strategy_free(&s);
    cluster_free(&c);
    free(plan);
    free(paths[0]);
    free(paths[1]);
}
END_TEST

START_TEST(errors_are_located)
{
    expect_compare_error("tests/data/replay/not_json.json", "tests/data/compare/tiny-dp2.yaml",
                         "tests/data/compare/two-h100.xml", "not_json.json");
    expect_compare_error("tests/data/replay/no_gpu.json", "tests/data/compare/tiny-dp2.yaml",
                         "tests/data/compare/two-h100.xml", "no_gpu.json");
    expect_compare_error("tests/data/replay/rank1.json", "tests/data/compare/gpt3-1.3b-h100.yaml",
                         "tests/data/compare/h100-1gpu.xml",
                         "traced rank 1 is outside the plan's 1 GPU");
    expect_compare_error("tests/data/compare/small.json", "tests/data/compare/missing.yaml",
                         "tests/data/compare/two-h100.xml", "missing.yaml");
    char *dir = make_tmpdir();
    const char *args[] = {"compare", "a.json", "b.yaml", NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {"compare needs --cluster CLUSTER", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        measured_rows_by_hand, predicted_rows,    gemm_roles_by_hand, gemm_roles_h100,
        real_h100_trace,       every_traced_rank, errors_are_located, NULL};
    return suite_run(suite_of("compare", "compare", 0, tests));
}
