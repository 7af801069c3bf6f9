/* test_replay.c: Kineto traces replayed on the executor: small hand-written traces in
 * tests/data/replay whose answers are worked out by hand, and each class of bad trace. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/report/report_replay.h"
#include "../workloads/trace/trace.h"
#include "sim_util.h"
#include "suite_util.h"

static char path_buf[1024];

static const char *data(const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/tests/data/replay/%s", ps_data_dir(), name);
    return path_buf;
}

/* Replay traces (one: SPMD; several: one per rank) on dgx4 as `protosim replay` does, the last
 * `steps` ProfilerSteps (0: all); the summary into *s. */
static void replay_steps(const char *const *names, int n, int steps, replay_summary *s)
{
    char paths[4][1024];
    const char *p[4];
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", data(names[i]));
        p[i] = paths[i];
    }
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_job_load(p, n, steps, &j, &err) == 0, "%s", err.message);
    cluster c;
    sim_load("topology/clusters/dgx4.xml", &c);
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_msg(trace_job_graph(&j, c.n_gpus, &g, &task_of, &err) == 0, "%s", err.message);
    htae_options o;
    htae_default_options(&o);
    o.overlap_slowdown = 0.0;
    htae_result r;
    ck_assert_msg(htae_run(g, &c, &o, &r, &err) == 0, "%s", err.message);
    report_replay_summarize(&j, g, task_of, &r, s);
    htae_result_free(&r);
    trace_tasks_free(&j, task_of);
    graph_free(g);
    cluster_free(&c);
    trace_job_free(&j);
}

static void replay(const char *name, replay_summary *s)
{
    replay_steps(&name, 1, 0, s);
}

/* sync.json: launches of 10 us at 10 and 30 us, two 1 ms kernels on one stream (the second
 * measured 480 us late: the replay starts it when the first ends), a device synchronization
 * whose own part is 30 us (it returned 30 us after the last kernel), then 5 us of its op and
 * 10 us between ops. Step = 20 us + 2 x 1 ms + 30 + 5 + 10 us = 2.065 ms; measured 2.545 ms. */
START_TEST(launch_stream_order_and_sync)
{
    replay_summary s;
    replay("sync.json", &s);
    ck_close(s.iteration_s, 2.065e-3, 1e-9);
    ck_close(s.measured_step_s, 2.545e-3, 1e-9);
    ck_close(s.gpu_active_s, 2e-3, 1e-9);
    ck_close(s.gpu_idle_s, 0.065e-3, 1e-6);
    /* Lin et al.: aten::mm 10 us before its first launch, 10 between, 60 after; aten::sync
     * (no launch) 5 + 5 us; 10 us between ops; launches 10 + 10, the sync's own 30 us. */
    ck_close(s.overheads[TRACE_OVH_BEFORE_FIRST_LAUNCH], 20e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_BETWEEN_LAUNCHES], 10e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_AFTER_LAST_LAUNCH], 60e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_BETWEEN_OPS], 10e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_LAUNCH], 50e-6, 1e-6);
    report_replay_free(&s);
}
END_TEST

/* Older profilers record the step span as a cpu_op: the same step, not one op holding all. */
START_TEST(step_as_cpu_op)
{
    replay_summary s;
    replay("step_as_cpu_op.json", &s);
    ck_close(s.iteration_s, 2.065e-3, 1e-9);
    ck_close(s.overheads[TRACE_OVH_BETWEEN_OPS], 10e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_AFTER_LAST_LAUNCH], 60e-6, 1e-6);
    report_replay_free(&s);
}
END_TEST

/* rocm_sync.json: sync.json as ROCm's Kineto writes it (hipLaunchKernel, hipDeviceSynchronize
 * under cuda_runtime, an AMD device): the synchronization waits for the GPU as CUDA's does, so
 * the step is the same 2.065 ms (read as a plain call, it kept its measured 2.425 ms and the
 * step its measured 2.545 ms, whatever the kernels did). */
START_TEST(rocm_names_synchronize)
{
    replay_summary s;
    replay("rocm_sync.json", &s);
    ck_close(s.iteration_s, 2.065e-3, 1e-9);
    ck_close(s.gpu_active_s, 2e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* torch18_sync.json: sync.json in PyTorch 1.8's schema (categories Operator, Runtime, Kernel;
 * the step an Operator; "external id" in lower case; no schemaVersion, distributedInfo or
 * deviceProperties; a stream's tid a string): the same 2.065 ms. */
START_TEST(pytorch_1_8_schema)
{
    replay_summary s;
    replay("torch18_sync.json", &s);
    ck_close(s.iteration_s, 2.065e-3, 1e-9);
    ck_close(s.measured_step_s, 2.545e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* The same trace gzip-compressed reads the same. */
START_TEST(gzip_trace)
{
    replay_summary s;
    replay("sync.json.gz", &s);
    ck_close(s.iteration_s, 2.065e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* allreduce.json: rank 0 of a world of 4 all-reduces 250 M floats (S = 1 GB) on dgx4, the other
 * ranks standing in: NVSwitch ports of 300 GB/s x 0.71, 0.7 us each (two per route): 40 us +
 * 6 x (0.5 + 1.4) us + 2 (p-1)/p S / B (docs/collectives.md). The stream synchronization waits
 * for it; the step is 20 us of launch + the all-reduce + 10 us of its own + 10 us after. */
START_TEST(allreduce_on_the_cluster)
{
    replay_summary s;
    replay("allreduce.json", &s);
    htae_options o;
    htae_default_options(&o);
    double lat, bw;
    sim_dgx4_allreduce(&o, 1e9, 4, &lat, &bw);
    double ar = lat + bw;
    ck_close(s.comm_s, ar, 1e-3);
    ck_close(s.iteration_s, 20e-6 + ar + 20e-6, 1e-3);
    ck_close(s.measured_step_s, 4.02e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* stream_wait.json: a 1 ms kernel on stream 7, an event recorded after it, stream 20 told to
 * wait for it (the GPU-side "Stream Wait Event" record), a 0.5 ms kernel on stream 20, a device
 * synchronization (own part 20 us), 10 us after. Launches and calls take 10 us each, from 0:
 * 10 us + 1 ms + 0.5 ms + 20 us + 10 us = 1.540 ms. Without the wait the consumer would run
 * beside the producer and the step would take 1.040 ms. */
START_TEST(recorded_stream_wait)
{
    replay_summary s;
    replay("stream_wait.json", &s);
    ck_close(s.iteration_s, 1.540e-3, 1e-9);
    ck_close(s.gpu_active_s, 1.5e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* inferred_wait.json: the same without the wait record: the consumer started 970 us after its
 * stream and launch allowed, just as the producer ended: the wait is inferred, same 1.540 ms. */
START_TEST(inferred_stream_wait)
{
    replay_summary s;
    replay("inferred_wait.json", &s);
    ck_close(s.iteration_s, 1.540e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* rank0.json and rank1.json: one trace per rank of a world of 2 (dgx4's GPUs 0 and 1). Each
 * all-reduces 53.25 M floats (S = 213 MB); rank 1 launches at 505-515 us (500 us of CPU work
 * first), rank 0 at 5-15 us. The all-reduce starts when both launched, at 515 us, and takes
 * 40 us + 2 x (0.5 + 1.4) us + 2 (p-1)/p S / B = 43.8 us + 213 MB / 213 GB/s = 1043.8 us; each
 * device synchronization then has 10 us of its own, 10 us follow: step = 1578.8 us. */
START_TEST(one_trace_per_rank)
{
    const char *names[] = {"rank0.json", "rank1.json"};
    replay_summary s;
    replay_steps(names, 2, 0, &s);
    htae_options o;
    htae_default_options(&o);
    double S = 213e6, B = 300 * GB * o.protocol_efficiency;
    double ar = o.coll_launch_s + 2 * (o.coll_step_s + 2 * 0.7e-6) + S / B;
    ck_close(s.comm_s, ar, 1e-3);
    ck_close(s.iteration_s, 515e-6 + ar + 20e-6, 1e-3);
    ck_close(s.measured_step_s, 2e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* steps.json: ProfilerSteps of 100, 140 and 120 us: all of them, the median of the last two
 * (the first left out) is 130 us; --steps 1 (last_step_only) reports the last alone: 120 us. */
START_TEST(steps_window)
{
    const char *name = "steps.json";
    replay_summary s;
    replay_steps(&name, 1, 0, &s);
    ck_assert_int_eq(s.steps, 3);
    ck_close(s.measured_step_s, 130e-6, 1e-9);
    ck_close(s.iteration_s, 130e-6, 1e-9);
    report_replay_free(&s);
}
END_TEST

START_TEST(last_step_only)
{
    const char *name = "steps.json";
    replay_summary s;
    replay_steps(&name, 1, 1, &s);
    ck_assert_int_eq(s.steps, 1);
    ck_close(s.measured_step_s, 120e-6, 1e-9);
    ck_close(s.iteration_s, 120e-6, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* blocked.json: a second launch that took 1005 us and returned 5 us after the first kernel
 * (1 ms) ended was blocked by it (the launch queue): it waits for that kernel and keeps 5 us of
 * its own, so the launch calls take 10 + 5 us; the step stays 10 + 1000 + 5 + 10 us. */
START_TEST(blocked_launch_waits_for_the_gpu)
{
    replay_summary s;
    replay("blocked.json", &s);
    ck_close(s.overheads[TRACE_OVH_LAUNCH], 15e-6, 1e-6);
    ck_close(s.iteration_s, 1.025e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* thread_wait.json: the main thread is outside ops from 50 to 1300 us while a second thread
 * works from 100 to 1100 us and then has nothing more: the main thread waited for it (as in
 * backward()), so that gap keeps only its 200 us after the worker's end, and the overheads
 * count those 200 us between ops, not 1250. Before first launch: aten::a 10 us, aten::b 100
 * (no launch), the worker's op 1000; after last launch: aten::a's 30 us; launch: 10 us. */
START_TEST(thread_waits_for_another)
{
    replay_summary s;
    replay("thread_wait.json", &s);
    ck_close(s.iteration_s, 1.4e-3, 1e-9);
    ck_close(s.overheads[TRACE_OVH_BETWEEN_OPS], 200e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_BEFORE_FIRST_LAUNCH], 1110e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_AFTER_LAST_LAUNCH], 30e-6, 1e-6);
    ck_close(s.overheads[TRACE_OVH_LAUNCH], 10e-6, 1e-6);
    report_replay_free(&s);
}
END_TEST

/* param_comms.json: newer PyTorch's record_param_comms names the collective, its size and its
 * ranks: rank 2 of [0, 1, 2, 3] all-reduces 250 M floats (1 GB, as allreduce.json), then a
 * broadcast, not modelled, keeps its measured 300 us; a stream synchronization has 15 us of its
 * own, 10 us follow: step = 15 us of launch + the all-reduce + 300 + 15 + 10 us. */
START_TEST(param_comms_and_measured_broadcast)
{
    replay_summary s;
    replay("param_comms.json", &s);
    htae_options o;
    htae_default_options(&o);
    double lat, bw;
    sim_dgx4_allreduce(&o, 1e9, 4, &lat, &bw);
    double ar = lat + bw;
    ck_close(s.comm_s, ar + 300e-6, 1e-3);
    ck_close(s.iteration_s, 15e-6 + ar + 325e-6, 1e-3);
    report_replay_free(&s);
}
END_TEST

/* lag.json: the kernel started 20 us after its launch returned on an idle GPU: that launch
 * latency is kept, so the synchronization (10 us of its own) ends at 10 + 20 + 1000 + 10 us
 * and the step, 10 us later, at 1.050 ms (1.030 ms without it). */
START_TEST(launch_latency_is_kept)
{
    replay_summary s;
    replay("lag.json", &s);
    ck_close(s.iteration_s, 1.050e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* pageable_copy.json: a pageable host-to-device copy whose call (1 ms, staging) returned 900 us
 * after the copy began on the GPU: the call is cut at 100 us, so the copy runs 100 .. 1100 us
 * while the host stages, the stream synchronization (10 us of its own) ends at 1110 us, the
 * step at 1.120 ms (2.020 ms if the copy waited for the whole call). */
START_TEST(copy_begun_before_its_call_returned)
{
    replay_summary s;
    replay("pageable_copy.json", &s);
    ck_close(s.iteration_s, 1.120e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* Each bad trace is an input error naming the file and, where there is one, the event. */
static void expect_error(const char *name, const char *field, const char *words)
{
    const char *p = data(name);
    char file[1024];
    snprintf(file, sizeof file, "%s", p);
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), PS_EINPUT);
    ck_assert_str_eq(err.file, file);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, words), "message '%s' lacks '%s'", err.message, words);
}

START_TEST(bad_traces)
{
    expect_error("not_json.json", "", "not JSON");
    expect_error("not_kineto.json", "traceEvents", "not a Kineto trace");
    expect_error("no_gpu.json", "traceEvents", "no GPU events");
    expect_error("unknown_device.json", "traceEvents[1]", "device 3");
    expect_error("no_correlation.json", "traceEvents[2]", "no correlation id");
    /* identifiers become integers: 1e300 or 7.5 is none (fuzzing found 1e129 cast to long long) */
    expect_error("huge_tid.json", "traceEvents[0].tid", "integer of at most 2^53 (got 1e+300)");
    expect_error("fraction_stream.json", "traceEvents[1].args.stream", "(got 7.5)");
    /* distributedInfo: a world of at least one rank, a rank inside it, both whole numbers
     * (fuzzing found a rank of 5.5e57, read as INT_MAX, reach the graph builder) */
    expect_error("world_zero.json", "distributedInfo.world_size", "from 1 to 131072");
    expect_error("rank_past_world.json", "distributedInfo.rank", "from 0 to world_size - 1 (1)");
    expect_error("rank_2p31.json", "distributedInfo.rank", "whole number");
    expect_error("rank_fraction.json", "distributedInfo.rank", "whole number");
    /* a dur of 1e400 parses as inf (fuzzing found it reach the graph builder) */
    expect_error("inf_dur.json", "traceEvents[2]", "a dur from 0 to 1e+12 us");
}
END_TEST

/* The counts trace_job_load finds in tests/data/replay/NAME (its one rank, pointers cleared). */
static trace_rank loaded_rank(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", data(name));
    const char *paths[1] = {path};
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_job_load(paths, 1, 0, &j, &err) == 0, "%s", err.message);
    trace_rank r = j.ranks[0];
    r.lanes = NULL, r.ops = NULL, r.edges = NULL, r.calls = NULL, r.measured_step = NULL;
    r.group_ranks = NULL, r.needs = NULL;
    trace_job_free(&j);
    return r;
}

/* A real trace: two ProfilerSteps of a 2-layer GPT (hidden 1024, micro-batch 4 x 1024 tokens)
 * training on an H200 in eager PyTorch (tests/data/measured, scripts/gpu_measure.py). The
 * steps measure 17.341 and 11.619 ms (host-bound: 4.8 ms of GPU work a step); the replay keeps
 * every measured time and the dependencies, so it must land within 1% of their median
 * 14.480 ms. */
START_TEST(real_h200_trace)
{
    replay_summary s;
    replay("../measured/h200_gpt_tiny_trace.json.gz", &s);
    ck_close(s.measured_step_s, 0.5 * (17.340959e-3 + 11.618605e-3), 1e-9);
    ck_assert_msg(fabs(s.iteration_s / s.measured_step_s - 1) < 0.01, "predicted %g measured %g",
                  s.iteration_s, s.measured_step_s);
    ck_assert(s.gpu_active_s > 4.5e-3 && s.gpu_active_s < 5.1e-3);
    report_replay_free(&s);
}
END_TEST

/* A GPU-bound real trace: two ProfilerSteps of GPT-3 1.3B (24 layers, micro-batch 4 x 2048,
 * FlashAttention-2, bf16, fused AdamW) on an H100 (tests/data/measured). Its launch queue is
 * full: 1,004 kernels of the profiler's warm-up step run into the window with no launch
 * recorded, and the host blocks on them. Replayed as queued, they keep the host as far behind
 * as it was: the replay matches the measured steps (148.447 and 149.593 ms, median 149.020)
 * within 0.5% (without them it came out 10% short). */
START_TEST(real_h100_gpu_bound_trace)
{
    trace_rank r = loaded_rank("../measured/h100_gpt3_1.3b_trace.json.gz");
    ck_assert_int_eq(r.n_backlog, 1004);
    ck_assert_int_eq(r.n_steps, 2);
    replay_summary s;
    replay("../measured/h100_gpt3_1.3b_trace.json.gz", &s);
    ck_close(s.measured_step_s, 0.5 * (148.447167e-3 + 149.593192e-3), 1e-9);
    ck_assert_msg(fabs(s.iteration_s / s.measured_step_s - 1) < 0.005, "predicted %g measured %g",
                  s.iteration_s, s.measured_step_s);
    report_replay_free(&s);
}
END_TEST

/* backlog.json: sync.json with two kernels and no runtime calls on its stream, both starting
 * before the window's first kernel: work queued before the profiler began recording (a
 * GPU-bound step running into the window after PyTorch's profiler dropped its warm-up cycle).
 * Both are replayed as queued at the window's start for their part inside it: the first ended
 * at the window's start (0 us left), the second holds the stream 50 us, so gemm_a (launched
 * at 20 us) starts at 50 us, not 20: sync.json's 2.065 ms + 30 us = 2.095 ms, GPU active
 * 2.05 ms. The same kind of kernel starting after gemm_a began (backlog_late.json) is a launch
 * the profiler lost: an error. */
START_TEST(backlog_before_the_trace)
{
    ck_assert_int_eq(loaded_rank("backlog.json").n_backlog, 2);
    replay_summary s;
    replay("backlog.json", &s);
    ck_close(s.iteration_s, 2.095e-3, 1e-9);
    ck_close(s.measured_step_s, 2.545e-3, 1e-9);
    ck_close(s.gpu_active_s, 2.05e-3, 1e-9);
    report_replay_free(&s);
    expect_error("backlog_late.json", "traceEvents[6]", "a launch the profiler did not record");
}
END_TEST

/* Errors once the traces are read: a world larger than the cluster, and a collective one trace
 * has and the other rank's trace lacks. Each names the file. */
static void expect_graph_error(const char *const *names, int n, const char *words)
{
    char paths[2][1024];
    const char *p[2];
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", data(names[i]));
        p[i] = paths[i];
    }
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(p, n, 0, &j, &err), 0);
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_int_eq(trace_job_graph(&j, 4, &g, &task_of, &err), PS_EINPUT);
    ck_assert_str_eq(err.file, paths[0]);
    ck_assert_msg(strstr(err.message, words), "message '%s' lacks '%s'", err.message, words);
    trace_job_free(&j);
}

/* wait_cycle.json: stream 7 waits on an event recorded on stream 20 after b2 before running a2,
 * stream 20 on one recorded on 7 after a2 before running b2 (a record named by a wait that comes
 * later: only a corrupt trace says so). The graph would have the cycle a2 -> b2 -> a2: an input
 * error naming both kernels, never the internal error it was (exit 3). */
START_TEST(dependency_cycle_is_located)
{
    const char *names[] = {"wait_cycle.json"};
    expect_graph_error(names, 1,
                       "'b2' (gpu stream 20, rank 0) must end before traceEvents[13] 'a2' (gpu "
                       "stream 7, rank 0) starts, which must end before it starts, through a "
                       "cycle of 2 ops");
}
END_TEST

/* cuda_graph.json: one cudaGraphLaunch (10-30 us) whose three 1 ms kernels share its correlation
 * id, then a device synchronization: the kernels run back to back from 40 us (the launch's 10 us
 * lag kept), the synchronization returns 50 us after the last (3.09 ms), the step ends 10 us
 * later: 3.1 ms, all three kernels replayed. */
START_TEST(cuda_graph_launch_runs_its_kernels)
{
    replay_summary s;
    replay("cuda_graph.json", &s);
    ck_close(s.iteration_s, 3.1e-3, 1e-9);
    ck_close(s.gpu_active_s, 3e-3, 1e-9);
    report_replay_free(&s);
}
END_TEST

/* 256 CPU threads, each with one op, and a kernel: more lanes than the executor's 255 streams,
 * an input error (it was an assertion). */
START_TEST(too_many_threads_is_an_input_error)
{
    char path[] = "/tmp/protosim-threads-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"traceEvents\": [\n", f);
    for (int t = 0; t < 256; t++)
        fprintf(f,
                "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": %d, "
                "\"ts\": %d, \"dur\": 5},\n",
                t + 1, t * 10);
    fputs(
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": 1}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 2, "
        "\"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1}}\n]}\n",
        f);
    ck_assert_int_eq(fclose(f), 0);
    const char *p = path;
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_int_eq(trace_job_graph(&j, 4, &g, &task_of, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "257 CPU threads and GPU streams"), "%s", err.message);
    trace_job_free(&j);
    unlink(path);
}
END_TEST

START_TEST(world_larger_than_cluster)
{
    const char *names[] = {"world16.json"};
    expect_graph_error(names, 1, "a world of 16 ranks does not fit the cluster's 4 GPUs");
}
END_TEST

START_TEST(unmatched_collective)
{
    const char *names[] = {"rank0.json", "rank1_nocoll.json"};
    expect_graph_error(names, 2, "traceEvents[4] has no match");
}
END_TEST

/* Not JSON: the syntax error's line and column. */
START_TEST(not_json_is_located)
{
    const char *p = data("not_json.json");
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), PS_EINPUT);
    ck_assert_int_eq(err.line, 1);
    ck_assert_int_gt(err.column, 1);
}
END_TEST

/* The median of measured steps leaves the first out when there are more than two. */
START_TEST(step_median_rule)
{
    double three[] = {9.0, 2.0, 4.0}, two[] = {1.0, 3.0}, five[] = {100, 5, 1, 3, 2};
    ck_close(trace_step_median(three, 3), 3.0, 1e-12);
    ck_close(trace_step_median(two, 2), 2.0, 1e-12);
    ck_close(trace_step_median(five, 5), 2.5, 1e-12);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {launch_stream_order_and_sync,
                                  gzip_trace,
                                  step_as_cpu_op,
                                  allreduce_on_the_cluster,
                                  recorded_stream_wait,
                                  inferred_stream_wait,
                                  one_trace_per_rank,
                                  steps_window,
                                  last_step_only,
                                  blocked_launch_waits_for_the_gpu,
                                  thread_waits_for_another,
                                  param_comms_and_measured_broadcast,
                                  dependency_cycle_is_located,
                                  rocm_names_synchronize,
                                  pytorch_1_8_schema,
                                  too_many_threads_is_an_input_error,
                                  cuda_graph_launch_runs_its_kernels,
                                  launch_latency_is_kept,
                                  copy_begun_before_its_call_returned,
                                  bad_traces,
                                  backlog_before_the_trace,
                                  real_h200_trace,
                                  real_h100_gpu_bound_trace,
                                  not_json_is_located,
                                  world_larger_than_cluster,
                                  unmatched_collective,
                                  step_median_rule,
                                  NULL};
    return suite_run(suite_of("replay", "replay", 0, tests));
}
