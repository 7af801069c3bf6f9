/* Zero-bubble pipeline schedules (Qi et al., ICLR 2024): the ZB-H1 and ZB-H2 orders by hand, the
 * memory they hold, their bubbles on an execution graph built here against the paper's formulas,
 * the weight-gradient share of an op's backward, and compiled plans whose backward is split. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../sim/run/run.h"
#include "../strategies/compile/compile.h"
#include "../strategies/pipeline_split.h"
#include "../strategies/schedule.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* |got - want| <= tol: an absolute tolerance (sim_util.h's ck_close is relative). */
#define ck_near(got, want, tol)                                                                    \
    ck_assert_msg(fabs((got) - (want)) <= (tol), "got %.12g, want %.12g", (double)(got),           \
                  (double)(want))

enum { MAX_P = 8, MAX_M = 24 }; /* fixed arrays: the build refuses variable-length ones */

/* A stage's order as text: F0 B0 W0 for a forward, an input-gradient B and a weight-gradient W;
 * a whole backward as X. */
static void order_text(const pipeline_unit *u, int n, char *out, size_t size)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k + 8 < size; i++) {
        char c = !u[i].backward             ? 'F'
                 : u[i].part == PART_INPUT  ? 'B'
                 : u[i].part == PART_WEIGHT ? 'W'
                                            : 'X';
        k += (size_t)snprintf(out + k, size - k, "%c%d", c, u[i].micro);
    }
}

/* ZB-H1 on 4 stages, 6 micro-batches, worked by hand from the rule: stage s runs 1F1B's
 * stages - s - 1 warm-up forwards, then F B rounds of which the first s leave their W for the
 * tail (the input gradients go back up the pipeline at once), then the cool-down's B each with
 * a W while more than s are pending. Stage 0 defers nothing: it is 1F1B with each backward
 * split in place; stage 3 defers three. ZB-H2: twice the warm-up and twice the deferral. */
START_TEST(zb_orders_by_hand)
{
    pipeline_unit u[3 * MAX_M];
    char text[512];
    static const char *const h1[4] = {
        "F0F1F2F3B0W0F4B1W1F5B2W2B3W3B4W4B5W5", "F0F1F2B0F3B1W0F4B2W1F5B3W2B4W3B5W4W5",
        "F0F1B0F2B1F3B2W0F4B3W1F5B4W2B5W3W4W5", "F0B0F1B1F2B2F3B3W0F4B4W1F5B5W2W3W4W5"};
    static const char *const h2[4] = {
        "F0F1F2F3F4F5B0W0B1W1B2W2B3W3B4W4B5W5", "F0F1F2F3F4B0F5B1B2W0B3W1B4W2B5W3W4W5",
        "F0F1F2B0F3B1F4B2F5B3B4W0B5W1W2W3W4W5", "F0B0F1B1F2B2F3B3F4B4F5B5W0W1W2W3W4W5"};
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(pipeline_order(SCHED_ZBH1, 4, s, 6, 1, 0, u), 18);
        order_text(u, 18, text, sizeof text);
        ck_assert_str_eq(text, h1[s]);
        ck_assert_int_eq(pipeline_order(SCHED_ZBH2, 4, s, 6, 1, 0, u), 18);
        order_text(u, 18, text, sizeof text);
        ck_assert_str_eq(text, h2[s]);
    }
    ck_assert_int_eq(pipeline_units(SCHED_ZBH1, 6, 1), 18);
    ck_assert_int_eq(pipeline_units(SCHED_1F1B, 6, 1), 12);
}
END_TEST

/* Every micro-batch's F, B and W once each, in that order; and the micro-batches a stage holds
 * (forward done, W not yet): ZB-H1 never more than 1F1B's peak, p (the paper's "same memory"),
 * ZB-H2 at most 2p - 1; for every p <= 8 and m <= 24. */
START_TEST(zb_orders_complete_and_bounded)
{
    pipeline_unit u[3 * MAX_M];
    for (int h2 = 0; h2 < 2; h2++)
        for (int p = 2; p <= MAX_P; p++)
            for (int m = 1; m <= MAX_M; m++)
                for (int s = 0; s < p; s++) {
                    int n = pipeline_order(h2 ? SCHED_ZBH2 : SCHED_ZBH1, p, s, m, 1, 0, u);
                    ck_assert_int_eq(n, 3 * m);
                    int state[MAX_M] = {0}, held = 0, most = 0;
                    for (int i = 0; i < n; i++) {
                        int k = u[i].micro, step = !u[i].backward ? 0 : u[i].part;
                        ck_assert(k >= 0 && k < m && u[i].chunk == 0 && !u[i].merged);
                        ck_assert_int_eq(state[k], step); /* F (0) then B (1) then W (2) */
                        state[k] = step + 1;
                        held += step == 0 ? 1 : step == PART_WEIGHT ? -1 : 0;
                        most = held > most ? held : most;
                    }
                    for (int k = 0; k < m; k++)
                        ck_assert_int_eq(state[k], 3);
                    int cap = h2 ? 2 * p - 1 : p;
                    ck_assert_msg(most <= cap, "h2 %d p %d m %d stage %d holds %d", h2, p, m, s,
                                  most);
                }
}
END_TEST

/* The schedule on an execution graph built here: p = 4 stages of GPUs on four.xml, m = 8
 * micro-batches, one compute task per F, B and W (1F1B: one per F and per whole backward of
 * t_B + t_W), no communication; F waits for the previous stage's F, B for the next stage's B
 * (the last stage's B for its own F, by the stream). Returns the makespan and each stage's span
 * (first start to last end) in ms, and the report's bubble on the busiest GPU. */
static double timeline_in_process(pipeline_schedule sched, double tf, double tb, double tw,
                                  double *span, double *bubble)
{
    const int p = 4, m = 8;
    ps_error err;
    cluster c;
    ps_error_clear(&err);
    sim_load("tests/data/hetero/four.xml", &c);
    exec_graph *g = graph_create(p);
    int label = graph_label(g, "unit");
    uint32_t fwd[MAX_P][MAX_M], bwd[MAX_P][MAX_M], first[MAX_P], last[MAX_P];
    pipeline_unit units[3 * MAX_M];
    for (int s = 0; s < p; s++) {
        int n = pipeline_order(sched, p, s, m, 1, 0, units);
        for (int u = 0; u < n; u++) {
            int k = units[u].micro;
            uint32_t id;
            if (!units[u].backward)
                id = fwd[s][k] = graph_add_compute(g, s, CAT_FORWARD, tf * 1e-3, label, k);
            else if (units[u].part == PART_WEIGHT)
                id = graph_add_compute(g, s, CAT_BACKWARD, tw * 1e-3, label, k);
            else
                id = bwd[s][k] = graph_add_compute(
                    g, s, CAT_BACKWARD, (units[u].part == PART_INPUT ? tb : tb + tw) * 1e-3, label,
                    k);
            if (u == 0)
                first[s] = id;
            last[s] = id;
        }
    }
    for (int s = 0; s + 1 < p; s++)
        for (int k = 0; k < m; k++) {
            graph_add_edge(g, fwd[s][k], fwd[s + 1][k]);
            graph_add_edge(g, bwd[s + 1][k], bwd[s][k]);
        }
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    htae_options o;
    htae_default_options(&o);
    htae_result r;
    ck_assert_msg(htae_run(g, &c, &o, &r, &err) == 0, "%s", err.message);
    for (int s = 0; s < p; s++)
        span[s] = (r.end[last[s]] - r.start[first[s]]) * 1e3;
    compiled_plan plan; /* what report_summarize reads */
    memset(&plan, 0, sizeof plan);
    plan.graph = g;
    plan.gpus = plan.pp = p;
    plan.tp = plan.dp = 1;
    plan.peak_flops_per_gpu = 1;
    plan.memory = calloc((size_t)p, sizeof *plan.memory);
    plan.memory_capacity_of_rank = calloc((size_t)p, sizeof *plan.memory_capacity_of_rank);
    report_summary sum;
    run_summarize(&plan, &r, &sum);
    *bubble = sum.fig.bubble_s * 1e3;
    double makespan = r.makespan * 1e3;
    free(plan.memory);
    free(plan.memory_capacity_of_rank);
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
    return makespan;
}

typedef struct timeline_args {
    pipeline_schedule sched;
    double tf, tb, tw;
} timeline_args;

typedef struct timeline_out {
    double makespan, bubble, span[MAX_P];
} timeline_out;

static void timeline_child(const void *arg, void *out)
{
    const timeline_args *a = arg;
    timeline_out *o = out;
    o->makespan = timeline_in_process(a->sched, a->tf, a->tb, a->tw, o->span, &o->bubble);
}

/* timeline_in_process in a child (SimGrid runs once per process). */
static double timeline(pipeline_schedule sched, double tf, double tb, double tw, double *span,
                       double *bubble)
{
    timeline_args a = {sched, tf, tb, tw};
    timeline_out o;
    fixture_forked(timeline_child, &a, &o, sizeof o);
    memcpy(span, o.span, sizeof o.span);
    *bubble = o.bubble;
    return o.makespan;
}

/* t_F = t_B = t_W = 1 ms, p = 4, m = 8. 1F1B: (m + p - 1)(t_F + t_B + t_W) = 11 x 3 = 33 ms,
 * bubble (p - 1)(t_F + t_B + t_W) = 9 ms. ZB-H1: every stage computes 3m = 24 ms and the
 * bubble is (p - 1)(t_F + t_B - t_W) = 3 ms, a third of 1F1B's at the same memory (the paper's
 * claim): 27 ms. ZB-H2: no stage has a gap between its first F and its last W (span 24 ms
 * each); the iteration still ends (p - 1) t_F = 3 ms after stage 0 starts its last... i.e. stage
 * 3 starts 3 ms late (the forwards' first trip down), 27 ms. */
START_TEST(zb_h1_bubble_is_a_third_of_1f1b)
{
    double span[MAX_P], bubble;
    ck_near(timeline(SCHED_1F1B, 1, 1, 1, span, &bubble), 33.0, 1e-9);
    ck_near(bubble, 9.0, 1e-9);
    ck_near(timeline(SCHED_ZBH1, 1, 1, 1, span, &bubble), 27.0, 1e-9);
    ck_near(bubble, 3.0, 1e-9);
    ck_near(timeline(SCHED_ZBH2, 1, 1, 1, span, &bubble), 27.0, 1e-9);
    for (int s = 0; s < 4; s++)
        ck_near(span[s], 24.0, 1e-9);
}
END_TEST

/* Unequal passes: ZB-H1's bubble is (p - 1)(t_F + t_B - t_W) whatever the times: t_W = 0.5:
 * 3 x 1.5 = 4.5 ms over 8 x 2.5 = 20 ms of work, 24.5 ms (1F1B: 11 x 2.5 = 27.5 ms); t_B = 2:
 * 3 x 2 = 6 ms over 32 ms, 38 ms (1F1B 44 ms). */
START_TEST(zb_h1_bubble_formula)
{
    double span[MAX_P], bubble;
    ck_near(timeline(SCHED_1F1B, 1, 1, 0.5, span, &bubble), 27.5, 1e-9);
    ck_near(timeline(SCHED_ZBH1, 1, 1, 0.5, span, &bubble), 24.5, 1e-9);
    ck_near(bubble, 4.5, 1e-9);
    ck_near(timeline(SCHED_ZBH1, 1, 2, 1, span, &bubble), 38.0, 1e-9);
    ck_near(bubble, 6.0, 1e-9);
}
END_TEST

/* ZB-V's orders for every stages <= 24 and micro <= 96: each micro-batch's six passes (both
 * chunks' F, B and W) once, each after its own predecessor on the stage (F before B before W),
 * micro-batches in order within each kind, and never more than 2 stages chunk forwards held
 * (forward done, W not: 1F1B's activations). The generator asserts it never stalls. */
START_TEST(zbv_orders_complete_and_bounded)
{
    enum { P = 24, M = 96 };
    pipeline_unit *u = malloc((size_t)6 * M * sizeof *u);
    for (int p = 2; p <= P; p += (p < 8 ? 1 : 4))
        for (int m = 1; m <= M; m += (m < 16 ? 1 : 16))
            for (int s = 0; s < p; s++) {
                ck_assert_int_eq(pipeline_order(SCHED_ZBV, p, s, m, 2, 0, u), 6 * m);
                int state[2][M], last[6], held = 0;
                memset(state, 0, sizeof state);
                for (int k = 0; k < 6; k++)
                    last[k] = -1;
                for (int i = 0; i < 6 * m; i++) {
                    int c = u[i].chunk, j = u[i].micro, step = !u[i].backward ? 0 : u[i].part;
                    ck_assert(c == 0 || c == 1);
                    ck_assert_int_eq(state[c][j], step);
                    state[c][j] = step + 1;
                    ck_assert_int_eq(last[c * 3 + step] + 1, j); /* in order within a kind */
                    last[c * 3 + step] = j;
                    held += step == 0 ? 1 : step == PART_WEIGHT ? -1 : 0;
                    ck_assert_int_le(held, 2 * p);
                }
            }
    free(u);
}
END_TEST

/* ZB-V's list schedule over random pass times (a fixed linear congruential sequence, each pass
 * 0.2-3.2 units, per stage and kind): it finishes for 300 plans of 2-12 stages and 1-40
 * micro-batches, and its orders keep the bounds above. */
START_TEST(zbv_random_times_never_stall)
{
    uint64_t x = 12345;
    pipeline_unit *u = malloc((size_t)6 * 40 * sizeof *u);
    double cost[12 * 6];
    for (int trial = 0; trial < 300; trial++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int p = 2 + (int)((x >> 33) % 11), m = 1 + (int)((x >> 13) % 40);
        for (int i = 0; i < p * 6; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            cost[i] = 0.2 + 3.0 * (double)(x >> 11) / 9007199254740992.0;
        }
        for (int s = 0; s < p; s++) {
            pipeline_zbv_order(p, s, m, cost, u);
            int held = 0, f[2] = {0, 0};
            for (int i = 0; i < 6 * m; i++) {
                if (!u[i].backward)
                    f[u[i].chunk]++;
                held += !u[i].backward ? 1 : u[i].part == PART_WEIGHT ? -1 : 0;
                ck_assert_int_le(held, 2 * p);
            }
            ck_assert(f[0] == m && f[1] == m);
        }
    }
    free(u);
}
END_TEST

/* ZB-V on an execution graph built here: p stages of four.xml, each holding chunks s and
 * 2p - 1 - s, one compute task per pass of 1 ms; the forward goes down chunk 0 and back up
 * chunk 1 (stage p - 1 hands its chunk 0's output to its chunk 1), the backward the other way.
 * p = 4, m = 8: 6 m = 48 ms of passes a stage and a bubble of p - 1 = 3 passes: 51 ms (1F1B
 * with the same two chunks a stage as one unit each way: 6 (m + p - 1) = 66 ms). */
static void zbv_child(const void *arg, void *out)
{
    (void)arg;
    enum { P = 4, M = 8 };
    ps_error err;
    cluster c;
    ps_error_clear(&err);
    sim_load("tests/data/hetero/four.xml", &c);
    exec_graph *g = graph_create(P);
    int label = graph_label(g, "pass");
    uint32_t f[2][P][M], b[2][P][M];
    pipeline_unit units[6 * M];
    for (int s = 0; s < P; s++) {
        ck_assert_int_eq(pipeline_order(SCHED_ZBV, P, s, M, 2, 0, units), 6 * M);
        for (int i = 0; i < 6 * M; i++) {
            int k = units[i].chunk, j = units[i].micro;
            task_category cat = units[i].backward ? CAT_BACKWARD : CAT_FORWARD;
            uint32_t id = graph_add_compute(g, s, cat, 1e-3, label, j);
            if (!units[i].backward)
                f[k][s][j] = id;
            else if (units[i].part == PART_INPUT)
                b[k][s][j] = id;
        }
    }
    for (int j = 0; j < M; j++)
        for (int s = 0; s < P; s++) {
            if (s > 0)
                graph_add_edge(g, f[0][s - 1][j], f[0][s][j]);
            graph_add_edge(g, s == P - 1 ? f[0][s][j] : f[1][s + 1][j], f[1][s][j]);
            if (s > 0)
                graph_add_edge(g, b[1][s - 1][j], b[1][s][j]);
            graph_add_edge(g, s == P - 1 ? b[1][s][j] : b[0][s + 1][j], b[0][s][j]);
        }
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    htae_options o;
    htae_default_options(&o);
    htae_result r;
    ck_assert_msg(htae_run(g, &c, &o, &r, &err) == 0, "%s", err.message);
    *(double *)out = r.makespan * 1e3;
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

START_TEST(zbv_bubble_on_a_graph)
{
    double makespan;
    fixture_forked(zbv_child, NULL, &makespan, sizeof makespan);
    ck_assert_msg(fabs(makespan - 51.0) < 1e-9, "%.12g ms", makespan);
}
END_TEST

/* The weight gradient's share of a backward: a square GEMM's dW = X^T dY is the same GEMM as
 * its dX = dY W^T (m = n = k), so half; an embedding's backward is all weight gradient (a
 * scatter-add into its table); attention, a norm and a GEMM without parameters (the unfused
 * attention's QK^T) have none. */
START_TEST(weight_grad_share)
{
    device_table t;
    model_devices(&t);
    const device_spec *dev = device_table_find(&t, "A100-SXM4-80GB");
    ck_assert(dev);
    workload_op g = gemm_op(4096, 4096, 4096);
    g.params = 4096.0 * 4096.0;
    ck_near(cost_op_weight_grad_share(&g, PREC_BF16, dev), 0.5, 1e-12);
    ck_assert_int_eq(cost_op_weight_grad_kernels(&g), g.kernels);
    workload_op q = g;
    q.params = 0;
    ck_assert(cost_op_weight_grad_share(&q, PREC_BF16, dev) == 0);
    ck_assert_int_eq(cost_op_weight_grad_kernels(&q), 0);
    workload_op e;
    memset(&e, 0, sizeof e);
    e.kind = OP_EMBEDDING;
    e.kernels = 1;
    e.params = 1e6;
    ck_assert(cost_op_weight_grad_share(&e, PREC_BF16, dev) == 1.0);
    ck_assert_int_eq(cost_op_weight_grad_kernels(&e), 2);
    workload_op a = e;
    a.kind = OP_ATTENTION;
    ck_assert(cost_op_weight_grad_share(&a, PREC_BF16, dev) == 0);
    device_table_free(&t);
}
END_TEST

static const char *const PLAN =
    "workload: {family: gpt, layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000}\n"
    "batch: {global: 16, micro: 2}\nprecision: bf16\noptimizer: adam\n"
    "strategy:\n  pipeline: {degree: 4, schedule: %s}\n";

typedef struct plan_out {
    double makespan, busy[4], act[4], weights[4];
} plan_out;

static void plan_child(const void *arg, void *out)
{
    char text[512];
    snprintf(text, sizeof text, PLAN, (const char *)arg);
    sim_fixture f;
    fixture_text(&f, text, "tests/data/hetero/four.xml");
    fixture_run(&f);
    plan_out *o = out;
    o->makespan = f.r.makespan;
    for (int r = 0; r < 4; r++) {
        o->act[r] = f.p.memory[r].activations;
        o->weights[r] = f.p.memory[r].weights;
    }
    fixture_pass_seconds(&f, o->busy);
    fixture_free(&f);
}

static plan_out plan_run(const char *schedule)
{
    plan_out o;
    fixture_forked(plan_child, schedule, &o, sizeof o);
    return o;
}

/* A compiled GPT plan on 4 stages, 8 micro-batches: splitting the backward moves kernel time
 * between B and W but adds none, so every GPU's kernels take as long under ZB-H1 and ZB-H2 as
 * under 1F1B (to rounding), and both finish sooner. Memory: stage 0 holds 1F1B's p = 4 micro-batches
 * of activations under ZB-H1 (its W right after each B: nothing deferred), 2p - 1 = 7 under
 * ZB-H2; the last stage under ZB-H1 holds one micro-batch's activations and three deferred
 * W's inputs, less than 1F1B's stage 0. */
START_TEST(compiled_split_keeps_work_and_ends_sooner)
{
    plan_out b = plan_run("1f1b"), h1 = plan_run("zb-h1"), h2 = plan_run("zb-h2");
    for (int r = 0; r < 4; r++) {
        ck_assert_msg(fabs(h1.busy[r] / b.busy[r] - 1) < 1e-9, "rank %d %.12g %.12g", r, h1.busy[r],
                      b.busy[r]);
        ck_assert(fabs(h2.busy[r] / b.busy[r] - 1) < 1e-9);
    }
    ck_assert(h1.makespan < b.makespan && h2.makespan < h1.makespan);
    /* ZB-V: stage s holds layers s and 7 - s (one a chunk): stage 0 the embedding, layer 0,
     * layer 7 and the head (with this 32,000-entry vocab, more than any 1F1B stage carries:
     * the V's price; zbv_bubble_on_a_graph checks the schedule on equal stages); the whole
     * pipeline's kernel time is 1F1B's */
    plan_out v = plan_run("zb-v");
    double all_b = 0, all_v = 0;
    for (int r = 0; r < 4; r++) {
        all_b += b.busy[r];
        all_v += v.busy[r];
    }
    ck_assert_msg(fabs(all_v / all_b - 1) < 1e-9, "%.12g %.12g", all_v, all_b);
    ck_assert(v.busy[0] > v.busy[1] && v.busy[0] > b.busy[3]); /* the head on stage 0 */
    /* its weights: 1F1B's stage 0 (the embedding and two layers) and the final LayerNorm
     * (2 x 1024, bf16); the tied head on the embedding's own stage holds no copy */
    ck_assert_double_eq(v.weights[0], b.weights[0] + 2 * 1024 * 2);
    ck_near(h1.act[0], b.act[0], 1e-6);
    ck_near(h2.act[0], 7.0 / 4.0 * b.act[0], 1e-3);
    ck_assert(h1.act[3] < b.act[0]);
}
END_TEST

/* Uneven stages under ZB-V follow the V: 10 layers over 2 stages with `first_stage_layers: 4`
 * give stage 0's chunks (0 and 3) 2 layers each and stage 1's (1 and 2) 3 each: [2, 3, 3, 2];
 * `last_stage_layers: 2` gives [4, 1, 1, 4]. */
START_TEST(zbv_uneven_stages_follow_the_v)
{
    static const struct {
        const char *key;
        int want[4];
    } cases[] = {{"first_stage_layers: 4", {2, 3, 3, 2}}, {"last_stage_layers: 2", {4, 1, 1, 4}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "workload: {family: gpt, layers: 10, hidden: 256, heads: 4, seq: 128, "
                 "vocab: 1000}\nbatch: {global: 4, micro: 1}\nstrategy:\n"
                 "  pipeline: {degree: 2, schedule: zb-v, %s}\n",
                 cases[i].key);
        strategy s;
        ps_error err;
        ps_error_clear(&err);
        ck_assert_msg(sim_strategy_text(text, &s, &err) == 0, "%s", err.message);
        int n[4];
        ck_assert_int_eq(strategy_chunk_layers(&s, n, &err), 0);
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq(n[k], cases[i].want[k]);
        strategy_free(&s);
    }
}
END_TEST

/* Zero-bubble schedules need stages, and are refused with FSDP (the deferred W would need
 * each unit's parameters gathered again): file, line and field named. */
START_TEST(zb_refusals)
{
    static const struct {
        const char *strategy, *field, *message;
    } cases[] = {
        {"  pipeline: {degree: 1, schedule: zb-h1}\n", "strategy.pipeline.schedule",
         "pipeline degree >= 2"},
        {"  pipeline: {degree: 2, schedule: zb-h2}\n  data: {degree: 2, zero: 3}\n",
         "strategy.pipeline.schedule", "zero 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "workload: {family: gpt, layers: 4, hidden: 256, heads: 4, seq: 128, "
                 "vocab: 1000}\nbatch: {global: 8, micro: 1}\nstrategy:\n%s",
                 cases[i].strategy);
        sim_expect_strategy_error(text, cases[i].field, 4, cases[i].message);
    }
}
END_TEST

static Suite *zb_suite(void)
{
    Suite *s = suite_create("zb");
    const TTest *const tests[] = {zb_orders_by_hand,
                                  zb_orders_complete_and_bounded,
                                  zb_h1_bubble_is_a_third_of_1f1b,
                                  zb_h1_bubble_formula,
                                  weight_grad_share,
                                  compiled_split_keeps_work_and_ends_sooner,
                                  zbv_orders_complete_and_bounded,
                                  zbv_bubble_on_a_graph,
                                  zbv_random_times_never_stall,
                                  zbv_uneven_stages_follow_the_v,
                                  zb_refusals,
                                  NULL};
    suite_add_tests(s, "core", 120, tests);
    return s;
}

int main(void)
{
    return suite_run(zb_suite());
}
