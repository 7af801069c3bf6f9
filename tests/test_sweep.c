/* test_sweep.c: sweeps: enumeration counted by hand (in process), and through the protosim
 * binary (PROTOSIM_BIN): OOM plans, ranking equal to single runs, shards merged equal to the
 * whole sweep, bad sweep files with locations, a crashing worker reported as failed, and
 * twins (plans with one compiled plan) simulated once. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../sim/base/vocab.h"
#include "../strategies/sweep_plan.h"
#include "cli_util.h"
#include "suite_util.h"

/* Removes a temporary directory made by make_tmpdir (flat: the tests write no subfolders). */
/* Whole file into a NUL-terminated buffer; NULL if it cannot be read. *len gets the size. */
/* Runs PROTOSIM_BIN with args (NULL-terminated, without argv[0]) capturing stdout/stderr in
 * files under tmpdir. Fails the test if the process cannot be started. */
/* Asserts the process exited normally (no signal) with the expected code. */
/* Line of "NAME:LINE:COL" in text after the file name `name`, or -1 if no such location. */
static const cJSON *plans_of(const cJSON *root)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "plans");
    ck_assert_msg(cJSON_IsArray(p), "no plans array");
    return p;
}

static double numf(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "field '%s' missing", k);
    return v->valuedouble;
}

static const char *strf(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    ck_assert_msg(cJSON_IsString(v), "field '%s' missing", k);
    return v->valuestring;
}

static int count_status(const cJSON *root, const char *status)
{
    int n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(root)) n += !strcmp(strf(p, "status"), status);
    return n;
}

/* protosim sweep tests/data/sweep/NAME.yaml --cluster dgx4 --json DIR/OUT [extra...] */
static run_result run_sweep(const char *dir, const char *name, const char *json, const char *extra1,
                            const char *extra2)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/data/sweep/%s.yaml", name);
    char *sweep = src_path(rel), *cl = src_path("topology/clusters/dgx4.xml");
    char *out = tmp_path(dir, json);
    const char *args[] = {"sweep",  sweep, "--cluster", cl,     "-j", "2",
                          "--json", out,   extra1,      extra2, NULL};
    run_result r = run_protosim(dir, args);
    free(sweep);
    free(cl);
    free(out);
    return r;
}

/* ---------------------------------------------------------------- tests */

START_TEST(enumeration_counts_by_hand)
{
    /* 3 tensor x 3 pipeline x 2 micro-batch = 18 on 8 GPUs, heads 6, layers 6, batch 8:
     * tp4 pp4: 16 GPUs (2, gpus); tp4 with pp 1|2: heads (4); pp4 with tp 1|2: layers (4);
     * tp1 pp1 dp8 mb2: batch (1). Valid: 7. */
    char *path = src_path("tests/data/sweep/enum.yaml");
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 8, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 18);
    int valid = 0, gpus = 0, heads = 0, layers = 0, batch = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(plans[i].index, i);
        if (plans[i].status == SWEEP_PLAN_PENDING) {
            valid++;
            ck_assert_int_eq(plans[i].desc.tp * plans[i].desc.pp * plans[i].desc.dp, 8);
            continue;
        }
        ck_assert_int_eq(plans[i].status, SWEEP_PLAN_INVALID);
        const char *k = plans[i].reason_kind;
        gpus += !strcmp(k, "gpus");
        heads += !strcmp(k, "strategy.tensor.degree");
        layers += !strcmp(k, "strategy.pipeline.degree");
        batch += !strcmp(k, "batch.global");
    }
    ck_assert_int_eq(valid, 7);
    ck_assert_int_eq(gpus, 2);
    ck_assert_int_eq(heads, 4);
    ck_assert_int_eq(layers, 4);
    ck_assert_int_eq(batch, 1);
    /* first axis slowest: plan 0 is tp1 pp1 mb1, plan 1 tp1 pp1 mb2, plan 2 tp1 pp2 mb1 */
    ck_assert_int_eq(plans[1].desc.micro_batch, 2);
    ck_assert_int_eq(plans[2].desc.pp, 2);
    free(plans);
    sweep_spec_free(&s);
    free(path);
}
END_TEST

/* The interleaved schedule on 8 GPUs (pp 2, data auto: dp 4), batch 12 / micro 1: 3
 * micro-batches per data-parallel rank, not a multiple of the pipeline degree 2. Of schedule
 * {1f1b, interleaved} x virtual_stages {1, 2} only 1f1b v1 is valid: 1f1b v2 and interleaved
 * v1 fail strategy_validate (virtual stages), interleaved v2 the micro-batch rule. */
START_TEST(enumeration_interleaved_rules)
{
    char *dir = make_tmpdir(), *path = tmp_path(dir, "interleaved.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("base:\n"
          "  workload: {family: gpt, layers: 8, hidden: 384, heads: 6, seq: 128, vocab: 1000}\n"
          "  batch: {global: 12, micro: 1}\n"
          "axes:\n"
          "  pipeline: [2]\n"
          "  data: auto\n"
          "  schedule: [1f1b, interleaved]\n"
          "  virtual_stages: [1, 2]\n",
          f);
    fclose(f);
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 8, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(plans[0].status, SWEEP_PLAN_PENDING);
    ck_assert_int_eq(plans[0].desc.dp, 4);
    ck_assert_int_eq(plans[1].status, SWEEP_PLAN_INVALID);
    ck_assert_str_eq(plans[1].reason_kind, "strategy.pipeline.virtual_stages");
    ck_assert_int_eq(plans[2].status, SWEEP_PLAN_INVALID);
    ck_assert_str_eq(plans[2].reason_kind, "strategy.pipeline.virtual_stages");
    ck_assert_int_eq(plans[3].status, SWEEP_PLAN_INVALID);
    ck_assert_int_eq(plans[3].desc.schedule, SCHED_INTERLEAVED);
    ck_assert_int_eq(plans[3].desc.virtual_stages, 2);
    ck_assert_str_eq(plans[3].reason_kind, "strategy.pipeline.schedule");
    ck_assert_msg(strstr(plans[3].reason, "(3) to be a multiple of the pipeline degree (2)"),
                  "reason: %s", plans[3].reason);
    free(plans);
    sweep_spec_free(&s);
    free(path);
    remove_tmpdir(dir);
}
END_TEST

/* The `expert` axis sets expert.degree: on Mixtral 8x7B over DP8 the degrees 1, 2, 4 and 8
 * are plans (labelled ep2.. when above 1), 3 does not divide the 8 experts. */
START_TEST(enumeration_expert_axis)
{
    char *dir = make_tmpdir();
    char *path = tmp_path(dir, "ep.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("base:\n"
          "  workload: mixtral-8x7b\n"
          "  batch: {global: 64, micro: 1}\n"
          "  strategy: {data: {degree: 8}}\n"
          "axes:\n"
          "  expert: [1, 2, 3, 4, 8]\n",
          f);
    fclose(f);
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 8, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 5);
    const int ep[5] = {1, 2, 3, 4, 8};
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(plans[i].desc.ep, ep[i]);
        ck_assert_int_eq(plans[i].desc.etp, 1);
        ck_assert_int_eq(plans[i].status, ep[i] == 3 ? SWEEP_PLAN_INVALID : SWEEP_PLAN_PENDING);
    }
    ck_assert_str_eq(plans[2].reason_kind, "strategy.expert.degree");
    char label[128];
    sweep_plan_label(&plans[4], 0, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "tp1 pp1 dp8 mb1 1f1b zero0 none ep8");
    free(plans);
    sweep_spec_free(&s);
    free(path);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(oom_plan_reported_not_simulated)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "oom", "oom.json", NULL, NULL);
    expect_exit(&r, 0);
    char *j = tmp_path(dir, "oom.json");
    cJSON *root = parse_json_file(j);
    ck_assert_int_eq(count_status(root, "ok"), 1);
    ck_assert_int_eq(count_status(root, "oom"), 1);
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(root))
    {
        if (strcmp(strf(p, "status"), "oom"))
            continue;
        ck_assert_int_eq((int)numf(p, "tensor"), 1);
        ck_assert(numf(p, "peak_memory_bytes") > numf(p, "memory_capacity_bytes"));
        ck_assert(!cJSON_HasObjectItem(p, "iteration_time_s")); /* not simulated */
    }
    ck_assert_ptr_nonnull(strstr(r.out, "oom: needs"));
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* Strategy YAML equal to plan p of small.yaml (base: gpt3-1.3b, batch 16/2, SP, defaults). */
static void write_plan_strategy(const char *path, const cJSON *p)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "workload: gpt3-1.3b\nbatch: {global: 16, micro: %d}\nstrategy:\n"
            "  tensor: {degree: %d, sequence_parallel: true}\n"
            "  pipeline: {degree: %d, schedule: %s}\n  data: {degree: %d}\n  recompute: %s\n",
            (int)numf(p, "micro_batch"), (int)numf(p, "tensor"), (int)numf(p, "pipeline"),
            strf(p, "schedule"), (int)numf(p, "data"), strf(p, "recompute"));
    fclose(f);
}

/* `protosim run` of sweep plan p (small.yaml's base with p's fields) on cluster cl: its JSON
 * report, whose iteration time, throughput and peak memory equal p's to the last bit. */
static cJSON *single_run_equals(const char *dir, const cJSON *p, const char *cl)
{
    char *yaml = tmp_path(dir, "plan.yaml"), *out = tmp_path(dir, "plan.json");
    write_plan_strategy(yaml, p);
    const char *args[] = {"run", yaml, "--cluster", cl, "--json", out, "--quiet", NULL};
    run_result rr = run_protosim(dir, args);
    expect_exit(&rr, 0);
    cJSON *single = parse_json_file(out);
    ck_assert_msg(numf(single, "iteration_time_s") == numf(p, "iteration_time_s"),
                  "plan %s: sweep %.17g, run %.17g", strf(p, "plan"), numf(p, "iteration_time_s"),
                  numf(single, "iteration_time_s"));
    ck_assert(numf(single, "tokens_per_s") == numf(p, "tokens_per_s"));
    ck_assert(numf(single, "peak_memory_bytes") == numf(p, "peak_memory_bytes"));
    run_free(&rr);
    unlink(yaml);
    unlink(out);
    free(yaml);
    free(out);
    return single;
}

START_TEST(ranking_matches_single_runs)
{
    char *dir = make_tmpdir();
    /* one worker simulates every plan, one after another */
    run_result r = run_sweep(dir, "small", "all.json", "-j", "1");
    expect_exit(&r, 0);
    char *j = tmp_path(dir, "all.json");
    cJSON *root = parse_json_file(j);
    const cJSON *plans = plans_of(root);
    int ok = count_status(root, "ok");
    ck_assert_int_eq(ok, 10);
    ck_assert_int_eq(count_status(root, "invalid"), 2);
    /* ranks 1..ok in order, iteration times ascending */
    double prev = 0;
    for (int i = 0; i < ok; i++) {
        const cJSON *p = cJSON_GetArrayItem(plans, i);
        ck_assert_int_eq((int)numf(p, "rank"), i + 1);
        ck_assert(numf(p, "iteration_time_s") >= prev);
        prev = numf(p, "iteration_time_s");
    }
    /* the best, a middle and the worst plan equal `protosim run` of the same strategy to the
     * last bit, whatever the worker simulated before them */
    int pick[3] = {0, ok / 2, ok - 1};
    char *cl = src_path("topology/clusters/dgx4.xml");
    for (int k = 0; k < 3; k++)
        cJSON_Delete(single_run_equals(dir, cJSON_GetArrayItem(plans, pick[k]), cl));
    free(cl);
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(shards_merge_to_whole_sweep)
{
    char *dir = make_tmpdir();
    run_result a = run_sweep(dir, "small", "all.json", "-j", "1");
    run_result s1 = run_sweep(dir, "small", "s1.json", "--shard", "1/2");
    run_result s2 = run_sweep(dir, "small", "s2.json", "--shard", "2/2");
    expect_exit(&a, 0);
    expect_exit(&s1, 0);
    expect_exit(&s2, 0);
    char *p1 = tmp_path(dir, "s1.json"), *p2 = tmp_path(dir, "s2.json");
    char *pm = tmp_path(dir, "merged.json"), *pa = tmp_path(dir, "all.json");
    char *csv = tmp_path(dir, "merged.csv");
    const char *args[] = {"merge", p2, p1, "--json", pm, "--csv", csv, NULL};
    run_result m = run_protosim(dir, args);
    expect_exit(&m, 0);
    cJSON *whole = parse_json_file(pa), *merged = parse_json_file(pm);
    const cJSON *wp = plans_of(whole), *mp = plans_of(merged);
    ck_assert_int_eq(cJSON_GetArraySize(wp), 12);
    ck_assert_int_eq(cJSON_GetArraySize(mp), 12);
    for (int i = 0; i < 12; i++) {
        const cJSON *x = cJSON_GetArrayItem(wp, i), *y = cJSON_GetArrayItem(mp, i);
        ck_assert_int_eq((int)numf(x, "index"), (int)numf(y, "index"));
        ck_assert_str_eq(strf(x, "status"), strf(y, "status"));
        if (!strcmp(strf(x, "status"), "ok")) {
            ck_assert(numf(x, "iteration_time_s") == numf(y, "iteration_time_s"));
            ck_assert_int_eq((int)numf(x, "rank"), (int)numf(y, "rank"));
        }
    }
    /* a shard given twice, and a shard of another sweep, are errors */
    const char *dup[] = {"merge", p1, p1, NULL};
    run_result d = run_protosim(dir, dup);
    expect_exit(&d, 1);
    run_result o = run_sweep(dir, "oom", "other.json", "--shard", "1/2");
    char *po = tmp_path(dir, "other.json");
    const char *other[] = {"merge", p1, po, NULL};
    run_result x = run_protosim(dir, other);
    expect_exit(&x, 1);
    ck_assert_ptr_nonnull(strstr(x.err, "different sweep"));
    cJSON_Delete(whole);
    cJSON_Delete(merged);
    run_free(&a);
    run_free(&s1);
    run_free(&s2);
    run_free(&m);
    run_free(&d);
    run_free(&o);
    run_free(&x);
    free(p1);
    free(p2);
    free(pm);
    free(pa);
    free(po);
    free(csv);
    remove_tmpdir(dir);
}
END_TEST

static void expect_bad_sweep(const char *name, long line, const char *needle)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, name, "bad.json", NULL, NULL);
    expect_exit(&r, 1);
    char file[64];
    snprintf(file, sizeof file, "%s.yaml", name);
    ck_assert_msg(location_line(r.err, file) == line, "%s: expected line %ld in:\n%s", name, line,
                  r.err);
    ck_assert_msg(strstr(r.err, needle) != NULL, "%s: stderr lacks '%s':\n%s", name, needle, r.err);
    char *j = tmp_path(dir, "bad.json");
    ck_assert_msg(access(j, F_OK) != 0, "%s: --json written despite the error", name);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}

START_TEST(bad_sweep_files)
{
    expect_bad_sweep("bad_axis", 4, "unknown axis 'heads'");
    expect_bad_sweep("empty_axis", 4, "empty list");
    expect_bad_sweep("bad_gpus", 6, "impossible constraint");
    expect_bad_sweep("no_valid", 3, "none of the 2 combinations");
    expect_bad_sweep("gpus_beyond", 3, "8 GPUs, but the cluster");
    expect_bad_sweep("gpus_twice", 6, "drop constraints.gpus");
}
END_TEST

START_TEST(crashing_worker_is_reported)
{
    char *dir = make_tmpdir();
    setenv("PROTOSIM_SWEEP_CRASH_PLAN", "0", 1);
    /* one worker: plan 0 kills it, another takes the nine plans left */
    run_result r = run_sweep(dir, "small", "crash.json", "-j", "1");
    unsetenv("PROTOSIM_SWEEP_CRASH_PLAN");
    expect_exit(&r, 0);
    char *j = tmp_path(dir, "crash.json");
    cJSON *root = parse_json_file(j);
    ck_assert_int_eq(count_status(root, "failed"), 1);
    ck_assert_int_eq(count_status(root, "ok"), 9);
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(root)) if (!strcmp(strf(p, "status"), "failed"))
    {
        ck_assert_int_eq((int)numf(p, "index"), 0);
        ck_assert_ptr_nonnull(strstr(strf(p, "reason"), "SIGSEGV"));
    }
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* A plan that fails in the simulator ends its worker (a stalled run may leave the engine with
 * actors); another worker simulates the nine plans left, as they would be alone. */
START_TEST(failed_plan_ends_its_worker)
{
    char *dir = make_tmpdir();
    setenv("PROTOSIM_SWEEP_FAIL_PLAN", "1", 1);
    run_result r = run_sweep(dir, "small", "fail.json", "-j", "1");
    unsetenv("PROTOSIM_SWEEP_FAIL_PLAN");
    run_result whole = run_sweep(dir, "small", "all.json", "-j", "1");
    expect_exit(&r, 0);
    expect_exit(&whole, 0);
    char *j = tmp_path(dir, "fail.json"), *ja = tmp_path(dir, "all.json");
    cJSON *root = parse_json_file(j), *all = parse_json_file(ja);
    ck_assert_int_eq(count_status(root, "failed"), 1);
    ck_assert_int_eq(count_status(root, "ok"), 9);
    double time_of[12] = {0};
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(all)) if (!strcmp(strf(p, "status"), "ok"))
    {
        time_of[(int)numf(p, "index")] = numf(p, "iteration_time_s");
    }
    cJSON_ArrayForEach(p, plans_of(root))
    {
        int index = (int)numf(p, "index");
        if (!strcmp(strf(p, "status"), "failed")) {
            ck_assert_int_eq(index, 1);
            ck_assert_ptr_nonnull(strstr(strf(p, "reason"), "PROTOSIM_SWEEP_FAIL_PLAN"));
        } else if (!strcmp(strf(p, "status"), "ok")) {
            ck_assert(numf(p, "iteration_time_s") == time_of[index]);
        }
    }
    cJSON_Delete(root);
    cJSON_Delete(all);
    free(j);
    free(ja);
    run_free(&r);
    run_free(&whole);
    remove_tmpdir(dir);
}
END_TEST

/* Plans with the same compiled plan (twins.yaml: 4 pairs, by hand there) are simulated once:
 * each pair's second plan takes the first's record (sim_wall_s 0), and every record equals the
 * one --simulate-all writes. */
START_TEST(twins_take_their_plans_record)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "twins", "twins.json", NULL, NULL);
    run_result a = run_sweep(dir, "twins", "all.json", "--simulate-all", NULL);
    expect_exit(&r, 0);
    expect_exit(&a, 0);
    ck_assert_msg(strstr(r.err, "8 simulated (4 of them twins") != NULL, "%s", r.err);
    ck_assert_msg(strstr(a.err, "8 simulated, ") != NULL, "%s", a.err);
    char *pt = tmp_path(dir, "twins.json"), *pa = tmp_path(dir, "all.json");
    cJSON *tw = parse_json_file(pt), *all = parse_json_file(pa);
    const cJSON *tp = plans_of(tw), *ap = plans_of(all);
    ck_assert_int_eq(cJSON_GetArraySize(tp), 8);
    ck_assert_int_eq(cJSON_GetArraySize(ap), 8);
    int unsimulated = 0;
    double time_of[8] = {0}, memory_of[8] = {0};
    for (int i = 0; i < 8; i++) {
        cJSON *x = cJSON_GetArrayItem(tp, i), *y = cJSON_GetArrayItem(ap, i);
        ck_assert_str_eq(strf(x, "status"), "ok");
        unsimulated += numf(x, "sim_wall_s") == 0;
        ck_assert(numf(y, "sim_wall_s") > 0);
        time_of[(int)numf(x, "index")] = numf(x, "iteration_time_s");
        memory_of[(int)numf(x, "index")] = numf(x, "peak_memory_bytes");
        cJSON_DeleteItemFromObjectCaseSensitive(x, "sim_wall_s");
        cJSON_DeleteItemFromObjectCaseSensitive(y, "sim_wall_s");
        ck_assert_msg(cJSON_Compare(x, y, 1), "plan %s differs from --simulate-all's",
                      strf(x, "plan"));
    }
    ck_assert_int_eq(unsimulated, 4);
    /* index: tensor slowest, then schedule, then zero: tp1 {gpipe, 1f1b} x {zero 0, 1},
     * tp4 likewise. Twins: 0 2, 1 3, 4 5, 6 7; ZeRO 1 over 4 ranks holds less than ZeRO 0, and
     * tp4's 1F1B holds fewer micro-batches' activations than GPipe (same time: no pipeline) */
    ck_assert(time_of[0] == time_of[2] && time_of[1] == time_of[3]);
    ck_assert(memory_of[0] == memory_of[2] && memory_of[1] == memory_of[3]);
    ck_assert(time_of[4] == time_of[5] && time_of[6] == time_of[7]);
    ck_assert(memory_of[4] == memory_of[5] && memory_of[6] == memory_of[7]);
    ck_assert(memory_of[1] < memory_of[0] && memory_of[6] < memory_of[4]);
    cJSON_Delete(tw);
    cJSON_Delete(all);
    free(pt);
    free(pa);
    run_free(&r);
    run_free(&a);
    remove_tmpdir(dir);
}
END_TEST

/* A twin whose plan crashed is simulated on its own: plan 0 (tp1 gpipe zero 0) dies with one
 * worker, its twin plan 2 (1f1b) runs after it and is ok. */
START_TEST(twin_of_a_crashed_plan_is_simulated)
{
    char *dir = make_tmpdir();
    setenv("PROTOSIM_SWEEP_CRASH_PLAN", "0", 1);
    run_result r = run_sweep(dir, "twins", "crash.json", "-j", "1");
    unsetenv("PROTOSIM_SWEEP_CRASH_PLAN");
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "7 simulated (3 of them twins") != NULL, "%s", r.err);
    char *j = tmp_path(dir, "crash.json");
    cJSON *root = parse_json_file(j);
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(root))
    {
        int index = (int)numf(p, "index");
        if (index == 0)
            ck_assert_str_eq(strf(p, "status"), "failed");
        else
            ck_assert_str_eq(strf(p, "status"), "ok");
        if (index == 2)
            ck_assert(numf(p, "sim_wall_s") > 0);
    }
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(bundled_sweep_outputs)
{
    char *dir = make_tmpdir();
    char *sweep = src_path("strategies/examples/sweep-gpt3-1.3b-dgx4.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    char *svg = tmp_path(dir, "s.svg"), *csv = tmp_path(dir, "s.csv");
    const char *args[] = {"sweep", sweep, "--cluster", cl, "--plot", svg, "--csv", csv, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    char *text = slurp(svg, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "<svg"));
    ck_assert_ptr_nonnull(strstr(text, "pipeline degree"));
    ck_assert_ptr_nonnull(strstr(text, "</svg>"));
    free(text);
    text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert(!strncmp(text, "rank,index,plan,status", 22));
    free(text);
    free(sweep);
    free(cl);
    free(svg);
    free(csv);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* The zero axis takes 0-3; ZeRO 2 with a pipeline is not modelled (strategy_validate; ZeRO 3
 * with one runs as PyTorch's pipelining runs FSDP): pipeline {1, 2} x zero {0, 1, 2, 3} on 4
 * GPUs (data auto) leaves 7 valid plans, and the pipelined ZeRO 2 plan invalid at
 * strategy.data.zero. */
START_TEST(enumeration_zero_rules)
{
    char *dir = make_tmpdir(), *path = tmp_path(dir, "zero.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("base:\n"
          "  workload: {family: gpt, layers: 8, hidden: 384, heads: 6, seq: 128, vocab: 1000}\n"
          "  batch: {global: 8, micro: 1}\n"
          "axes:\n"
          "  pipeline: [1, 2]\n"
          "  data: auto\n"
          "  zero: [0, 1, 2, 3]\n",
          f);
    fclose(f);
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 4, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 8);
    for (int i = 0; i < n; i++) {
        const plan_desc *d = &plans[i].desc;
        ck_assert_int_eq(d->zero, i % 4);
        if (d->pp == 2 && d->zero == 2) {
            ck_assert_int_eq(plans[i].status, SWEEP_PLAN_INVALID);
            ck_assert_str_eq(plans[i].reason_kind, "strategy.data.zero");
        } else {
            ck_assert_int_eq(plans[i].status, SWEEP_PLAN_PENDING);
        }
    }
    free(plans);
    sweep_spec_free(&s);
    free(path);
    remove_tmpdir(dir);
}
END_TEST

/* Memory pruning follows each ZeRO stage's memory (tests/data/sweep/zero.yaml: GPT-3 6.7B, data
 * 4 on dgx4): ZeRO 0 and 1 are oom, 2 and 3 simulated. By hand, P = 6 871 982 080 parameters
 * (L 32, h 4096, s 2048, v 51200; see test_zero): ZeRO 2 shards the fp32 gradients, 3P bytes
 * less than ZeRO 1; ZeRO 3 the bf16 weights (1.5P less) but holds two units in flight (the
 * largest neighbours with one micro-batch: the embedding and layer 0, bf16) and the embedding's
 * fp32 gradients, and no gradient buckets (2 x 25 MB). */
START_TEST(zero_stages_pruned_by_their_memory)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "zero", "zero.json", NULL, NULL);
    expect_exit(&r, 0);
    char *j = tmp_path(dir, "zero.json");
    cJSON *root = parse_json_file(j);
    double peak[4] = {0, 0, 0, 0};
    const cJSON *p;
    cJSON_ArrayForEach(p, plans_of(root))
    {
        int z = (int)numf(p, "zero");
        ck_assert(z >= 0 && z < 4);
        ck_assert_str_eq(strf(p, "status"), z < 2 ? "oom" : "ok");
        peak[z] = numf(p, "peak_memory_bytes");
    }
    double h = 4096, s = 2048, v = 51200;
    double emb = (v + s) * h, layer = 12 * h * h + 13 * h;
    double P = emb + 32 * layer + 2 * h; /* GPT ties the LM head to the word embedding */
    ck_assert(peak[0] > peak[1]);
    ck_assert(fabs((peak[1] - peak[2]) - 3 * P) <= 1e-9 * P);
    double z3_less = 1.5 * P - 2 * (emb + layer) - 4 * emb + 2 * 25e6;
    ck_assert_msg(fabs((peak[2] - peak[3]) - z3_less) <= 1e-9 * P, "got %.0f, want %.0f",
                  peak[2] - peak[3], z3_less);
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* The shard_degree axis (HSDP): zero {0, 3} x shard_degree {1, 2, 4, 3} on 4 GPUs, data 4: a
 * shard degree needs ZeRO (the 4 zero-0 plans invalid at strategy.data.shard_degree) and must
 * divide the data degree (3 does not); zero 3 with 1, 2 and 4 remain, labelled "shardN". */
START_TEST(enumeration_shard_degree_rules)
{
    char *dir = make_tmpdir(), *path = tmp_path(dir, "shard.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("base:\n"
          "  workload: {family: gpt, layers: 8, hidden: 384, heads: 6, seq: 128, vocab: 1000}\n"
          "  batch: {global: 8, micro: 1}\n"
          "  strategy: {data: {degree: 4}}\n"
          "axes:\n"
          "  zero: [0, 3]\n"
          "  shard_degree: [1, 2, 4, 3]\n",
          f);
    fclose(f);
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 4, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 8);
    const int shard[4] = {1, 2, 4, 3};
    int pending = 0;
    for (int i = 0; i < n; i++) {
        const plan_desc *d = &plans[i].desc;
        ck_assert_int_eq(d->zero, i < 4 ? 0 : 3); /* zero varies slower than shard_degree */
        ck_assert_int_eq(d->shard_degree, shard[i % 4]);
        if (d->zero == 0 || d->shard_degree == 3) {
            ck_assert_int_eq(plans[i].status, SWEEP_PLAN_INVALID);
            ck_assert_str_eq(plans[i].reason_kind, "strategy.data.shard_degree");
        } else {
            ck_assert_int_eq(plans[i].status, SWEEP_PLAN_PENDING);
            pending++;
            strategy st;
            sweep_plan_strategy(&s, &plans[i], &st);
            ck_assert_int_eq(st.shard_degree, d->shard_degree);
            ck_assert_int_eq(strategy_shard_degree(&st), d->shard_degree);
            strategy_free(&st);
        }
    }
    ck_assert_int_eq(pending, 3);
    char label[128];
    sweep_plan_label(&plans[5], 0, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "tp1 pp1 dp4 mb1 1f1b zero3 none shard2");
    free(plans);
    sweep_spec_free(&s);
    free(path);
    remove_tmpdir(dir);
}
END_TEST

/* Through the binary (tests/data/sweep/shard.yaml: GPT-3 6.7B, ZeRO 3, data 4 on dgx4): the
 * plans carry their shard degree, and ZeRO-3 state per GPU is 2 + 4 + 12 = 18 bytes per
 * parameter over the shard group, so shard 2 holds 18 P (1/2 - 1/4) = 4.5 P bytes more than
 * shard 4 (P = 6 871 982 080, as zero_stages_pruned_by_their_memory). */
START_TEST(shard_degree_axis_memory)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "shard", "shard.json", NULL, NULL);
    expect_exit(&r, 0);
    char *j = tmp_path(dir, "shard.json");
    cJSON *root = parse_json_file(j);
    double peak[5] = {0, 0, 0, 0, 0};
    const cJSON *p;
    int seen = 0;
    cJSON_ArrayForEach(p, plans_of(root))
    {
        int sd = (int)numf(p, "shard_degree");
        ck_assert(sd == 2 || sd == 4);
        ck_assert_int_eq((int)numf(p, "zero"), 3);
        peak[sd] = numf(p, "peak_memory_bytes");
        seen++;
    }
    ck_assert_int_eq(seen, 2);
    /* named once per plan and once in the axes: never twice in one object */
    size_t len = 0;
    char *text = slurp(j, &len);
    ck_assert_ptr_nonnull(text);
    int names = 0;
    for (const char *q = text; (q = strstr(q, "\"shard_degree\"")); q++)
        names++;
    ck_assert_int_eq(names, 3);
    free(text);
    double h = 4096, s = 2048, v = 51200;
    double P = (v + s) * h + 32 * (12 * h * h + 13 * h) + 2 * h;
    ck_assert_msg(fabs((peak[2] - peak[4]) - 4.5 * P) <= 1e-9 * P, "got %.0f, want %.0f",
                  peak[2] - peak[4], 4.5 * P);
    cJSON_Delete(root);
    free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* The gpus axis (issue 30): gpus {2, 4} x tensor {1, 2} with data: auto on 4 GPUs, first axis
 * slowest: 2 GPUs tp1 dp2, 2 GPUs tp2 dp1, 4 GPUs tp1 dp4, 4 GPUs tp2 dp2, all valid (global
 * batch 16 over micro-batches of 2 divides by dp 1, 2 and 4). */
START_TEST(enumeration_gpus_axis)
{
    char *path = src_path("tests/data/sweep/gpus.yaml");
    sweep_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sweep_spec_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&s, 4, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 4);
    const int gpus[4] = {2, 2, 4, 4}, tp[4] = {1, 2, 1, 2}, dp[4] = {2, 1, 4, 2};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(plans[i].status, SWEEP_PLAN_PENDING);
        ck_assert_int_eq(plans[i].gpus, gpus[i]);
        ck_assert_int_eq(plans[i].desc.tp, tp[i]);
        ck_assert_int_eq(plans[i].desc.dp, dp[i]);
    }
    char label[128];
    sweep_plan_label(&plans[1], 1, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "gpus2 tp2 pp1 dp1 mb2 1f1b zero0 sel");
    free(plans);
    sweep_spec_free(&s);
    free(path);
}
END_TEST

/* Each plan of the gpus sweep takes the first N GPUs of dgx4: its record says so, and the
 * 2-GPU tp2 plan's iteration time is `protosim run`'s of the same strategy on dgx4 (which takes
 * GPUs 0-1, as its JSON says) to the last bit. */
START_TEST(gpus_axis_plans_match_single_runs)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "gpus", "all.json", "-j", "1");
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "(4 GPUs; plans take the first 2 to 4)"), "stdout: %s", r.out);
    char *j = tmp_path(dir, "all.json");
    cJSON *root = parse_json_file(j);
    ck_assert_int_eq(count_status(root, "ok"), 4);
    const cJSON *p, *two = NULL;
    cJSON_ArrayForEach(p, plans_of(root))
    {
        ck_assert_int_eq((int)numf(p, "gpus"), (int)(numf(p, "tensor") * numf(p, "data")));
        if (!strcmp(strf(p, "plan"), "gpus2 tp2 pp1 dp1 mb2 1f1b zero0 sel"))
            two = p;
    }
    ck_assert_ptr_nonnull(two);
    char *cl = src_path("topology/clusters/dgx4.xml");
    cJSON *single = single_run_equals(dir, two, cl);
    ck_assert_int_eq((int)numf(single, "cluster_gpus"), 4);
    const cJSON *taken = cJSON_GetObjectItemCaseSensitive(single, "cluster_ranks");
    ck_assert_int_eq(cJSON_GetArraySize(taken), 2);
    ck_assert_int_eq(cJSON_GetArrayItem(taken, 0)->valueint, 0);
    ck_assert_int_eq(cJSON_GetArrayItem(taken, 1)->valueint, 1);
    cJSON_Delete(single);
    cJSON_Delete(root);
    free(cl), free(j);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* --dry-run (issue 30: how big a sweep is, before it runs): small.yaml's 3 tensor x 2 pipeline x
 * 2 recompute = 12 combinations on 4 GPUs, tp4 x pp2 (8 GPUs) invalid under both recomputes:
 * 10 valid, 2 invalid "gpus"; nothing simulated, no --json written; with --shard 1/2 the plans
 * of even index: tp4 pp2 are indices 10 and 11 (tensor slowest), so 5 valid of the shard. */
START_TEST(dry_run_counts_without_simulating)
{
    char *dir = make_tmpdir();
    run_result r = run_sweep(dir, "small", "dry.json", "--dry-run", NULL);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, ": 12 combinations, 10 valid (to simulate, memory checked first), "
                                "2 invalid; nothing simulated\n"),
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "invalid: 2 x gpus (e.g. "), "%s", r.out);
    ck_assert_ptr_null(strstr(r.err, "plans processed"));
    char *j = tmp_path(dir, "dry.json");
    ck_assert_int_ne(access(j, F_OK), 0);
    free(j);
    run_free(&r);
    char *sweep = src_path("tests/data/sweep/small.yaml"),
         *cl = src_path("topology/clusters/dgx4.xml");
    const char *args[] = {"sweep", sweep, "--cluster", cl, "--dry-run", "--shard", "1/2", NULL};
    r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, ": 12 combinations, 5 valid in shard 1/2"), "%s", r.out);
    run_free(&r);
    free(sweep), free(cl);
    remove_tmpdir(dir);
}
END_TEST

static Suite *sweep_suite(void)
{
    const TTest *const tests[] = {enumeration_counts_by_hand,
                                  enumeration_interleaved_rules,
                                  enumeration_zero_rules,
                                  enumeration_expert_axis,
                                  zero_stages_pruned_by_their_memory,
                                  enumeration_shard_degree_rules,
                                  shard_degree_axis_memory,
                                  oom_plan_reported_not_simulated,
                                  ranking_matches_single_runs,
                                  shards_merge_to_whole_sweep,
                                  bad_sweep_files,
                                  crashing_worker_is_reported,
                                  failed_plan_ends_its_worker,
                                  twins_take_their_plans_record,
                                  twin_of_a_crashed_plan_is_simulated,
                                  bundled_sweep_outputs,
                                  enumeration_gpus_axis,
                                  gpus_axis_plans_match_single_runs,
                                  dry_run_counts_without_simulating,
                                  NULL};
    return suite_of("sweep", "sweep", 120, tests);
}

int main(void)
{
    return suite_run(sweep_suite());
}
