/* test_profile_cli.c: `protosim profile` and `run --profile` through the binary (PROTOSIM_BIN):
 * the table written from a hand-written trace, the run's profile report, and exit 1 naming the
 * file and the entry on a bad table. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli_util.h"
#include "suite_util.h"

/* profile ops.json -o DIR/ops.json, then run one-layer.yaml with it: fc1's forward (45 us), its
 * backward dX and fc2's forward (80 us each) are measured (tests/test_profile.c works them
 * out). */
START_TEST(profile_then_run)
{
    char *dir = make_tmpdir();
    char *trace = src_path("tests/data/profile/ops.json");
    char *ops = tmp_path(dir, "ops.json"), *rep = tmp_path(dir, "r.json");
    char *plan = src_path("tests/data/profile/one-layer.yaml");
    char *cl = src_path("tests/data/htae/one.xml");
    const char *prof[] = {"profile", trace, "-o", ops, NULL};
    run_result r = run_protosim(dir, prof);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "on A100-SXM4-80GB: 3 entries from 8 op occurrences") != NULL, "%s",
                  r.out);
    run_free(&r);
    cJSON *t = parse_json_file(ops);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(t, "entries")), 3);
    cJSON_Delete(t);

    const char *run[] = {"run", plan, "--cluster", cl, "--profile", ops, "--json", rep, NULL};
    r = run_protosim(dir, run);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "3 of 28 op passes matched") != NULL, "%s", r.out);
    run_free(&r);
    cJSON *j = parse_json_file(rep);
    const cJSON *p = obj_field(j, "profile");
    ck_assert(num_field(p, "matched") == 3 && num_field(p, "op_passes") == 28);
    assert_rel_close(num_field(p, "measured_s"), 205e-6, 1e-12, "measured_s");
    cJSON_Delete(j);
    free(trace);
    free(ops);
    free(rep);
    free(plan);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* A bad table: exit 1, the file and the entry named, nothing written. Another GPU's table: a
 * warning, and nothing matched. */
START_TEST(run_with_bad_or_foreign_table)
{
    char *dir = make_tmpdir();
    char *plan = src_path("tests/data/profile/one-layer.yaml");
    char *cl = src_path("tests/data/htae/one.xml");
    char *bad = src_path("tests/data/profile/bad_negative.json");
    char *other = src_path("tests/data/profile/other_device.json");
    char *rep = tmp_path(dir, "r.json");
    const char *a[] = {"run", plan, "--cluster", cl, "--profile", bad, "--json", rep, NULL};
    run_result r = run_protosim(dir, a);
    r.json_written = slurp(rep, NULL) != NULL;
    const char *needles[] = {"bad_negative.json", "entries[2].seconds", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    const char *b[] = {"run", plan, "--cluster", cl, "--profile", other, NULL};
    r = run_protosim(dir, b);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "warning") && strstr(r.err, "H100-SXM5-80GB"), "%s", r.err);
    ck_assert_msg(strstr(r.out, "nothing matched") != NULL, "%s", r.out);
    run_free(&r);
    free(plan);
    free(cl);
    free(bad);
    free(other);
    free(rep);
    remove_tmpdir(dir);
}
END_TEST

/* profile's usage errors: no -o, an unknown --device. */
START_TEST(profile_usage_errors)
{
    char *dir = make_tmpdir();
    char *trace = src_path("tests/data/profile/ops.json");
    char *ops = tmp_path(dir, "ops.json");
    const char *a[] = {"profile", trace, NULL};
    run_result r = run_protosim(dir, a);
    const char *n1[] = {"profile needs -o OPS.json", NULL};
    expect_bad_input(&r, n1);
    run_free(&r);
    const char *b[] = {"profile", trace, "-o", ops, "--device", "H100", NULL};
    r = run_protosim(dir, b);
    const char *n2[] = {"--device: no device 'H100'", NULL};
    expect_bad_input(&r, n2);
    run_free(&r);
    ck_assert_ptr_null(slurp(ops, NULL));
    free(trace);
    free(ops);
    remove_tmpdir(dir);
}
END_TEST

/* The iteration time of plan 0 (recompute none) of a sweep's --json file. */
static double sweep_plan0(const char *path)
{
    cJSON *j = parse_json_file(path);
    const cJSON *plans = cJSON_GetObjectItem(j, "plans");
    const cJSON *p = NULL, *it;
    cJSON_ArrayForEach(it, plans) if (num_field(it, "index") == 0) p = it;
    ck_assert_ptr_nonnull(p);
    double t = num_field(p, "iteration_time_s");
    cJSON_Delete(j);
    return t;
}

/* sweep --profile costs its plans as run --profile: the one-GEMM table's plan 0 (the
 * one-layer plan without recompute) takes the run's iteration time exactly; without the table
 * the sweep's is shorter (fc1's forward at the model's ~20 us instead of 20 ms). */
START_TEST(sweep_with_profile_as_run)
{
    char *dir = make_tmpdir();
    char *sw = src_path("tests/data/profile/sweep.yaml");
    char *cl = src_path("tests/data/htae/one.xml");
    char *plan = src_path("tests/data/profile/one-layer.yaml");
    char *table = src_path("tests/data/profile/one_gemm.json");
    char *s1 = tmp_path(dir, "s1.json"), *s0 = tmp_path(dir, "s0.json"),
         *rep = tmp_path(dir, "r.json");
    const char *a[] = {"sweep",  sw, "--cluster", cl,  "--profile",     table,
                       "--json", s1, "-j",        "1", "--no-progress", NULL};
    run_result r = run_protosim(dir, a);
    expect_exit(&r, 0);
    run_free(&r);
    const char *b[] = {"sweep", sw,  "--cluster",     cl,  "--json", s0,
                       "-j",    "1", "--no-progress", NULL};
    r = run_protosim(dir, b);
    expect_exit(&r, 0);
    run_free(&r);
    const char *c[] = {"run", plan, "--cluster", cl, "--profile", table, "--json", rep, "-q", NULL};
    r = run_protosim(dir, c);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *j = parse_json_file(rep);
    double want = num_field(j, "iteration_time_s");
    cJSON_Delete(j);
    ck_assert(sweep_plan0(s1) == want);
    ck_assert(sweep_plan0(s0) < want);
    free(sw);
    free(cl);
    free(plan);
    free(table);
    free(s1);
    free(s0);
    free(rep);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {profile_then_run, run_with_bad_or_foreign_table,
                                  profile_usage_errors, sweep_with_profile_as_run, NULL};
    return suite_run(suite_of("profile_cli", "profile_cli", 120, tests));
}
