/* test_compare.c: `protosim compare`: a small hand-written trace (tests/data/compare/small.json)
 * whose every measured row is worked out by hand, its predicted rows against the plan's run and
 * the cost model, the real H100 trace end to end, and the located errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/compare/compare.h"
#include "../sim/cost/cost.h"
#include "cli_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* compare_job on small.json (rank 0 of a world of 2) and tiny-dp2.yaml on two-h100.xml; *t
 * freed by the caller; the strategy and cluster into *s and *c. */
static compare_table *small_table(strategy *s, cluster *c)
{
    char *trace = src_path("tests/data/compare/small.json");
    char *plan = src_path("tests/data/compare/tiny-dp2.yaml");
    const char *p[1] = {trace};
    ps_error err;
    ps_error_clear(&err);
    trace_job j;
    ck_assert_msg(trace_job_load(p, 1, 0, &j, &err) == 0, "%s", err.message);
    ck_assert_msg(strategy_load(plan, ps_data_dir(), s, &err) == 0, "%s", err.message);
    sim_load("tests/data/compare/two-h100.xml", c);
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

static const compare_row *row(const compare_table *t, int which)
{
    for (int i = 0; i < ROW_COUNT; i++)
        if (t->rows[i].row == which)
            return &t->rows[i];
    ck_abort_msg("row %s missing", compare_row_names[which]);
    return NULL;
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
    /* largest |difference| first, the whole step last */
    ck_assert_int_eq(t->rows[ROW_COUNT - 1].row, ROW_STEP);
    for (int i = 1; i < ROW_COUNT - 1; i++)
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
    const TTest *tests[] = {measured_rows_by_hand, predicted_rows, real_h100_trace,
                            errors_are_located, NULL};
    return suite_run(suite_of("compare", "compare", 0, tests));
}
