/* test_trace.c: run --trace, --trace-ranks, --trace-steps and --no-trace-links through the
 * binary (PROTOSIM_BIN): the written file is checked against the Chrome trace event format
 * (parsed with cJSON: metadata naming processes and threads, complete events with name, cat,
 * pid, tid, ts, dur >= 0, counters of the process "links" with numeric args in time order,
 * flow start/finish events paired by id with bind point "e", otherData.link_tracks listing each
 * counter track's links); it is cut down to the listed GPUs and the first micro-batches; a lone
 * 1 GB send reads the wire's bandwidth on its counter; bad options are named. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../sim/engine/htae.h"
#include "cli_util.h"
#include "suite_util.h"

static const char *dp2_tp2 = "strategies/examples/gpt3-1.3b-dp2-tp2.yaml";
static const char *pp2_dp2 = "strategies/examples/gpt3-1.3b-pp2-dp2.yaml";
static const char *dgx4 = "topology/clusters/dgx4.xml";

#define MAX_PID    8
#define MAX_FLOWS  4096
#define MAX_TRACKS 32
#define MAX_POINTS 8 /* points kept per counter track (all are checked) */
#define MAX_SENDS  64

/* A counter track of the process "links": its name, points (the first MAX_POINTS kept), and
 * the links otherData.link_tracks lists for it. */
typedef struct counter_track {
    char name[64];
    int n, members;
    double ts[MAX_POINTS], v[MAX_POINTS];
} counter_track;

/* What a checked trace holds. */
typedef struct trace_facts {
    int x_count, flows, pp_sends, c_count, n_tracks, links;
    int x_pids[MAX_PID]; /* complete events per pid */
    int copies[MAX_PID]; /* those marked args.copy_of (a folded GPU's copy) */
    int max_micro;       /* largest args.micro_batch of a complete event */
    int links_pid;       /* pid of the process "links", -1: none */
    long size;           /* bytes */
    counter_track tracks[MAX_TRACKS];
    char link_names[4 * MAX_TRACKS][32]; /* [links]: every counted link, from otherData */
    double send_ts[MAX_SENDS], send_dur[MAX_SENDS]; /* pipeline sends, in file order */
    int send_pid[MAX_SENDS];
} trace_facts;

static const cJSON *field(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A JSON number holding an integer in [0, below). */
static int is_index(const cJSON *j, int below)
{
    return cJSON_IsNumber(j) && j->valuedouble == (double)(int)j->valuedouble && j->valueint >= 0 &&
           j->valueint < below;
}

/* A timestamp or duration: a finite number of microseconds >= 0. */
static int is_micros(const cJSON *j)
{
    return cJSON_IsNumber(j) && isfinite(j->valuedouble) && j->valuedouble >= 0;
}

/* A metadata event: process_name and thread_name carry args.name, process_sort_index
 * args.sort_index; thread_name names a tid. */
static void check_metadata(const cJSON *e, int *named_pid, int (*named_tid)[8], trace_facts *out)
{
    const cJSON *name = field(e, "name"), *pid = field(e, "pid"), *args = field(e, "args");
    ck_assert_msg(cJSON_IsString(name) && is_index(pid, MAX_PID) && cJSON_IsObject(args),
                  "M event without name, pid or args");
    const char *n = name->valuestring;
    ck_assert_msg(!strcmp(n, "process_name") || !strcmp(n, "thread_name") ||
                      !strcmp(n, "process_sort_index"),
                  "unexpected metadata '%s'", n);
    if (!strcmp(n, "process_sort_index")) {
        ck_assert_msg(cJSON_IsNumber(field(args, "sort_index")), "sort index not a number");
        return;
    }
    ck_assert_msg(cJSON_IsString(field(args, "name")), "%s without args.name", n);
    if (!strcmp(n, "process_name")) {
        named_pid[pid->valueint] = 1;
        if (!strcmp(field(args, "name")->valuestring, "links"))
            out->links_pid = pid->valueint;
    } else {
        const cJSON *tid = field(e, "tid");
        ck_assert_msg(is_index(tid, 8), "thread_name without tid");
        named_tid[pid->valueint][tid->valueint] = 1;
    }
}

/* A complete event: name, cat, pid, tid, ts, dur >= 0 (microseconds), on a named process and
 * thread, with args.micro_batch. */
static void check_complete(const cJSON *e, const int *named_pid, int (*named_tid)[8],
                           trace_facts *out)
{
    const cJSON *pid = field(e, "pid"), *tid = field(e, "tid"), *ts = field(e, "ts"),
                *dur = field(e, "dur"), *args = field(e, "args"), *cat = field(e, "cat");
    ck_assert_msg(cJSON_IsString(field(e, "name")) && cJSON_IsString(cat),
                  "X event without a name or cat");
    ck_assert_msg(is_index(pid, MAX_PID) && is_index(tid, 8), "X event without pid or tid");
    ck_assert_msg(is_micros(ts) && is_micros(dur), "X event: bad ts or dur");
    ck_assert_msg(named_pid[pid->valueint] && named_tid[pid->valueint][tid->valueint],
                  "X event on an unnamed process %d or thread %d", pid->valueint, tid->valueint);
    out->x_count++;
    out->x_pids[pid->valueint]++;
    const cJSON *copy = field(args, "copy_of");
    if (copy) {
        ck_assert_msg(is_index(copy, MAX_PID) && copy->valueint != pid->valueint,
                      "copy_of %d on pid %d", copy->valueint, pid->valueint);
        out->copies[pid->valueint]++;
        return; /* the checks below count the simulated tasks */
    }
    const cJSON *micro = field(args, "micro_batch");
    ck_assert_msg(cJSON_IsNumber(micro), "X event without args.micro_batch");
    if (micro->valueint > out->max_micro)
        out->max_micro = micro->valueint;
    if (!strcmp(cat->valuestring, "pp-comm")) {
        ck_assert_int_lt(out->pp_sends, MAX_SENDS);
        out->send_ts[out->pp_sends] = ts->valuedouble;
        out->send_dur[out->pp_sends] = dur->valuedouble;
        out->send_pid[out->pp_sends++] = pid->valueint;
    }
}

/* A counter event: name, ts (microseconds), pid of the named process "links", args of numbers
 * only (here exactly "GB/s", >= 0). A track's points are in time order, each a change, the
 * first above 0. */
static void check_counter(const cJSON *e, trace_facts *out)
{
    const cJSON *name = field(e, "name"), *pid = field(e, "pid"), *ts = field(e, "ts"),
                *args = field(e, "args");
    ck_assert_msg(cJSON_IsString(name) && is_micros(ts), "C event without name or ts");
    ck_assert_msg(is_index(pid, MAX_PID) && pid->valueint == out->links_pid,
                  "C event outside the process 'links'");
    ck_assert_msg(cJSON_IsObject(args) && cJSON_GetArraySize(args) == 1, "C event args");
    const cJSON *v = field(args, "GB/s");
    ck_assert_msg(cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0,
                  "C event without a number args.GB/s");
    int k = 0;
    while (k < out->n_tracks && strcmp(out->tracks[k].name, name->valuestring))
        k++;
    counter_track *c = &out->tracks[k];
    if (k == out->n_tracks) {
        ck_assert_int_lt(out->n_tracks++, MAX_TRACKS);
        ck_assert_uint_lt(strlen(name->valuestring), sizeof c->name);
        memset(c, 0, sizeof *c);
        strcpy(c->name, name->valuestring);
        ck_assert_msg(v->valuedouble > 0, "%s starts at 0", c->name);
    } else {
        double last_ts = c->ts[c->n < MAX_POINTS ? c->n - 1 : MAX_POINTS - 1];
        double last_v = c->v[c->n < MAX_POINTS ? c->n - 1 : MAX_POINTS - 1];
        ck_assert_msg(ts->valuedouble > last_ts && v->valuedouble != last_v,
                      "%s: point %d is not a change after the last", c->name, c->n);
    }
    int slot = c->n < MAX_POINTS ? c->n : MAX_POINTS - 1; /* past MAX_POINTS: the last one */
    c->ts[slot] = ts->valuedouble;
    c->v[slot] = v->valuedouble;
    c->n++;
    out->c_count++;
}

/* Flow events: every id has exactly one "s" and one "f" (with "bp":"e"), finish not before
 * start, each with name, cat "flow", pid, tid, ts. */
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
        ck_assert_msg(is_index(id, MAX_FLOWS), "flow event without id");
        ck_assert_msg(cJSON_IsString(cat) && !strcmp(cat->valuestring, "flow"), "flow cat");
        ck_assert_msg(cJSON_IsString(field(e, "name")) && is_index(field(e, "pid"), MAX_PID) &&
                          is_index(field(e, "tid"), 8) && is_micros(field(e, "ts")),
                      "flow event without name, pid, tid or ts");
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

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* otherData.link_tracks: one entry per counter track, listing its links, as many as the
 * track's name says (" +N": N + 1), no link in two tracks. Every track ends at 0. */
static void check_link_tracks(const cJSON *t, trace_facts *out)
{
    const cJSON *lt = field(field(t, "otherData"), "link_tracks");
    if (out->n_tracks == 0) {
        ck_assert_msg(lt == NULL && out->links_pid < 0, "link tracks without counters");
        return;
    }
    ck_assert_msg(cJSON_IsObject(lt), "counters without otherData.link_tracks");
    ck_assert_int_eq(cJSON_GetArraySize(lt), out->n_tracks);
    for (int k = 0; k < out->n_tracks; k++) {
        counter_track *c = &out->tracks[k];
        ck_assert_msg(c->v[c->n < MAX_POINTS ? c->n - 1 : MAX_POINTS - 1] == 0,
                      "%s does not end at 0", c->name);
        const cJSON *links = field(lt, c->name), *l;
        ck_assert_msg(cJSON_IsArray(links), "link_tracks lacks %s", c->name);
        const char *plus = strstr(c->name, " +");
        c->members = cJSON_GetArraySize(links);
        ck_assert_int_eq(c->members, plus ? atoi(plus + 2) + 1 : 1);
        cJSON_ArrayForEach(l, links) ck_assert_msg(cJSON_IsString(l), "link name not a string");
        /* the track is named after its first link */
        const char *first = cJSON_GetArrayItem(links, 0)->valuestring;
        size_t len = plus ? (size_t)(plus - c->name) : strlen(c->name);
        ck_assert_msg(strlen(first) == len && !strncmp(first, c->name, len), "%s first lists %s",
                      c->name, first);
        out->links += c->members;
    }
    const char *names[4 * MAX_TRACKS]; /* no link listed twice */
    int n = 0;
    const cJSON *track, *l;
    cJSON_ArrayForEach(track, lt) cJSON_ArrayForEach(l, track)
    {
        ck_assert_int_lt(n, 4 * MAX_TRACKS);
        ck_assert_uint_lt(strlen(l->valuestring), sizeof out->link_names[0]);
        strcpy(out->link_names[n], l->valuestring);
        names[n++] = l->valuestring;
    }
    qsort(names, (size_t)n, sizeof *names, by_string);
    for (int i = 1; i < n; i++)
        ck_assert_msg(strcmp(names[i - 1], names[i]), "link %s listed twice", names[i]);
}

/* Parse the trace at path and check it against the Chrome trace event format (JSON object
 * format: traceEvents, displayTimeUnit, otherData); what it holds goes to *out. */
static void check_trace(const char *path, trace_facts *out)
{
    memset(out, 0, sizeof *out);
    out->max_micro = -1;
    out->links_pid = -1;
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    out->size = (long)st.st_size;
    cJSON *t = parse_json_file(path);
    const cJSON *ev = field(t, "traceEvents"), *unit = field(t, "displayTimeUnit");
    ck_assert_msg(cJSON_IsArray(ev), "trace lacks a traceEvents array");
    ck_assert_msg(cJSON_IsString(unit) && !strcmp(unit->valuestring, "ms"), "displayTimeUnit");
    int named_pid[MAX_PID] = {0}, named_tid[MAX_PID][8];
    memset(named_tid, 0, sizeof named_tid);
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *ph = field(e, "ph");
        ck_assert_msg(cJSON_IsObject(e) && cJSON_IsString(ph), "event without a 'ph' string");
        if (!strcmp(ph->valuestring, "M"))
            check_metadata(e, named_pid, named_tid, out);
    }
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = field(e, "ph")->valuestring;
        ck_assert_msg(!strcmp(ph, "M") || !strcmp(ph, "X") || !strcmp(ph, "C") ||
                          !strcmp(ph, "s") || !strcmp(ph, "f"),
                      "unexpected ph '%s'", ph);
        if (!strcmp(ph, "X"))
            check_complete(e, named_pid, named_tid, out);
        else if (!strcmp(ph, "C"))
            check_counter(e, out);
    }
    check_flows(ev, out);
    check_link_tracks(t, out);
    cJSON_Delete(t);
}

/* Run `run STRATEGY --cluster CLUSTER --trace DIR/NAME [extra...] -q`, expect exit 0, check. */
static void traced_run_on(const char *dir, const char *strategy, const char *cluster_file,
                          const char *name, const char *extra1, const char *extra2,
                          trace_facts *out)
{
    char *strat = src_path(strategy), *cl = src_path(cluster_file), *trace = tmp_path(dir, name);
    const char *args[] = {"run", strat, "--cluster", cl,     "--trace",
                          trace, "-q",  extra1,      extra2, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    check_trace(trace, out);
    free(strat), free(cl), free(trace);
}

/* The same on dgx4. */
static void traced_run(const char *dir, const char *strategy, const char *name, const char *extra1,
                       const char *extra2, trace_facts *out)
{
    traced_run_on(dir, strategy, dgx4, name, extra1, extra2, out);
}

static const counter_track *track(const trace_facts *f, const char *name)
{
    for (int k = 0; k < f->n_tracks; k++)
        if (!strcmp(f->tracks[k].name, name))
            return &f->tracks[k];
    ck_abort_msg("no counter track '%s'", name);
    return NULL;
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
    /* with DP folded, replica 1's stages (GPUs 1 and 3) draw replica 0's compute and pipeline
     * tasks as copies: as many copies as replica 0 has tasks on those streams */
    ck_assert_int_gt(f.copies[1] + f.copies[3], 0);
    ck_assert_int_eq(f.copies[0] + f.copies[2], 0);
    traced_run(dir, dp2_tp2, "dp.json", NULL, NULL, &f);
    ck_assert_int_eq(f.flows, 0); /* no pipeline: no point-to-point transfers */
    /* folded: GPU 0 computes, GPU 2 (replica 1, tensor index 0) runs the DP collectives; the
     * folded TP peers 1 and 3 have no task of their own (their flows ride on 0's and 2's): they
     * are drawn as copies of their stage's GPU 0, every GPU with a track (issue 30) */
    for (int p = 0; p < 4; p++) {
        ck_assert_msg(f.x_pids[p] > 0, "pid %d: no complete event", p);
        ck_assert_msg((f.copies[p] == f.x_pids[p]) == (p % 2 == 1), "pid %d: %d of %d copies", p,
                      f.copies[p], f.x_pids[p]);
    }
    remove_tmpdir(dir);
}
END_TEST

START_TEST(trace_ranks_keeps_listed_gpus)
{
    char *dir = make_tmpdir();
    trace_facts all, some;
    traced_run(dir, dp2_tp2, "all.json", NULL, NULL, &all);
    traced_run(dir, dp2_tp2, "r02.json", "--trace-ranks", "0,2", &some); /* the ranks with tasks */
    ck_assert_int_gt(some.x_pids[0], 0);
    ck_assert_int_gt(some.x_pids[2], 0);
    ck_assert_int_eq(some.x_pids[1], 0);
    ck_assert_int_eq(some.x_pids[3], 0);
    ck_assert_int_eq(some.x_pids[0], all.x_pids[0]);
    ck_assert_int_eq(some.x_pids[2], all.x_pids[2]);
    ck_assert_int_eq(some.x_count, all.x_pids[0] + all.x_pids[2]);
    ck_assert_int_lt(some.size, all.size);
    /* a folded TP peer alone (it wrote a trace without a task): its copies of GPU 0 */
    traced_run(dir, dp2_tp2, "r1.json", "--trace-ranks", "1", &some);
    ck_assert_int_gt(some.x_pids[1], 0);
    ck_assert_int_eq(some.copies[1], some.x_pids[1]);
    ck_assert_int_eq(some.x_pids[0] + some.x_pids[2] + some.x_pids[3], 0);
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

/* One 1 GB send alone on a 100 GB/s wire (tests/data/trace/pp2-1gb.yaml on two-100GBps.xml,
 * no latency): the send's task starts with the point-to-point launch (p2p_launch_s of the
 * executor's default options, 10 us), then its flow moves 1e9 bytes at 100e9 bytes/s for 10 ms.
 * The wire's counter reads 100 GB/s from the flow's start (task start + launch) to its end (the
 * task's end), then 0: the forward send (GPU 0 -> 1) on "wire up", the backward send (1 -> 0)
 * on "wire down". Times in the trace are microseconds. */
START_TEST(lone_1gb_send_reads_the_link_bandwidth)
{
    htae_options o;
    htae_default_options(&o);
    double launch_us = o.p2p_launch_s * 1e6, wire_us = 1e9 / 100e9 * 1e6; /* 10 us, 10 ms */
    ck_assert(fabs(launch_us - 10.0) < 1e-9);
    char *dir = make_tmpdir();
    trace_facts f;
    traced_run_on(dir, "tests/data/trace/pp2-1gb.yaml", "tests/data/htae/two-100GBps.xml",
                  "one.json", NULL, NULL, &f);
    ck_assert_int_eq(f.links_pid, 2); /* after GPUs 0 and 1 */
    ck_assert_int_eq(f.n_tracks, 2);
    ck_assert_int_eq(f.links, 2);
    ck_assert_int_eq(f.pp_sends, 2);
    const char *names[2] = {"wire up", "wire down"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(f.send_pid[i], i);
        ck_assert(fabs(f.send_dur[i] - (launch_us + wire_us)) <= 1e-3);
        const counter_track *c = track(&f, names[i]);
        ck_assert_int_eq(c->n, 2);
        ck_assert(fabs(c->ts[0] - (f.send_ts[i] + launch_us)) <= 2e-3);
        ck_assert(c->v[0] == 100.0);
        ck_assert(fabs(c->ts[1] - (f.send_ts[i] + launch_us + wire_us)) <= 2e-3);
        ck_assert(c->v[1] == 0.0);
    }
    remove_tmpdir(dir);
}
END_TEST

static int has_link(const trace_facts *f, const char *name)
{
    for (int i = 0; i < f->links; i++)
        if (!strcmp(f->link_names[i], name))
            return 1;
    return 0;
}

/* dp2-tp2 on dgx4 (TP groups {0,1} {2,3}, DP groups {0,2} {1,3}, one NVLink port per GPU): every
 * GPU traced counts all 8 port halves; --trace-ranks 0 counts the ports of GPU 0, of its TP
 * peer 1 and of its DP peer 2 (6 halves), not GPU 3's; --no-trace-links none, the tasks
 * unchanged. How many tracks the halves share depends on the collectives' timing, not
 * checked. */
START_TEST(link_counters_follow_trace_ranks)
{
    char *dir = make_tmpdir();
    trace_facts all, one, none;
    traced_run(dir, dp2_tp2, "all.json", NULL, NULL, &all);
    ck_assert_int_eq(all.links, 8);
    ck_assert_int_eq(all.links_pid, 4);
    traced_run(dir, dp2_tp2, "r0.json", "--trace-ranks", "0", &one);
    ck_assert_int_eq(one.links, 6);
    const char *ports[] = {"n0g0_nvl", "n0g1_nvl", "n0g2_nvl", "n0g3_nvl"};
    for (int i = 0; i < 4; i++)
        for (int up = 0; up < 2; up++) {
            char name[32];
            snprintf(name, sizeof name, "%s %s", ports[i], up ? "up" : "down");
            ck_assert_msg(has_link(&all, name), "%s not counted", name);
            ck_assert_msg(has_link(&one, name) == (i < 3), "%s: rank 0's counters", name);
        }
    traced_run(dir, dp2_tp2, "none.json", "--no-trace-links", NULL, &none);
    ck_assert_int_eq(none.c_count, 0);
    ck_assert_int_eq(none.links_pid, -1);
    ck_assert_int_eq(none.x_count, all.x_count);
    ck_assert_int_lt(none.size, all.size);
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
    static const char *const needs_trace[][2] = {{"--trace-ranks", "0"},
                                                 {"--no-trace-links", NULL}};
    for (int i = 0; i < 2; i++) {
        const char *no_trace[] = {
            "run", strat, "--cluster", cl, needs_trace[i][0], needs_trace[i][1], NULL};
        run_result r = run_protosim(dir, no_trace);
        char needle[80];
        snprintf(needle, sizeof needle, "%s needs --trace OUT.trace.json", needs_trace[i][0]);
        const char *needles[] = {needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    free(strat), free(cl), free(trace);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {full_trace_is_valid_with_flows,
                                  trace_ranks_keeps_listed_gpus,
                                  trace_steps_keeps_first_micro_batches,
                                  lone_1gb_send_reads_the_link_bandwidth,
                                  link_counters_follow_trace_ranks,
                                  bad_trace_options_name_the_option,
                                  NULL};
    return suite_run(suite_of("trace", "trace", 240, tests));
}
