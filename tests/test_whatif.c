/* test_whatif.c: `protosim replay --what-if` on small hand-written traces (tests/data/replay)
 * whose answers are worked out by hand: each spec moves the step by a computable amount. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/report/report_replay.h"
#include "../sim/whatif/whatif.h"
#include "../workloads/trace/trace.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* dgx4 (sim_dgx4); network:F changes it for the rest of that test only (each test runs in its
 * own process). */
static const cluster *dgx4(void)
{
    return sim_dgx4();
}

/* Replay tests/data/replay/NAME on dgx4 after the specs, as `protosim replay` does: the
 * predicted step is returned, each spec's effect into eff[i]. */
static double replay_whatif(const char *name, const char *const *specs, int n, whatif_effect *eff)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/%s", ps_data_dir(), name);
    const char *p = path;
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_job_load(&p, 1, 0, &j, &err) == 0, "%s", err.message);
    const cluster *c = dgx4();
    int steady = 0;
    for (int i = 0; i < n; i++) {
        whatif_spec s;
        ck_assert_msg(whatif_parse(specs[i], &s, &err) == 0, "%s", err.message);
        steady |= whatif_wants_steady_state(&s, 1, &j);
        whatif_spec_free(&s);
    }
    if (steady) /* as protosim replay does: the unchanged job of such specs is two steps too */
        whatif_steady_state(&j);
    for (int i = 0; i < n; i++) {
        whatif_spec s;
        ck_assert_msg(whatif_parse(specs[i], &s, &err) == 0, "%s", err.message);
        ck_assert_msg(whatif_apply(&s, &j, c, &eff[i], &err) == 0, "%s", err.message);
        whatif_spec_free(&s);
    }
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_msg(trace_job_graph(&j, c->n_gpus, &g, &task_of, &err) == 0, "%s", err.message);
    htae_options o;
    htae_default_options(&o);
    o.overlap_slowdown = 0.0;
    htae_result r;
    ck_assert_msg(htae_run(g, c, &o, &r, &err) == 0, "%s", err.message);
    replay_summary s;
    report_replay_summarize(&j, g, task_of, &r, &s);
    double step = s.iteration_s;
    report_replay_free(&s);
    htae_result_free(&r);
    trace_tasks_free(&j, task_of);
    graph_free(g);
    trace_job_free(&j);
    return step;
}

static double replay_one(const char *name, const char *spec, whatif_effect *eff)
{
    return replay_whatif(name, &spec, spec ? 1 : 0, eff);
}

/* allreduce.json (test_replay.c): 1 GB all-reduced by 4 GPUs on dgx4, nothing beside it: the
 * step is 40 us of host + the all-reduce. network:2 halves its bandwidth term, 2 (p-1)/p S / B,
 * and leaves the latencies. */
START_TEST(network_halves_the_bandwidth_term)
{
    whatif_effect e;
    double step = replay_one("allreduce.json", "network:2", &e);
    htae_options o;
    htae_default_options(&o);
    double lat, bw;
    sim_dgx4_allreduce(&o, 1e9, 4, &lat, &bw);
    double ar2 = lat + bw / 2;
    ck_close(step, 40e-6 + ar2, 1e-3);
    ck_assert_int_gt(e.kernels, 0); /* links */
}
END_TEST

/* param_comms.json (test_replay.c): the 1 GB all-reduce, then a broadcast the executor does
 * not model (its measured 300 us), sync and after: 15 us + all-reduce + 300 + 25 us. network:2
 * halves the all-reduce's bandwidth term and the broadcast's measured time. */
START_TEST(network_scales_measured_communication)
{
    whatif_effect e;
    double step = replay_one("param_comms.json", "network:2", &e);
    htae_options o;
    htae_default_options(&o);
    double lat, bw;
    sim_dgx4_allreduce(&o, 1e9, 4, &lat, &bw);
    double ar2 = lat + bw / 2;
    ck_close(e.kernel_s_before, 300e-6, 1e-9);
    ck_close(e.kernel_s_after, 150e-6, 1e-9);
    ck_close(step, 15e-6 + ar2 + 150e-6 + 25e-6, 1e-3);
}
END_TEST

/* sync.json (test_replay.c): two 1 ms kernels in a row on the critical path, step 2.065 ms.
 * Half of gemm_a's time: 1.565 ms. The factor follows the last colon. */
START_TEST(scale_on_the_critical_path)
{
    whatif_effect e;
    ck_close(replay_one("sync.json", "scale:gemm_a:0.5", &e), 2.065e-3 - 0.5e-3, 1e-9);
    ck_assert_int_eq(e.kernels, 1);
    ck_close(e.kernel_s_before, 1e-3, 1e-9);
    ck_close(e.kernel_s_after, 0.5e-3, 1e-9);
    ck_close(replay_one("sync.json", "scale:^gemm_(a|b)$:2", &e), 2.065e-3 + 2e-3, 1e-9);
    ck_assert_int_eq(e.kernels, 2);
}
END_TEST

/* remove.json: launches of 10 us at 0 and 10 us, kernel_long (1 ms on stream 7) and
 * kernel_short (0.2 ms on stream 8, off the critical path), a device synchronization (own part
 * 5 us), 5 us after: 1.020 ms. Without kernel_short: the same. Without kernel_long the
 * synchronization waits for kernel_short (20 + 200 us): 220 + 5 + 5 = 230 us; the launches
 * stay. */
START_TEST(remove_off_and_on_the_critical_path)
{
    whatif_effect e;
    ck_close(replay_one("remove.json", NULL, &e), 1.020e-3, 1e-9);
    ck_close(replay_one("remove.json", "remove:short", &e), 1.020e-3, 1e-9);
    ck_assert_int_eq(e.kernels, 1);
    ck_assert_int_eq(e.launches_removed, 0);
    ck_close(replay_one("remove.json", "remove:kernel_long", &e), 230e-6, 1e-9);
}
END_TEST

/* gemm.json: on a V100, aten::addmm (4096 x 4096).(4096 x 4096) in fp32 (shapes recorded): a
 * 10 ms volta_sgemm launched at 0 (10 us), then a 1 ms elementwise add; sync own 5 us, 5 us
 * after: 10 us + 10 ms + 1 ms + 10 us = 11.020 ms. amp: the sgemm takes 10 ms x the cost model's fp16 / fp32 time of that GEMM. Both
 * are compute bound with the same tiling (4096 = 32 tiles of 128; 1024 tiles in 13 waves of
 * 80 SMs; k 4096 / (4096 + 64)), so the ratio is the rates' (15.7 TFLOP/s x 0.90, the V100's
 * devices.yaml sgemm_efficiency) / (125 TFLOP/s x 0.73 tensor cores). */
START_TEST(amp_on_a_known_gemm)
{
    whatif_effect e;
    double step = replay_one("gemm.json", "amp", &e);
    device_table t;
    model_devices(&t);
    const device_spec *v100 = device_table_find(&t, "V100-SXM2-32GB");
    double n = 4096, ratio = cost_gemm_kernel_seconds(1, n, n, n, PREC_FP16, v100) /
                             cost_gemm_kernel_seconds(1, n, n, n, PREC_FP32, v100);
    ck_close(ratio, (15.7 * 0.90) / (125 * 0.73), 1e-9);
    ck_assert_int_eq(e.kernels, 1);
    ck_close(e.kernel_s_after, 10e-3 * ratio, 1e-9);
    ck_close(step, 11.020e-3 - 10e-3 * (1 - ratio), 1e-9);
    /* without shapes: the large square GEMM's ratio, the same rates here */
    ck_close(replay_one("gemm_noshape.json", "amp", &e), 11.020e-3 - 10e-3 * (1 - ratio), 1e-9);
    device_table_free(&t);
}
END_TEST

/* amp_shapes.json on a V100: aten::bmm 8 x (512 x 256).(256 x 1024) fp32 (a 2 ms sgemm), an
 * fp32 aten::cudnn_convolution of a 32 x 64 x 56 x 56 input by 64 x 64 x 3 x 3 weights (a 1 ms
 * scudnn kernel: the implicit GEMM m = 32 x 56 x 56, n = 64, k = 64 x 3 x 3), and an h884 half
 * GEMM (0.52 ms) that amp leaves alone; serial on one stream after 10 us of launch, 10 us of
 * sync and after: 3.540 ms. */
START_TEST(amp_reads_bmm_and_convolution_shapes)
{
    whatif_effect e;
    double step = replay_one("amp_shapes.json", "amp", &e);
    device_table t;
    model_devices(&t);
    const device_spec *v = device_table_find(&t, "V100-SXM2-32GB");
    double bmm = 2e-3 * cost_gemm_kernel_seconds(8, 512, 1024, 256, PREC_FP16, v) /
                 cost_gemm_kernel_seconds(8, 512, 1024, 256, PREC_FP32, v);
    double m = 32 * 56 * 56, conv = 1e-3 * cost_gemm_kernel_seconds(1, m, 64, 576, PREC_FP16, v) /
                                    cost_gemm_kernel_seconds(1, m, 64, 576, PREC_FP32, v);
    ck_assert_int_eq(e.kernels, 2);
    ck_close(e.kernel_s_before, 3e-3, 1e-9);
    ck_close(e.kernel_s_after, bmm + conv, 1e-9);
    /* the shapes matter: the large square GEMM's ratio would give 3 ms x 0.133 */
    ck_assert(fabs(e.kernel_s_after - 3e-3 * (15.7 * 0.90) / (125 * 0.73)) > 1e-4);
    ck_close(step, 10e-6 + bmm + conv + 0.52e-3 + 10e-6, 1e-9);
    device_table_free(&t);
}
END_TEST

/* device:A100-SXM4-80GB on gemm.json: the sgemm x the cost model's A100 / V100 fp32 time of its
 * shape; the elementwise add x 900 / 2039 GB/s (HBM bandwidths); each moves the step. */
START_TEST(device_recosts_kernels)
{
    whatif_effect e;
    double step = replay_one("gemm.json", "device:A100-SXM4-80GB", &e);
    device_table t;
    model_devices(&t);
    const device_spec *v100 = device_table_find(&t, "V100-SXM2-32GB");
    const device_spec *a100 = device_table_find(&t, "A100-SXM4-80GB");
    double n = 4096, gemm = 10e-3 * cost_gemm_kernel_seconds(1, n, n, n, PREC_FP32, a100) /
                            cost_gemm_kernel_seconds(1, n, n, n, PREC_FP32, v100);
    double add = 1e-3 * 900.0 / 2039.0;
    ck_close(v100->hbm_bw / a100->hbm_bw, 900.0 / 2039.0, 1e-9);
    ck_assert_int_eq(e.kernels, 2);
    ck_close(e.kernel_s_after, gemm + add, 1e-9);
    ck_close(step, 10e-6 + gemm + add + 10e-6, 1e-9);
    /* then amp costs the sgemm on the A100 */
    const char *both[] = {"device:A100-SXM4-80GB", "amp"};
    whatif_effect e2[2];
    double amp_ratio = cost_gemm_kernel_seconds(1, n, n, n, PREC_FP16, a100) /
                       cost_gemm_kernel_seconds(1, n, n, n, PREC_FP32, a100);
    ck_close(replay_whatif("gemm.json", both, 2, e2), 10e-6 + gemm * amp_ratio + add + 10e-6, 1e-9);
    device_table_free(&t);
}
END_TEST

/* fuse.json: aten::foo launches (10 us each, from 0) three elementwise kernels of 100, 300 and
 * 200 us and an sgemm of 100 us; aten::bar one elementwise kernel of 50 us; a device sync (own
 * 5 us), 5 us after: 770 us. The three become one kernel of 300 us (the run's longest) and its
 * two other launches go: the host reaches the sgemm's launch 20 us earlier, the GPU runs
 * 10 + 300 + 100 + 50, then 5 + 5: 470 us. aten::bar's kernel is another op's: kept. */
START_TEST(fuse_elementwise_removes_the_right_launches)
{
    whatif_effect e;
    ck_close(replay_one("fuse.json", NULL, &e), 770e-6, 1e-9);
    ck_close(replay_one("fuse.json", "fuse-elementwise", &e), 470e-6, 1e-9);
    ck_assert_int_eq(e.kernels, 3);
    ck_assert_int_eq(e.launches_removed, 2);
    ck_close(e.host_s_removed, 20e-6, 1e-9);
    ck_close(e.kernel_s_before, 600e-6, 1e-9);
    ck_close(e.kernel_s_after, 300e-6, 1e-9);
    /* optimizer kernels are fuse-optimizer's */
    ck_close(replay_one("optimizer.json", "fuse-elementwise", &e), 120e-6, 1e-9);
    ck_assert_int_eq(e.kernels, 0);
}
END_TEST

/* fuse_shapes.json: inside aten::foo, aten::mul (two 1024 x 1024 fp32 tensors, 100 us),
 * aten::add (two tensors and a scalar, 100 us), aten::relu (one tensor, 60 us): unfused they read
 * and write 3 + 3 + 2 = 8 tensors; fused, the 5 tensor inputs less the 2 intermediates, and one
 * output: 4. The fused kernel takes 260 us x 4 / 8 = 130 us; its two other launches go: the
 * host syncs at 10 us, the GPU ends at 10 + 130, then 5 + 5: 150 us (unchanged 280 us). */
START_TEST(fuse_elementwise_with_shapes)
{
    whatif_effect e;
    ck_close(replay_one("fuse_shapes.json", NULL, &e), 280e-6, 1e-9);
    ck_close(replay_one("fuse_shapes.json", "fuse-elementwise", &e), 150e-6, 1e-9);
    ck_close(e.kernel_s_after, 130e-6, 1e-9);
    ck_assert_int_eq(e.launches_removed, 2);
}
END_TEST

/* optimizer.json: inside Optimizer.step#SGD.step, aten::_foreach_add_ takes the per-tensor
 * path: three launches (10 us each) of 20, 30 and 50 us kernels; a device sync (own 5 us), 5 us
 * after: 120 us. One multi-tensor launch: 20 + (30 - 20) + (50 - 20) = 60 us of GPU from 10 us
 * (one launch): 10 + 60 + 5 + 5 = 80 us. */
START_TEST(fuse_optimizer_makes_one_launch)
{
    whatif_effect e;
    ck_close(replay_one("optimizer.json", NULL, &e), 120e-6, 1e-9);
    ck_close(replay_one("optimizer.json", "fuse-optimizer", &e), 80e-6, 1e-9);
    ck_assert_int_eq(e.launches_removed, 2);
    ck_close(e.kernel_s_after, 60e-6, 1e-9);
}
END_TEST

/* wakeup.json: the main thread launches kernel_fwd (1 ms) and synchronizes its stream, runs
 * aten::backward_start (1010-1020 us) and waits; the autograd thread, idle since the start,
 * resumes 10 us later (1030) with aten::bwd (a 10 us launch, 90 us more); the main thread's
 * wait ends 15 us after it (1145), aten::step, 1150 us. The autograd thread was woken by the
 * main thread: half of kernel_fwd starts it 500 us earlier, so the step is 650 us (with the
 * wake-up kept measured it would stay 1150). */
START_TEST(a_faster_forward_starts_the_backward_earlier)
{
    whatif_effect e;
    ck_close(replay_one("wakeup.json", NULL, &e), 1150e-6, 1e-9);
    ck_close(replay_one("wakeup.json", "scale:kernel_fwd:0.5", &e), 650e-6, 1e-9);
}
END_TEST

/* With what-ifs the replay runs twice in one process (unchanged, then changed): each result's
 * times count from its own run's start, as a trace without ProfilerSteps (its step: the whole
 * replay) needs. */
START_TEST(a_second_run_counts_from_its_start)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/sync.json", ps_data_dir());
    const char *p = path;
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    const cluster *c = dgx4();
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_int_eq(trace_job_graph(&j, c->n_gpus, &g, &task_of, &err), 0);
    htae_options o;
    htae_default_options(&o);
    htae_result r1, r2;
    ck_assert_int_eq(htae_run(g, c, &o, &r1, &err), 0);
    ck_assert_int_eq(htae_run(g, c, &o, &r2, &err), 0);
    ck_close(r1.makespan, 2.065e-3, 1e-9);
    ck_close(r2.makespan, 2.065e-3, 1e-9);
    ck_assert(r2.start[0] == r1.start[0] && r2.end[g->n_tasks - 1] == r1.end[g->n_tasks - 1]);
    htae_result_free(&r1);
    htae_result_free(&r2);
    trace_tasks_free(&j, task_of);
    graph_free(g);
    trace_job_free(&j);
}
END_TEST

/* Specs apply in order: scale then remove. */
START_TEST(specs_apply_in_order)
{
    const char *v[] = {"scale:gemm_a:0.5", "remove:gemm_b"};
    whatif_effect e[2];
    ck_close(replay_whatif("sync.json", v, 2, e), 2.065e-3 - 0.5e-3 - 1e-3, 1e-9);
}
END_TEST

static void bad_spec(const char *text, const char *says)
{
    whatif_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_parse(text, &s, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "--what-if") && strstr(err.message, text) &&
                      strstr(err.message, says),
                  "%s: %s", text, err.message);
}

START_TEST(bad_specs)
{
    bad_spec("scale:(:2", "bad regular expression '('");
    bad_spec("scale:gemm", "expected scale:REGEX:F");
    bad_spec("scale:gemm:x", "factor");
    bad_spec("scale::2", "empty regular expression");
    bad_spec("network:0", "factor");
    bad_spec("network:-1", "factor");
    bad_spec("remove:[", "bad regular expression");
    bad_spec("priority:weights", "gradients");
    bad_spec("device:", "devices.yaml");
    bad_spec("priority:gradientsx", "the only priority is 'gradients'");
    bad_spec("priority:gradients:0", "slice size");
    bad_spec("priority:gradients:4MB", "slice size");
    bad_spec("amplify", "expected network:F");
    /* a regex may hold '::' */
    whatif_spec s;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_parse("scale:at::native::.*:0.5", &s, &err), 0);
    ck_close(s.factor, 0.5, 1e-12);
    ck_assert_int_eq(regexec(&s.re, "at::native::add", 0, NULL, 0), 0);
    whatif_spec_free(&s);
}
END_TEST

/* What the replay cannot answer is refused: an unknown GPU, a traced GPU not in devices.yaml. */
START_TEST(refused_specs)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/gemm.json", ps_data_dir());
    const char *p = path;
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    const cluster *c = dgx4();
    whatif_effect e;
    const char *specs[] = {"device:V200"};
    const char *says[] = {"not a GPU of the device table"};
    for (int i = 0; i < 1; i++) {
        whatif_spec s;
        ps_error_clear(&err);
        ck_assert_int_eq(whatif_parse(specs[i], &s, &err), 0);
        ck_assert_int_eq(whatif_apply(&s, &j, c, &e, &err), PS_EINPUT);
        ck_assert_msg(strstr(err.message, specs[i]) && strstr(err.message, says[i]), "%s",
                      err.message);
    }
    snprintf(j.ranks[0].device, sizeof j.ranks[0].device, "NVIDIA Z100-PG999-100");
    whatif_spec s;
    ck_assert_int_eq(whatif_parse("amp", &s, &err), 0);
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_apply(&s, &j, c, &e, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "Z100-PG999-100") && strstr(err.message, "gemm.json"), "%s",
                  err.message);
    /* the part number CUDA gives the A100 SXM4 40 GB (AlexNet's trace) is in the one map of
     * CUDA names (profile_device_of_cuda_name) */
    snprintf(j.ranks[0].device, sizeof j.ranks[0].device, "NVIDIA A100-PG509-200");
    ps_error_clear(&err);
    ck_assert_msg(whatif_apply(&s, &j, c, &e, &err) == 0, "%s", err.message);
    /* the name CUDA gives an H100 SXM is devices.yaml's H100-SXM5-80GB */
    snprintf(j.ranks[0].device, sizeof j.ranks[0].device, "NVIDIA H100 80GB HBM3");
    ps_error_clear(&err);
    ck_assert_msg(whatif_apply(&s, &j, c, &e, &err) == 0, "%s", err.message);
    ck_assert_int_eq(e.kernels, 1);
    trace_job_free(&j);
}
END_TEST

/* p3.json: DDP-like, 3 layers on dgx4 (world 4), one stream of compute (7), one of NCCL (20).
 * Host: aten::linear x 3 (10 us each, Sequence numbers 1 and 3; layer 2's is on the aten::t
 * inside it, as a weight's is, and an aten::add_ inside it records 3, the number the next node
 * takes, as batch norm's num_batches_tracked.add_ does: layer 3's linear, the last forward op
 * with 3, is the one) launch fwd1-3 (100 us each, from 10 us); aten::item
 * synchronizes stream 7 (own 5 us: 315 us); then for layer 3, 2, 1: its backward node
 * (AddmmBackward0, TBackward0 for layer 2; 10 us, the layer's Sequence number) launches bwd
 * (100 us) and an
 * AccumulateGrad (30 us) launches the layer's all-reduce, stream 20 waiting for that bwd
 * (recorded): 40 MB for layer 3, 10 MB for layers 2 and 1; the optimizer (30 us of host)
 * waits for stream 20 and runs a 30 us kernel; the step ends at 470 us.
 * On the GPU: bwd3 [325, 425], bwd2 [425, 525], bwd1 [525, 625]; the all-reduces are ready at
 * R3 = 425, R2 = 525, R1 = 625 us, and take T3 and T = T2 = T1 (dgx4's ring, sim_dgx4_allreduce). */
static void p3_times(double slice, double *t3, double *t)
{
    htae_options o;
    htae_default_options(&o);
    double lat, bw;
    sim_dgx4_allreduce(&o, slice > 0 ? slice : 40e6, 4, &lat, &bw);
    *t3 = lat + bw;
    sim_dgx4_allreduce(&o, slice > 0 ? slice : 10e6, 4, &lat, &bw);
    *t = lat + bw;
}

/* The forward of the next step as P3 runs it: each layer's update share (5, 5 and 20 us of
 * the optimizer's 30, by bucket bytes 10, 10, 40 MB) after its all-reduce (ends e1, e2, e3),
 * then its 100 us kernel; fwd1 launched at 480 us. The period: fwd3's end + 5 us of sync + the
 * 155 us of host after it, less the first step's 470 us. */
static double p3_period(double e1, double e2, double e3)
{
    double f1 = fmax(480e-6, e1 + 5e-6) + 100e-6;
    double f2 = fmax(f1, e2) + 5e-6 + 100e-6;
    double f3 = fmax(f2, e3) + 20e-6 + 100e-6;
    return f3 + 5e-6 + 155e-6 - 470e-6;
}

/* FIFO, the traced order: the next forward waits for the optimizer, which waits for every
 * all-reduce: AR3 [425, 425 + T3], AR2, AR1 after it, the optimizer's 30 us, then fwd1-3 and
 * the same host: the period is 425 + T3 + 2T + 30 + 300 + 5 + 155 - 470 us. P3: AR3 runs alone
 * (the only one ready); when it ends (after 625 us) AR1, needed first, goes before AR2; the
 * next fwd1 waits only for AR1 and its 5 us update, AR2 overlaps fwd1. */
START_TEST(priority_gradients_by_hand)
{
    double t3, t;
    p3_times(0, &t3, &t);
    whatif_effect e;
    ck_close(replay_one("p3.json", NULL, &e), 470e-6, 1e-9); /* one step: the host's span */
    double fifo = 425e-6 + t3 + 2 * t + 30e-6 + 300e-6 + 5e-6 + 155e-6 - 470e-6;
    const char *none[] = {"priority:gradients"};
    whatif_effect e2[1];
    double e3 = 425e-6 + t3;
    ck_assert(e3 > 625e-6); /* AR1 and AR2 both wait for AR3 */
    double p3 = p3_period(e3 + t, e3 + 2 * t, e3);
    ck_close(replay_whatif("p3.json", none, 1, e2), p3, 1e-6);
    ck_close(replay_whatif("p3_2steps.json", none, 1, e2), p3, 1e-6);
    /* p3_shapes.json: shapes recorded, each AccumulateGrad's aten::add_ of its gradient (10M,
     * 2.5M, 2.5M floats) makes its bucket's bytes: the same answer */
    ck_close(replay_whatif("p3_shapes.json", none, 1, e2), p3, 1e-6);
    ck_assert_int_eq(e2[0].kernels, 3);
    ck_close(e2[0].kernel_s_before, 30e-6, 1e-9);
    ck_close(e2[0].kernel_s_after, 30e-6, 1e-9);
    ck_assert(p3 < fifo - 50e-6);
    /* the unchanged period the what-if is compared with (protosim replay runs it first) */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/p3.json", ps_data_dir());
    const char *p = path;
    trace_job j;
    ps_error err;
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    whatif_steady_state(&j);
    ck_assert_int_eq(j.ranks[0].n_steps, 2);
    ck_assert_int_eq(j.ranks[0].n_grad_colls, 3);
    exec_graph *g;
    uint32_t **task_of;
    ck_assert_int_eq(trace_job_graph(&j, dgx4()->n_gpus, &g, &task_of, &err), 0);
    htae_options o;
    htae_default_options(&o);
    o.overlap_slowdown = 0.0;
    htae_result r;
    ck_assert_int_eq(htae_run(g, dgx4(), &o, &r, &err), 0);
    replay_summary sum;
    report_replay_summarize(&j, g, task_of, &r, &sum);
    ck_close(sum.iteration_s, fifo, 1e-6);
    ck_assert_int_eq(sum.steps, 1);
    ck_close(sum.measured_step_s, 470e-6, 1e-9);
    report_replay_free(&sum);
    htae_result_free(&r);
    trace_tasks_free(&j, task_of);
    graph_free(g);
    trace_job_free(&j);
}
END_TEST

/* priority:gradients:5000000: 5 MB slices (AR3 8, AR2 and AR1 2 each), each a collective of
 * its own (launch and ring latency each: ts per slice). AR3's slices from 425 us; AR2 is ready
 * at 525, inside AR3's second slice, and takes the third; AR1 is ready at 625, inside it, and
 * takes the next two, then AR2's second, then AR3's six others: AR1 ends at 425 + 5 ts, AR2 at
 * 425 + 6 ts, AR3 at 425 + 12 ts. On dgx4 a slice's fixed 51 us make slicing cost more than
 * the order gains: the period is longer than FIFO's. */
START_TEST(priority_gradients_sliced_by_hand)
{
    double ts, ts10;
    p3_times(5e6, &ts, &ts10);
    ck_close(ts, ts10, 1e-12);
    ck_assert(425e-6 + ts < 525e-6 && 525e-6 <= 425e-6 + 2 * ts);     /* AR2 ready in slice 2 */
    ck_assert(425e-6 + 2 * ts < 625e-6 && 625e-6 <= 425e-6 + 3 * ts); /* AR1 in slice 3 */
    const char *spec[] = {"priority:gradients:5000000"};
    whatif_effect e[1];
    double p3 = p3_period(425e-6 + 5 * ts, 425e-6 + 6 * ts, 425e-6 + 12 * ts);
    ck_close(replay_whatif("p3.json", spec, 1, e), p3, 1e-6);
    double t3, t;
    p3_times(0, &t3, &t);
    ck_assert(p3 > 425e-6 + t3 + 2 * t + 30e-6 + 300e-6 + 5e-6 + 155e-6 - 470e-6);
    /* p3_2steps.json: the same step twice, the second from 2000 us (the first's GPU work long
     * done): the last step and its copy give the same period; the first step's collectives
     * stay as traced (three, neither sliced nor floating) */
    ck_close(replay_whatif("p3_2steps.json", spec, 1, e), p3, 1e-6);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/p3_2steps.json", ps_data_dir());
    const char *p = path;
    trace_job j;
    ps_error err;
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    whatif_spec sp;
    ck_assert_int_eq(whatif_parse(spec[0], &sp, &err), 0);
    ck_assert_int_eq(whatif_apply(&sp, &j, dgx4(), e, &err), 0);
    int first = 0, floating = 0;
    for (uint32_t i = 0; i < j.ranks[0].n_ops; i++) {
        const trace_op *op = &j.ranks[0].ops[i];
        first += op->kind == TRACE_COLL && op->step == 0;
        floating += op->floating && op->step == 0;
    }
    ck_assert_int_eq(first, 3);
    ck_assert_int_eq(floating, 0);
    ck_assert_int_eq(j.ranks[0].n_steps, 3);
    trace_job_free(&j);
}
END_TEST

/* Without gradient collectives (gemm.json: one GPU's kernels) there is nothing to reorder:
 * kernels 0, the replay as without the what-if (11.020 ms). Where the trace does not tell
 * which forward op uses a bucket's parameters, or the optimizer runs a collective, it is
 * refused, naming the trace and the event. */
START_TEST(priority_gradients_refused_or_nothing)
{
    const char *spec[] = {"priority:gradients"};
    whatif_effect e[1];
    ck_close(replay_whatif("gemm.json", spec, 1, e), 11.020e-3, 1e-9);
    ck_assert_int_eq(e[0].kernels, 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/p3_noseq.json", ps_data_dir());
    const char *p = path;
    trace_job j;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    whatif_spec s;
    ck_assert_int_eq(whatif_parse("priority:gradients", &s, &err), 0);
    whatif_effect x;
    ck_assert_int_eq(whatif_apply(&s, &j, dgx4(), &x, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "priority:gradients") &&
                      strstr(err.message, "p3_noseq.json") && strstr(err.message, "traceEvents[") &&
                      strstr(err.message, "no forward cpu_op of the replayed window"),
                  "%s", err.message);
    trace_job_free(&j);
    /* p3_badbucket.json: layer 3's gradient holds 1000 floats, its bucket 40 MB: DDP did not
     * fill it in accumulation order (or it holds other gradients): refused */
    snprintf(path, sizeof path, "%s/tests/data/replay/p3_badbucket.json", ps_data_dir());
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_apply(&s, &j, dgx4(), &x, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "p3_badbucket.json") &&
                      strstr(err.message, "carries 40000000 bytes") &&
                      strstr(err.message, "hold 1000 elements"),
                  "%s", err.message);
    trace_job_free(&j);
    /* p3.json and p3_rank1.json, one trace per rank: each rank would pick its own order */
    char path1[1024];
    snprintf(path, sizeof path, "%s/tests/data/replay/p3.json", ps_data_dir());
    snprintf(path1, sizeof path1, "%s/tests/data/replay/p3_rank1.json", ps_data_dir());
    const char *two[] = {path, path1};
    ck_assert_int_eq(trace_job_load(two, 2, 0, &j, &err), 0);
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_apply(&s, &j, dgx4(), &x, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "several traces"), "%s", err.message);
    trace_job_free(&j);
    /* p3_optcoll.json: the optimizer step also all-reduces (a distributed optimizer) */
    snprintf(path, sizeof path, "%s/tests/data/replay/p3_optcoll.json", ps_data_dir());
    ck_assert_int_eq(trace_job_load(&p, 1, 0, &j, &err), 0);
    ps_error_clear(&err);
    ck_assert_int_eq(whatif_apply(&s, &j, dgx4(), &x, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "p3_optcoll.json") &&
                      strstr(err.message, "optimizer step runs a collective (traceEvents[54])"),
                  "%s", err.message);
    trace_job_free(&j);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {network_halves_the_bandwidth_term,
                                  network_scales_measured_communication,
                                  scale_on_the_critical_path,
                                  remove_off_and_on_the_critical_path,
                                  amp_on_a_known_gemm,
                                  amp_reads_bmm_and_convolution_shapes,
                                  device_recosts_kernels,
                                  fuse_elementwise_removes_the_right_launches,
                                  fuse_elementwise_with_shapes,
                                  fuse_optimizer_makes_one_launch,
                                  a_faster_forward_starts_the_backward_earlier,
                                  a_second_run_counts_from_its_start,
                                  specs_apply_in_order,
                                  bad_specs,
                                  refused_specs,
                                  priority_gradients_by_hand,
                                  priority_gradients_sliced_by_hand,
                                  priority_gradients_refused_or_nothing,
                                  NULL};
    return suite_run(suite_of("whatif", "whatif", 0, tests));
}
