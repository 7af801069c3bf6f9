/* test_trace.c: run --trace, --trace-ranks and --trace-steps through the binary (PROTOSIM_BIN):
 * the written file is valid Chrome trace JSON (parsed with cJSON: named processes and threads,
 * complete events with name, pid, tid, ts, dur >= 0, flow start/finish events paired by id),
 * cut down to the listed GPUs and the first micro-batches; bad rank lists name the option. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli_util.h"

static const char *dp2_tp2 = "strategies/examples/gpt3-1.3b-dp2-tp2.yaml";
static const char *pp2_dp2 = "strategies/examples/gpt3-1.3b-pp2-dp2.yaml";
static const char *dgx4 = "topology/clusters/dgx4.xml";

#define MAX_PID   8
#define MAX_FLOWS 4096

/* What a checked trace holds. */
typedef struct trace_facts {
    int x_count, flows, pp_sends;
    int x_pids[MAX_PID]; /* complete events per pid */
    int max_micro;       /* largest args.micro_batch of a complete event */
    long size;           /* bytes */
} trace_facts;

static const cJSON *field(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A metadata event: process_name and thread_name carry args.name. */
static void check_metadata(const cJSON *e, int *named_pid, int (*named_tid)[8])
{
    const cJSON *name = field(e, "name"), *pid = field(e, "pid"), *args = field(e, "args");
    ck_assert_msg(cJSON_IsString(name) && cJSON_IsNumber(pid) && cJSON_IsObject(args),
                  "M event without name, pid or args");
    ck_assert_int_lt(pid->valueint, MAX_PID);
    int is_proc = !strcmp(name->valuestring, "process_name");
    int is_thread = !strcmp(name->valuestring, "thread_name");
    if (is_proc || is_thread)
        ck_assert_msg(cJSON_IsString(field(args, "name")), "%s without args.name",
                      name->valuestring);
    if (is_proc)
        named_pid[pid->valueint] = 1;
    if (is_thread) {
        const cJSON *tid = field(e, "tid");
        ck_assert_msg(cJSON_IsNumber(tid) && tid->valueint >= 0 && tid->valueint < 8,
                      "thread_name without tid");
        named_tid[pid->valueint][tid->valueint] = 1;
    }
}

/* A complete event: name, pid, tid, ts, dur >= 0, on a named process and thread. */
static void check_complete(const cJSON *e, const int *named_pid, int (*named_tid)[8],
                           trace_facts *out)
{
    const cJSON *pid = field(e, "pid"), *tid = field(e, "tid"), *ts = field(e, "ts"),
                *dur = field(e, "dur"), *args = field(e, "args");
    ck_assert_msg(cJSON_IsString(field(e, "name")), "X event without a name");
    ck_assert_msg(cJSON_IsNumber(pid) && cJSON_IsNumber(tid) && cJSON_IsNumber(ts) &&
                      cJSON_IsNumber(dur),
                  "X event without pid, tid, ts or dur");
    ck_assert_msg(dur->valuedouble >= 0 && ts->valuedouble >= 0, "X event: ts %g dur %g",
                  ts->valuedouble, dur->valuedouble);
    ck_assert_int_lt(pid->valueint, MAX_PID);
    ck_assert_msg(named_pid[pid->valueint] && named_tid[pid->valueint][tid->valueint],
                  "X event on an unnamed process %d or thread %d", pid->valueint, tid->valueint);
    out->x_count++;
    out->x_pids[pid->valueint]++;
    const cJSON *micro = field(args, "micro_batch");
    ck_assert_msg(cJSON_IsNumber(micro), "X event without args.micro_batch");
    if (micro->valueint > out->max_micro)
        out->max_micro = micro->valueint;
    const cJSON *cat = field(e, "cat");
    if (cJSON_IsString(cat) && !strcmp(cat->valuestring, "pp-comm"))
        out->pp_sends++;
}

/* Flow events: every id has exactly one "s" and one "f" (with "bp":"e"), finish not before
 * start. */
static void check_flows(const cJSON *ev, trace_facts *out)
{
    static double start_ts[MAX_FLOWS];
    static int n_start[MAX_FLOWS], n_finish[MAX_FLOWS];
    memset(n_start, 0, sizeof n_start), memset(n_finish, 0, sizeof n_finish);
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = field(e, "ph")->valuestring;
        if (strcmp(ph, "s") && strcmp(ph, "f"))
            continue;
        const cJSON *id = field(e, "id"), *cat = field(e, "cat");
        ck_assert_msg(cJSON_IsNumber(id) && id->valueint >= 0 && id->valueint < MAX_FLOWS,
                      "flow event without id");
        ck_assert_msg(cJSON_IsString(cat) && !strcmp(cat->valuestring, "flow"), "flow cat");
        ck_assert_msg(cJSON_IsNumber(field(e, "pid")) && cJSON_IsNumber(field(e, "tid")) &&
                          cJSON_IsNumber(field(e, "ts")),
                      "flow event without pid, tid or ts");
        if (ph[0] == 's') {
            n_start[id->valueint]++;
            start_ts[id->valueint] = field(e, "ts")->valuedouble;
        } else {
            const cJSON *bp = field(e, "bp");
            ck_assert_msg(cJSON_IsString(bp) && !strcmp(bp->valuestring, "e"), "f without bp e");
            n_finish[id->valueint]++;
        }
    }
    cJSON_ArrayForEach(e, ev)
    {
        if (strcmp(field(e, "ph")->valuestring, "f"))
            continue;
        int id = field(e, "id")->valueint;
        ck_assert_msg(field(e, "ts")->valuedouble >= start_ts[id], "flow %d ends first", id);
    }
    for (int i = 0; i < MAX_FLOWS; i++) {
        ck_assert_msg(n_start[i] == n_finish[i] && n_start[i] <= 1, "flow %d: %d s, %d f", i,
                      n_start[i], n_finish[i]);
        out->flows += n_start[i];
    }
}

/* Parse the trace at path and check it; what it holds goes to *out. */
static void check_trace(const char *path, trace_facts *out)
{
    memset(out, 0, sizeof *out);
    out->max_micro = -1;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    out->size = (long)st.st_size;
    cJSON *t = parse_json_file(path);
    const cJSON *ev = field(t, "traceEvents");
    ck_assert_msg(cJSON_IsArray(ev), "trace lacks a traceEvents array");
    int named_pid[MAX_PID] = {0}, named_tid[MAX_PID][8];
    memset(named_tid, 0, sizeof named_tid);
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *ph = field(e, "ph");
        ck_assert_msg(cJSON_IsString(ph), "trace event without a 'ph' string");
        if (!strcmp(ph->valuestring, "M"))
            check_metadata(e, named_pid, named_tid);
    }
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = field(e, "ph")->valuestring;
        ck_assert_msg(!strcmp(ph, "M") || !strcmp(ph, "X") || !strcmp(ph, "s") || !strcmp(ph, "f"),
                      "unexpected ph '%s'", ph);
        if (!strcmp(ph, "X"))
            check_complete(e, named_pid, named_tid, out);
    }
    check_flows(ev, out);
    cJSON_Delete(t);
}

/* Run `run STRATEGY --cluster dgx4 --trace DIR/NAME [extra...] -q`, expect exit 0, check. */
static void traced_run(const char *dir, const char *strategy, const char *name, const char *extra1,
                       const char *extra2, trace_facts *out)
{
    char *strat = src_path(strategy), *cl = src_path(dgx4), *trace = tmp_path(dir, name);
    const char *args[] = {"run", strat, "--cluster", cl,     "--trace",
                          trace, "-q",  extra1,      extra2, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    check_trace(trace, out);
    free(strat), free(cl), free(trace);
}

START_TEST(full_trace_is_valid_with_flows)
{
    char *dir = make_tmpdir();
    trace_facts f;
    traced_run(dir, pp2_dp2, "pp.json", NULL, NULL, &f);
    /* 2 stages, 8 micro-batches, one replica simulated: 8 activations forward, 8 gradients
     * backward, each with its arrow to the task that consumes it on the other stage */
    ck_assert_int_eq(f.pp_sends, 16);
    ck_assert_int_eq(f.flows, 16);
    ck_assert_int_eq(f.max_micro, 7);
    traced_run(dir, dp2_tp2, "dp.json", NULL, NULL, &f);
    ck_assert_int_eq(f.flows, 0); /* no pipeline: no point-to-point transfers */
    for (int p = 0; p < 4; p++)
        ck_assert_msg(f.x_pids[p] > 0, "no complete events on pid %d", p);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(trace_ranks_keeps_listed_gpus)
{
    char *dir = make_tmpdir();
    trace_facts all, some;
    traced_run(dir, dp2_tp2, "all.json", NULL, NULL, &all);
    traced_run(dir, dp2_tp2, "r01.json", "--trace-ranks", "0-1", &some);
    ck_assert_int_gt(some.x_pids[0], 0);
    ck_assert_int_gt(some.x_pids[1], 0);
    ck_assert_int_eq(some.x_pids[2], 0);
    ck_assert_int_eq(some.x_pids[3], 0);
    ck_assert_int_eq(some.x_pids[0], all.x_pids[0]);
    ck_assert_int_eq(some.x_pids[1], all.x_pids[1]);
    ck_assert_int_eq(some.x_count, all.x_pids[0] + all.x_pids[1]);
    ck_assert_int_lt(some.size, all.size);
    /* a list and a range: ranks 0 and 2 are the two stages of replica 0, arrows kept */
    traced_run(dir, pp2_dp2, "r02.json", "--trace-ranks", "2,0-0", &some);
    ck_assert_int_eq(some.flows, 16);
    ck_assert_int_eq(some.x_pids[1] + some.x_pids[3], 0);
    /* the other end left out: no arrows */
    traced_run(dir, pp2_dp2, "r0.json", "--trace-ranks", "0", &some);
    ck_assert_int_eq(some.flows, 0);
    ck_assert_int_gt(some.pp_sends, 0);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(trace_steps_keeps_first_micro_batches)
{
    char *dir = make_tmpdir();
    trace_facts all, one, two;
    traced_run(dir, dp2_tp2, "all.json", NULL, NULL, &all);
    traced_run(dir, dp2_tp2, "s1.json", "--trace-steps", "1", &one);
    ck_assert_int_eq(one.max_micro, 0);
    ck_assert_int_lt(one.size, all.size);
    traced_run(dir, pp2_dp2, "pp1.json", "--trace-steps", "1", &one);
    ck_assert_int_eq(one.max_micro, 0);
    ck_assert_int_eq(one.flows, 2); /* micro-batch 0 forward and backward */
    traced_run(dir, pp2_dp2, "pp2.json", "--trace-steps", "2", &two);
    ck_assert_int_eq(two.max_micro, 1);
    ck_assert_int_eq(two.flows, 4);
    remove_tmpdir(dir);
}
END_TEST

/* Bad rank lists and counts: exit 1 naming the option, no trace written. */
START_TEST(bad_trace_options_name_the_option)
{
    char *dir = make_tmpdir();
    char *strat = src_path(dp2_tp2), *cl = src_path(dgx4), *trace = tmp_path(dir, "t.json");
    static const struct {
        const char *opt, *value, *needle;
    } cases[] = {
        {"--trace-ranks", "0-4",
         "--trace-ranks: rank 4 is not in the plan (it has 4 GPUs, ranks "
         "0-3)"},
        {"--trace-ranks", "9", "--trace-ranks: rank 9 is not in the plan"},
        {"--trace-ranks", "3-1", "--trace-ranks: bad rank list '3-1'"},
        {"--trace-ranks", "0,,1", "--trace-ranks: bad rank list '0,,1'"},
        {"--trace-ranks", "", "--trace-ranks: bad rank list ''"},
        {"--trace-ranks", "-1", "--trace-ranks: bad rank list '-1'"},
        {"--trace-ranks", "0-", "--trace-ranks: bad rank list '0-'"},
        {"--trace-ranks", "a", "--trace-ranks: bad rank list 'a'"},
        {"--trace-steps", "0", "--trace-steps: bad micro-batch count '0'"},
        {"--trace-steps", "x", "--trace-steps: bad micro-batch count 'x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"run", strat,        "--cluster",    cl,  "--trace",
                              trace, cases[i].opt, cases[i].value, NULL};
        run_result r = run_protosim(dir, args);
        const char *needles[] = {cases[i].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
        struct stat st;
        ck_assert_msg(stat(trace, &st) != 0, "%s %s: trace written", cases[i].opt, cases[i].value);
    }
    const char *no_trace[] = {"run", strat, "--cluster", cl, "--trace-ranks", "0", NULL};
    run_result r = run_protosim(dir, no_trace);
    const char *needles[] = {"--trace-ranks needs --trace OUT.trace.json", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(strat), free(cl), free(trace);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, full_trace_is_valid_with_flows);
    tcase_add_test(tc, trace_ranks_keeps_listed_gpus);
    tcase_add_test(tc, trace_steps_keeps_first_micro_batches);
    tcase_add_test(tc, bad_trace_options_name_the_option);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
