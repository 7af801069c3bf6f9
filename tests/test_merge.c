/* test_merge.c: `protosim merge` reads a shard's records against the schema sweep writes
 * (issue 14): every bad record is exit 1 naming the file and the field's JSON path, never a
 * crash, an allocation by an input number or a loop; --plot stays small for any finite input.
 * Fixtures: tests/data/e2e/merge-*.json, each merge-base.json with one field changed. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "suite_util.h"

static run_result run_merge(const char *dir, const char *fixture, const char *plot)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tests/data/e2e/merge-%s.json", fixture);
    char *in = src_path(rel);
    const char *args[] = {"merge", in, plot ? "--plot" : NULL, plot, NULL};
    run_result r = run_protosim(dir, args);
    free(in);
    return r;
}

typedef struct bad_shard {
    const char *fixture;
    const char *path;   /* the field's JSON path the message names */
    const char *needle; /* and what it says */
} bad_shard;

static const bad_shard bad[] = {
    {"shard-empty", "sweep.shard", "[k, n]"},            /* SIGSEGV before */
    {"shard-one", "sweep.shard", "[k, n]"},              /* SIGSEGV before */
    {"huge-tensor", "plans[0].tensor", "got 1e+300"},    /* float-to-int overflow */
    {"huge-index", "plans[0].index", "got 1e+300"},      /* float-to-int overflow */
    {"pending", "plans[0].status", "pending"},           /* accepted before */
    {"tensor-string", "plans[0].tensor", "integer"},     /* "x" became tp0 */
    {"unknown-schedule", "plans[0].schedule", "zigzag"}, /* became gpipe */
    {"negative-rate", "plans[0].tokens_per_s", ">= 0"},
    {"tensor-product", "plans[0]", "not the plan's 4 GPUs"},
};

START_TEST(bad_record_names_its_json_path)
{
    const bad_shard *b = &bad[_i];
    char *dir = make_tmpdir();
    run_result r = run_merge(dir, b->fixture, NULL);
    char file[96], field[96];
    snprintf(file, sizeof file, "merge-%s.json", b->fixture);
    snprintf(field, sizeof field, "field '%s'", b->path);
    const char *needles[] = {file, field, b->needle, NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* A file that is not JSON: the line and column where cJSON stopped (the `oops` of line 3). */
START_TEST(not_json_is_located)
{
    char *dir = make_tmpdir();
    run_result r = run_merge(dir, "not-json", NULL);
    const char *needles[] = {"merge-not-json.json", "not JSON", NULL};
    expect_bad_input(&r, needles);
    ck_assert_msg(location_line(r.err, "merge-not-json.json") == 3, "stderr:\n%s", r.err);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* Shard 1 of 2147483647: a negative calloc before; now the count alone, and a warning. */
START_TEST(huge_shard_count_allocates_nothing)
{
    char *dir = make_tmpdir();
    run_result r = run_merge(dir, "shard-huge", NULL);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "2147483646 of 2147483647 shards missing") != NULL, "stderr:\n%s",
                  r.err);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* No plans (qsort on NULL before): an empty ranking. */
START_TEST(no_plans_is_an_empty_ranking)
{
    char *dir = make_tmpdir();
    run_result r = run_merge(dir, "no-plans", NULL);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "0 plans") != NULL, "stdout:\n%s", r.out);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* tokens_per_s 1.7e308 looped forever writing gigabytes of SVG: the axis rounded up to inf.
 * Now 5 grid steps of 3.4e307 (1.7e308 / 5, no round step fits below DBL_MAX), a small file. */
START_TEST(plot_bounds_its_axis)
{
    const char *fixtures[] = {"huge-rate", "base"};
    for (int i = 0; i < 2; i++) {
        char *dir = make_tmpdir();
        char *svg = tmp_path(dir, "plot.svg");
        run_result r = run_merge(dir, fixtures[i], svg);
        expect_exit(&r, 0);
        struct stat st;
        ck_assert_int_eq(stat(svg, &st), 0);
        ck_assert_msg(st.st_size > 0 && st.st_size < 100000, "%s: %lld bytes", fixtures[i],
                      (long long)st.st_size);
        char *text = slurp(svg, NULL);
        if (i == 0)
            ck_assert_msg(strstr(text, ">3.4e+301M<") && strstr(text, ">1.7e+302M<"),
                          "y ticks of the huge rate:\n%s", text);
        free(text);
        run_free(&r);
        free(svg);
        remove_tmpdir(dir);
    }
}
END_TEST

static Suite *merge_suite(void)
{
    Suite *s = suite_create("merge");
    const TTest *const tests[] = {not_json_is_located, huge_shard_count_allocates_nothing,
                                  no_plans_is_an_empty_ranking, plot_bounds_its_axis, NULL};
    TCase *t = suite_add_tests(s, "merge", 60, tests);
    tcase_add_loop_test(t, bad_record_names_its_json_path, 0, (int)(sizeof bad / sizeof *bad));
    return s;
}

int main(void)
{
    return suite_run(merge_suite());
}
