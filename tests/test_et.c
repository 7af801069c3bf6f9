/* test_et.c: `replay --et`: a PyTorch execution trace beside its Kineto trace
 * (tests/data/et/README.md has the hand-written pair and the arithmetic), through the binary. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "suite_util.h"

static const char *dgx4 = "topology/clusters/dgx4.xml";

/* `replay TRACE [--et ET] [--what-if W] --json`: the predicted step (s), and the JSON root. */
static double step_of(const char *dir, const char *et, const char *what_if, int *edges)
{
    char *trace = src_path("tests/data/et/threads.json"), *cl = src_path(dgx4);
    char *etp = et ? src_path(et) : NULL, *json = tmp_path(dir, "r.json");
    const char *args[16] = {"replay", trace, "--cluster", cl, "--json", json, "-q"};
    int k = 7;
    if (etp) {
        args[k++] = "--et";
        args[k++] = etp;
    }
    if (what_if) {
        args[k++] = "--what-if";
        args[k++] = what_if;
    }
    args[k] = NULL;
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *root = parse_json_file(json);
    double t = num_field(root, "iteration_time_s");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "execution_trace");
    *edges = e ? (int)num_field(e, "edges") : -1;
    if (e) {
        ck_assert_int_eq((int)num_field(e, "nodes"), 3);
        ck_assert_int_eq((int)num_field(e, "linked"), 2); /* the process node has rf_id 0 */
    }
    cJSON_Delete(root);
    free(trace), free(cl), free(etp), free(json);
    return t;
}

/* The producer writes tensor 100 and the consumer, on another thread, reads it: one edge. As
 * traced nothing moves (3.54 ms both ways); with k_prod three times as long, the producer ends
 * 2 ms later (1.1 -> 3.1 ms), and with the ET the consumer starts then instead of at 2.5 ms:
 * 3.54 + 0.6 = 4.14 ms; without it the consumer keeps its time and the step stays 3.54 ms. */
START_TEST(et_makes_the_consumer_wait)
{
    char *dir = make_tmpdir();
    int edges;
    ck_assert_double_eq_tol(step_of(dir, NULL, NULL, &edges), 3.54e-3, 1e-9);
    ck_assert_int_eq(edges, -1);
    ck_assert_double_eq_tol(step_of(dir, "tests/data/et/threads_et.json", NULL, &edges), 3.54e-3,
                            1e-9);
    ck_assert_int_eq(edges, 1);
    ck_assert_double_eq_tol(step_of(dir, NULL, "scale:k_prod:3", &edges), 3.54e-3, 1e-9);
    ck_assert_double_eq_tol(step_of(dir, "tests/data/et/threads_et.json", "scale:k_prod:3", &edges),
                            4.14e-3, 1e-9);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(et_errors_name_the_file)
{
    char *dir = make_tmpdir();
    char *trace = src_path("tests/data/et/threads.json"), *cl = src_path(dgx4);
    /* not an execution trace: the Kineto trace itself */
    const char *a1[] = {"replay", trace, "--et", trace, "--cluster", cl, NULL};
    run_result r = run_protosim(dir, a1);
    const char *n1[] = {"threads.json",
                        "this is a PyTorch profiler (Kineto) trace, not a PyTorch execution trace",
                        NULL};
    expect_bad_input(&r, n1);
    run_free(&r);
    /* a bad rf_id names its node */
    char *bad =
        write_tmp_file(dir, "bad_et.json", "{\"nodes\": [{\"name\": \"x\", \"rf_id\": -2}]}");
    const char *a2[] = {"replay", trace, "--et", bad, "--cluster", cl, NULL};
    r = run_protosim(dir, a2);
    const char *n2[] = {"bad_et.json", "nodes[0].rf_id", "whole number", NULL};
    expect_bad_input(&r, n2);
    run_free(&r);
    /* one execution trace per trace */
    const char *a3[] = {"replay", trace, trace, "--et", bad, "--cluster", cl, NULL};
    r = run_protosim(dir, a3);
    expect_exit(&r, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "--et: 1 execution traces for 2 traces"));
    run_free(&r);
    free(trace), free(cl), free(bad);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {et_makes_the_consumer_wait, et_errors_name_the_file, NULL};
    return suite_run(suite_of("et", "et", 120, tests));
}
