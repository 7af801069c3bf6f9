/* test_hetero.c: heterogeneous ranks (mixed GPU models, stragglers with a slowdown), when
 * data-parallel replicas may be folded, and the report's pipeline bubble against the textbook. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../sim/run/run.h"
#include "../strategies/compile/compile.h"
#include "../strategies/schedule.h"
#include "fixture.h"
#include "sim_util.h"
#include "suite_util.h"

/* |got - want| <= tol: an absolute tolerance (sim_util.h's ck_close is relative). */
#define ck_near(got, want, tol)                                                                    \
    ck_assert_msg(fabs((got) - (want)) <= (tol), "got %.12g, want %.12g", (double)(got),           \
                  (double)(want))

/* What a simulated plan tells these tests. */
typedef struct outcome {
    double makespan;
    int simulated_replicas;
    int simulated_tp; /* tensor indices that compute */
    double dp_coll_s; /* duration of rank 0's gradient all-reduce */
    double peak_flops_per_gpu;
} outcome;

typedef struct plan_run {
    const char *strategy_rel, *cluster_rel;
    int fold;
} plan_run;

static void plan_outcome(const void *arg, void *out)
{
    const plan_run *x = arg;
    sim_fixture f;
    fixture_load(&f, x->strategy_rel, x->cluster_rel);
    compile_options o;
    compile_default_options(&o);
    o.fold_data_parallel = x->fold;
    fixture_compile(&f, &o);
    htae_default_options(&f.o);
    fixture_run(&f);
    const compiled_plan *p = &f.p;
    outcome *res = out;
    *res =
        (outcome){f.r.makespan, p->simulated_replicas, p->simulated_tp, 0.0, p->peak_flops_per_gpu};
    for (uint32_t t = 0; t < p->graph->n_tasks; t++)
        if (p->graph->tasks[t].rank == 0 && p->graph->tasks[t].category == CAT_DP_COMM)
            res->dp_coll_s = f.r.end[t] - f.r.start[t];
}

/* Compile and simulate one plan in a child process (fixture_forked: a test compares several
 * clusters) and hand back its outcome. */
static outcome run_plan(const char *strategy_rel, const char *cluster_rel, int fold)
{
    plan_run x = {strategy_rel, cluster_rel, fold};
    outcome out;
    fixture_forked(plan_outcome, &x, &out, sizeof out);
    return out;
}

/* The hand model of one replica of tests/data/hetero/dp2.yaml (one GPU, one segment per pass):
 * the host issues every kernel of every op in turn, launch/k each; the GPU runs kernel j once
 * it is issued and the previous one is done:
 *     host += launch / k;  gpu = max(gpu, host) + slowdown * kernel / k
 * over forward (ops in order) then backward (ops reversed, 2x the kernels) of each of the two
 * micro-batches. Returns when the GPU ends the last backward. */
typedef struct hand {
    workload_graph wg;
    device_table devices;
    precision_t prec;
    int micro_batches;
} hand;

static void hand_load(hand *h)
{
    char dp[1024];
    snprintf(dp, sizeof dp, "%s/topology/devices/devices.yaml", ps_data_dir());
    ps_error err;
    ps_error_clear(&err);
    strategy s;
    sim_strategy_load("tests/data/hetero/dp2.yaml", &s);
    ck_assert_int_eq(workload_build(&s.model, s.micro_batch, s.precision, &h->wg, &err), 0);
    ck_assert_int_eq(device_table_load(dp, &h->devices, &err), 0);
    h->prec = s.precision;
    h->micro_batches = strategy_micro_batches(&s);
    ck_assert_int_eq(h->micro_batches, 2); /* global 16 / (micro 4 x DP 2) */
    strategy_free(&s);
}

static void hand_free(hand *h)
{
    workload_graph_free(&h->wg);
    device_table_free(&h->devices);
}

static const device_spec *dev(const hand *h, const char *name)
{
    const device_spec *d = device_table_find(&h->devices, name);
    ck_assert_msg(d != NULL, "%s", name);
    return d;
}

static void hand_op(double *host, double *gpu, const workload_op *op, op_pass pass,
                    precision_t prec, const device_spec *d, double slowdown)
{
    double launch = cost_op_launch_seconds(op, pass);
    double kernel = cost_op_kernel_seconds(op, pass, prec, d) * slowdown;
    int k = cost_op_kernels(op, pass);
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        *host += launch / k;
        *gpu = (*gpu > *host ? *gpu : *host) + kernel / k;
    }
}

static double hand_compute(const hand *h, const device_spec *d, double slowdown)
{
    double host = 0, gpu = 0;
    for (int m = 0; m < h->micro_batches; m++) {
        for (int i = 0; i < h->wg.n_ops; i++)
            hand_op(&host, &gpu, &h->wg.ops[i], PASS_FWD, h->prec, d, slowdown);
        for (int i = h->wg.n_ops - 1; i >= 0; i--)
            hand_op(&host, &gpu, &h->wg.ops[i], PASS_BWD, h->prec, d, slowdown);
    }
    return gpu;
}

/* Adam over the whole model (one replica holds it all): GPU time x slowdown + host overhead. */
static double hand_optimizer(const hand *h, const device_spec *d, double slowdown)
{
    return cost_optimizer_seconds(h->wg.total_params, 1, h->prec, 1, d) * slowdown +
           cost_iteration_overhead_seconds();
}

/* Each replica: compute C, then the gradient all-reduce A (it starts when both replicas have
 * finished their backward: the slower one sets it), then the optimizer O on its own GPU. So
 *     iteration = max(C_0, C_1) + A + max(O_0, O_1).
 * All-H100: C_H + A + O_H. H100 + A100: the A100 is slower at both (lower peak, slower HBM):
 *     C_A + A + O_A, longer by (C_A - C_H) + (O_A - O_H).
 * A moves the same bytes on the same link in both runs, but NCCL's constants are per GPU
 * generation (devices.yaml): the all-H100 group pays the H100's, the mixed group the slower
 * member's (the A100 defaults: a longer launch, a lower NVLink efficiency), so A_mixed > A_H.
 * With today's cost model: C_H 19.58 ms, C_A 39.86 ms, O_H 2.47 ms, O_A 3.91 ms, A 2.60 ms,
 * so 24.65 ms -> 46.37 ms, longer by 20.28 + 1.44 = 21.72 ms. Before per-rank costing the
 * A100 replica ran on the H100's templates: longer by O_A - O_H only. */
START_TEST(mixed_h100_a100_runs_at_the_a100s_pace)
{
    hand h;
    hand_load(&h);
    const device_spec *h100 = dev(&h, "H100-SXM5-80GB"), *a100 = dev(&h, "A100-SXM4-80GB");
    double c_h = hand_compute(&h, h100, 1.0), c_a = hand_compute(&h, a100, 1.0);
    double o_h = hand_optimizer(&h, h100, 1.0), o_a = hand_optimizer(&h, a100, 1.0);
    ck_assert(c_a > c_h && o_a > o_h);

    outcome all_h = run_plan("tests/data/hetero/dp2.yaml", "tests/data/hetero/two-h100.xml", 1);
    outcome mixed = run_plan("tests/data/hetero/dp2.yaml", "tests/data/hetero/h100-a100.xml", 1);
    ck_assert_int_eq(all_h.simulated_replicas, 1); /* alike: folded */
    ck_assert_int_eq(mixed.simulated_replicas, 2); /* different GPUs: every replica simulated */
    ck_assert(mixed.dp_coll_s > all_h.dp_coll_s);
    ck_near(all_h.makespan, c_h + all_h.dp_coll_s + o_h, 1e-9);
    ck_near(mixed.makespan, c_a + mixed.dp_coll_s + o_a, 1e-9);
    ck_near(mixed.makespan - all_h.makespan,
            (c_a - c_h) + (o_a - o_h) + (mixed.dp_coll_s - all_h.dp_coll_s), 1e-9);
    /* MFU against the sum of the GPUs' peaks: the mean per GPU, (989.4 + 312) / 2 TFLOP/s */
    ck_assert(all_h.peak_flops_per_gpu == h100->peak_flops[PREC_BF16]);
    ck_near(mixed.peak_flops_per_gpu,
            (h100->peak_flops[PREC_BF16] + a100->peak_flops[PREC_BF16]) / 2, 1.0);
    ck_near(mixed.peak_flops_per_gpu, 650.7e12, 1.0);
    hand_free(&h);
}
END_TEST

/* Two A100, rank 1 with slowdown 1.2: its kernels take 1.2x, its host launches do not. Against
 * two plain A100 the iteration is longer by (C(1.2) - C(1)) + 0.2 O_gpu, C from the flow shop
 * above with every kernel x 1.2 and O_gpu the optimizer's GPU time. C(1.2) - C(1) is at most
 * 0.2 x (the kernels' total): host-bound kernels hide part of the slowdown. Today: C(1) 39.86
 * ms, C(1.2) 47.76 ms (kernels 39.72 ms: at most 7.94 ms more), O_gpu 3.91 ms, so 46.37 ms ->
 * 55.05 ms, longer by 7.90 + 0.78 = 8.68 ms. */
START_TEST(straggler_slowdown_lengthens_the_iteration)
{
    hand h;
    hand_load(&h);
    const device_spec *a100 = dev(&h, "A100-SXM4-80GB");
    double c1 = hand_compute(&h, a100, 1.0), c12 = hand_compute(&h, a100, 1.2);
    double o1 = hand_optimizer(&h, a100, 1.0), o12 = hand_optimizer(&h, a100, 1.2);
    double kernels = 0;
    for (int i = 0; i < h.wg.n_ops; i++)
        kernels += cost_op_kernel_seconds(&h.wg.ops[i], PASS_FWD, h.prec, a100) +
                   cost_op_kernel_seconds(&h.wg.ops[i], PASS_BWD, h.prec, a100);
    kernels *= h.micro_batches;
    ck_assert(c12 > c1 && c12 - c1 <= 0.2 * kernels + 1e-12);
    ck_near(o12 - o1, 0.2 * cost_optimizer_seconds(h.wg.total_params, 1, h.prec, 1, a100), 1e-15);

    outcome plain = run_plan("tests/data/hetero/dp2.yaml", "tests/data/htae/two-300GBps.xml", 1);
    outcome slow =
        run_plan("tests/data/hetero/dp2.yaml", "tests/data/hetero/a100-straggler.xml", 1);
    ck_assert_int_eq(plain.simulated_replicas, 1);
    ck_assert_int_eq(slow.simulated_replicas, 2);
    ck_near(plain.makespan, c1 + plain.dp_coll_s + o1, 1e-9);
    ck_near(slow.makespan - plain.makespan, (c12 - c1) + (o12 - o1), 1e-9);

    /* an explicit slowdown of 1 is the default: same time, still folded */
    outcome one =
        run_plan("tests/data/hetero/dp2.yaml", "tests/data/hetero/a100-slowdown-1.xml", 1);
    ck_assert_int_eq(one.simulated_replicas, 1);
    ck_assert(one.makespan == plain.makespan);
    hand_free(&h);
}
END_TEST

/* Folding: on where replicas provably behave alike (and then exactly what simulating every
 * replica gives), off where a replica's TP route is slower or longer. */
START_TEST(folding_only_where_replicas_are_alike)
{
    const char *tp = "tests/data/hetero/tp2-dp2.yaml", *pp = "tests/data/hetero/pp2-dp2.yaml";
    outcome folded = run_plan(tp, "tests/data/hetero/four.xml", 1);
    outcome unfolded = run_plan(tp, "tests/data/hetero/four.xml", 0);
    ck_assert_int_eq(folded.simulated_replicas, 1);
    ck_assert_int_eq(unfolded.simulated_replicas, 2);
    ck_assert_int_eq(folded.simulated_tp, 1); /* the TP peers fold too */
    ck_assert_int_eq(unfolded.simulated_tp, 2);
    ck_near(folded.makespan, unfolded.makespan, 1e-12 * unfolded.makespan);
    /* TP 2 on two A100, rank 1 (tensor index 1) with slowdown 1.2: the peers are not alike,
     * both compute (and the result is --no-fold's) */
    outcome sf = run_plan("tests/data/hetero/tp2.yaml", "tests/data/hetero/a100-straggler.xml", 1);
    outcome su = run_plan("tests/data/hetero/tp2.yaml", "tests/data/hetero/a100-straggler.xml", 0);
    ck_assert_int_eq(sf.simulated_tp, 2);
    ck_assert(sf.makespan == su.makespan);
    outcome pf2 = run_plan("tests/data/hetero/tp2.yaml", "tests/data/htae/two-300GBps.xml", 1);
    ck_assert_int_eq(pf2.simulated_tp, 1);
    ck_assert(pf2.makespan < sf.makespan);

    /* replica 1's TP pair (ranks 2, 3) on a 100 GB/s link, replica 0's on 300 GB/s */
    ck_assert_int_eq(run_plan(tp, "tests/data/hetero/four-slow-pair.xml", 1).simulated_replicas, 2);
    /* ... or on a link of 5 us instead of 1 us */
    ck_assert_int_eq(run_plan(tp, "tests/data/hetero/four-slow-latency.xml", 1).simulated_replicas,
                     2);
    /* PP 2 x DP 2, data fastest: the pipeline routes 0-2 and 1-3 are alike; the slow 2-3 link
     * joins the stage-1 DP pair, which runs over all members' links folded or not */
    outcome pf = run_plan(pp, "tests/data/hetero/four-slow-pair.xml", 1);
    outcome pu = run_plan(pp, "tests/data/hetero/four-slow-pair.xml", 0);
    ck_assert_int_eq(pf.simulated_replicas, 1);
    ck_near(pf.makespan, pu.makespan, 1e-12 * pu.makespan);
}
END_TEST

START_TEST(route_bandwidth_and_latency_between_ranks)
{
    char cp[1024];
    snprintf(cp, sizeof cp, "%s/tests/data/hetero/four-slow-pair.xml", ps_data_dir());
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    cluster_engine_start();
    ck_assert_msg(cluster_load(cp, ps_data_dir(), &c, &err) == 0, "%s", err.message);
    double bw, lat;
    cluster_route(&c, 2, 3, &bw, &lat);
    ck_near(bw, 100e9, 1e-3);
    ck_near(lat, 1e-6, 1e-15);
    cluster_route(&c, 3, 2, &bw, &lat); /* the way back, same link */
    ck_near(bw, 100e9, 1e-3);
    cluster_route(&c, 0, 1, &bw, &lat);
    ck_near(bw, 300e9, 1e-3);
    cluster_route(&c, 1, 1, &bw, &lat);
    ck_assert(isinf(bw) && lat == 0);
    for (int r = 0; r < c.n_gpus; r++)
        ck_assert(c.slowdown[r] == 1.0);
    cluster_free(&c);
}
END_TEST

START_TEST(slowdown_is_read_per_gpu)
{
    char cp[1024];
    snprintf(cp, sizeof cp, "%s/tests/data/hetero/a100-straggler.xml", ps_data_dir());
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    cluster_engine_start();
    ck_assert_msg(cluster_load(cp, ps_data_dir(), &c, &err) == 0, "%s", err.message);
    ck_assert(c.slowdown[0] == 1.0 && c.slowdown[1] == 1.2);
    cluster_free(&c);
}
END_TEST

/* A slowdown that is not a finite number > 0 is an input error naming the file, the host's
 * line and the host. One case per process (cluster_load starts the engine). */
static const char *const bad_slowdowns[] = {"0", "-1", "abc", "inf", "nan", "1.2x"};

START_TEST(bad_slowdown_is_an_input_error)
{
    char cp[1024];
    snprintf(cp, sizeof cp, "%s/tests/data/hetero/bad-slowdown-%s.xml", ps_data_dir(),
             bad_slowdowns[_i]);
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    cluster_engine_start();
    ck_assert_int_eq(cluster_load(cp, ps_data_dir(), &c, &err), PS_EINPUT);
    ck_assert_str_eq(err.file, cp);
    ck_assert_int_eq(err.line, 7); /* <host id="g1" ...> */
    ck_assert_msg(strstr(err.message, "'g1'") && strstr(err.message, "slowdown"), "%s",
                  err.message);
}
END_TEST

/* The textbook 1F1B bubble, on an execution graph built here: p = 4 stages, m = 4
 * micro-batches, one compute task per forward and backward, no communication (a stage's
 * forward waits for the previous stage's, a backward for the next stage's).
 *
 * Equal stages, t_f = 1 ms, t_b = 2 ms: every stage idles (p-1)(t_f+t_b) = 3 x 3 = 9 ms of the
 * flush F = (m+p-1)(t_f+t_b) = 7 x 3 = 21 ms.
 *
 * Unequal stages: stage 0 carries the embedding (t_f 1.5, t_b 2.5 ms), stages 1-2 are plain
 * (1, 2 ms), stage 3 the LM head and loss (2, 4 ms): the slowest, busiest with m x 6 = 24 ms.
 * Its first forward starts at 1.5 + 1 + 1 = 3.5 ms. It then never waits: stage 2 sends forward
 * k one backward and one forward (3 ms) after stage 3's backward k-2 ended, while stage 3 spends
 * 6 ms on forward and backward k-1 (stages 0 and 1 have more slack still). So its last backward
 * ends at 3.5 + 24 = 27.5 ms, and the flush walks back through stages 2, 1, 0 (each free by
 * then): F = 27.5 + 2 + 2 + 2.5 = 34 ms. Its bubble is F - 24 = 10 ms = the sum over the other
 * stages of one forward and one backward: (1.5 + 2.5) + (1 + 2) + (1 + 2), of which 3.5 ms of
 * warm-up and 6.5 ms of cool-down. An optimizer step per stage after the flush (every stage
 * waits for stage 0's last backward, as for a global gradient norm), 1 ms on stage 0 and 0.5 ms
 * elsewhere: the iteration ends at 35 ms and stage 3 idles 0.5 ms at the end, not bubble.
 * Stage 3: compute 24.5 + bubble 10 + idle 0.5 = 35 ms. */
static void textbook(const double *tf, const double *tb, const double *opt, int p, int m,
                     int busiest, double bubble, double idle, double iteration)
{
    char cp[1024];
    snprintf(cp, sizeof cp, "%s/tests/data/hetero/four.xml", ps_data_dir());
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    cluster_engine_start();
    ck_assert_msg(cluster_load(cp, ps_data_dir(), &c, &err) == 0, "%s", err.message);
    ck_assert_int_eq(c.n_gpus, p);
    exec_graph *g = graph_create(p);
    int label = graph_label(g, "unit");
    enum { MAX_P = 8, MAX_M = 16 }; /* fixed arrays: the build refuses variable-length ones */
    ck_assert(p <= MAX_P && m <= MAX_M);
    uint32_t fwd[MAX_P][MAX_M], bwd[MAX_P][MAX_M], last_b0 = 0;
    pipeline_unit units[2 * MAX_M];
    for (int s = 0; s < p; s++) {
        pipeline_1f1b_order(p, s, m, units);
        for (int u = 0; u < 2 * m; u++) {
            int k = units[u].micro;
            if (units[u].backward)
                bwd[s][k] = graph_add_compute(g, s, CAT_BACKWARD, tb[s] * 1e-3, label, k);
            else
                fwd[s][k] = graph_add_compute(g, s, CAT_FORWARD, tf[s] * 1e-3, label, k);
        }
    }
    for (int s = 0; s + 1 < p; s++)
        for (int k = 0; k < m; k++) {
            graph_add_edge(g, fwd[s][k], fwd[s + 1][k]);
            graph_add_edge(g, bwd[s + 1][k], bwd[s][k]);
        }
    last_b0 = bwd[0][m - 1];
    for (int s = 0; s < p && opt; s++) {
        uint32_t o = graph_add_compute(g, s, CAT_OPTIMIZER, opt[s] * 1e-3, label, -1);
        graph_add_edge(g, last_b0, o);
    }
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    htae_options o;
    htae_default_options(&o);
    htae_result r;
    ck_assert_msg(htae_run(g, &c, &o, &r, &err) == 0, "%s", err.message);

    compiled_plan plan; /* what report_summarize reads */
    memset(&plan, 0, sizeof plan);
    plan.graph = g;
    plan.gpus = p;
    plan.pp = p;
    plan.tp = plan.dp = 1;
    plan.peak_flops_per_gpu = 1;
    plan.memory = calloc((size_t)p, sizeof *plan.memory);
    plan.memory_capacity_of_rank = calloc((size_t)p, sizeof *plan.memory_capacity_of_rank);
    report_summary sum;
    run_summarize(&plan, &r, &sum);
    ck_assert_int_eq(sum.busiest_rank, busiest);
    ck_near(r.makespan, iteration * 1e-3, 1e-12);
    ck_near(sum.fig.bubble_s, bubble * 1e-3, 1e-12);
    ck_near(sum.fig.idle_s, idle * 1e-3, 1e-12);
    ck_assert(sum.fig.exposed_comm_s == 0);
    ck_near(sum.fig.compute_s + sum.fig.bubble_s + sum.fig.idle_s, r.makespan, 1e-12);
    free(plan.memory);
    free(plan.memory_capacity_of_rank);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(bubble_is_textbook_for_equal_stages)
{
    double tf[] = {1, 1, 1, 1}, tb[] = {2, 2, 2, 2};
    /* all stages compute 12 ms: the busiest is the first, rank 0; no optimizer */
    textbook(tf, tb, NULL, 4, 4, 0, 9.0, 0.0, 21.0);
}
END_TEST

START_TEST(bubble_includes_the_cool_down_with_unequal_stages)
{
    double tf[] = {1.5, 1, 1, 2}, tb[] = {2.5, 2, 2, 4}, opt[] = {1, 0.5, 0.5, 0.5};
    textbook(tf, tb, opt, 4, 4, 3, 10.0, 0.5, 35.0);
}
END_TEST

/* Top items name a stage's pass by its layers: GPT with 4 layers on PP 2 (stage 0: embedding
 * and layers 0-1, stage 1: layers 2-3 and the LM head). */
START_TEST(segment_labels_name_stage_and_layers)
{
    sim_fixture f;
    fixture_files(&f, "tests/data/compile/pp2-1f1b.yaml", "tests/data/htae/two-300GBps.xml");
    const compiled_plan *p = &f.p;
    const char *want[] = {"fwd stage 0, embedding + layers 0-1",
                          "bwd stage 0, embedding + layers 0-1",
                          "fwd stage 1, layers 2-3 + LM head", "bwd stage 1, layers 2-3 + LM head"};
    for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
        int found = 0;
        for (uint32_t t = 0; t < p->graph->n_tasks; t++)
            found += p->graph->tasks[t].kind == TASK_COMPUTE &&
                     !strcmp(p->graph->labels[p->graph->tasks[t].label], want[w]);
        ck_assert_msg(found == 8, "%s: %d tasks", want[w], found); /* one per micro-batch */
    }
    fixture_free(&f);
}
END_TEST

/* Memory on a cluster mixing HBM sizes: each GPU against its own capacity. Both replicas hold
 * the same estimate m (same stage, same plan); the 40 GiB GPU has 40 GiB - m of headroom, the
 * 80 GiB one 80 GiB - m, so the report names rank 1 and 40 GiB. */
START_TEST(memory_is_checked_against_each_gpus_capacity)
{
    sim_fixture f;
    fixture_files(&f, "tests/data/hetero/dp2.yaml", "tests/data/hetero/a100-80-40.xml");
    const compiled_plan *p = &f.p;
    const double GiB = 1073741824.0;
    ck_assert(p->memory_capacity_of_rank[0] == 80 * GiB &&
              p->memory_capacity_of_rank[1] == 40 * GiB);
    ck_assert(p->memory[0].total == p->memory[1].total);
    htae_default_options(&f.o);
    fixture_run(&f);
    ck_assert_int_eq(f.sum.peak_memory_rank, 1);
    ck_assert(f.sum.fig.memory_capacity_bytes == 40 * GiB);
    ck_assert(f.sum.fig.peak_memory_bytes == p->memory[1].total);
    fixture_free(&f);
}
END_TEST

static Suite *hetero_suite(void)
{
    Suite *s = suite_create("hetero");
    const TTest *const tests[] = {mixed_h100_a100_runs_at_the_a100s_pace,
                                  straggler_slowdown_lengthens_the_iteration,
                                  folding_only_where_replicas_are_alike,
                                  route_bandwidth_and_latency_between_ranks,
                                  slowdown_is_read_per_gpu,
                                  bubble_is_textbook_for_equal_stages,
                                  bubble_includes_the_cool_down_with_unequal_stages,
                                  segment_labels_name_stage_and_layers,
                                  memory_is_checked_against_each_gpus_capacity,
                                  NULL};
    TCase *tc = suite_add_tests(s, "core", 120, tests);
    tcase_add_loop_test(tc, bad_slowdown_is_an_input_error, 0,
                        (int)(sizeof bad_slowdowns / sizeof *bad_slowdowns));
    return s;
}

int main(void)
{
    return suite_run(hetero_suite());
}
