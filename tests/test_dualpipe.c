/* DualPipeV (DeepSeek-AI's DualPipe repository, dualpipev.py): its orders worked by hand from the
 * published steps, every order complete and within its memory, its bubble on an execution graph
 * built here against the repository's formula, and compiled plans (work kept, the V's sends, the
 * overlapped steps, the refusals). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/engine/htae.h"
#include "../sim/run/run.h"
#include "../strategies/compile/compile.h"
#include "../strategies/schedule.h"
#include "fixture.h"
#include "sim_util.h"
#include "suite_util.h"

#define ck_near(got, want, tol)                                                                    \
    ck_assert_msg(fabs((got) - (want)) <= (tol), "got %.12g, want %.12g", (double)(got),           \
                  (double)(want))

/* A stage's order as text: F (forward), X (whole backward), B (input-gradient part), W (weight
 * part), then chunk.micro; a merged forward joined to its backward by '&', else a space. */
static void order_text(const pipeline_unit *u, int n, char *out, size_t size)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k + 16 < size; i++) {
        char c = !u[i].backward             ? 'F'
                 : u[i].part == PART_INPUT  ? 'B'
                 : u[i].part == PART_WEIGHT ? 'W'
                                            : 'X';
        k += (size_t)snprintf(out + k, size - k, "%s%c%d.%d",
                              i == 0            ? ""
                              : u[i - 1].merged ? "&"
                                                : " ",
                              c, u[i].chunk, u[i].micro);
    }
}

/* Two stages, four micro-batches, traced by hand through dualpipev.py's eight steps.
 * Stage 0 (rank 0 of 2): step 1, 2 (2 - 0 - 1) = 2 chunk-0 forwards (F0.0 F0.1); step 2, one
 * pair (F0.2 F1.0); step 3, one B1 W F1 round (B1.0 W1.0 F1.1); step 4, 4 - 4 + 0 + 1 = 1 round
 * of two merged steps (F0.3&X1.1 F1.2&X0.0); step 5, one B1 then F1&B0 (X1.2 F1.3&X0.1); step 6,
 * one pair B1 B0 whose B0 (i = 0 = 1 / 2, rank even) defers its W (X1.3 B0.2); step 7, W B0 (W0.2
 * B0.3); step 8, the last W (W0.3). 4 m + 2 p - s - 1 = 19 units.
 * Stage 1 (the last): no warm-up of its own; two pairs (F0.0 F1.0 F0.1 F1.1); step 4 twice, its
 * first pair not overlapped (F0.2 X1.0, then F1.2&X0.0; F0.3&X1.1 F1.3&X0.1); step 6 twice, the
 * second pair deferred (i = 1 = 2 / 2, rank odd: X1.2 X0.2 B1.3 B0.3); the two W. 18 units. */
START_TEST(dualpipev_orders_by_hand)
{
    pipeline_unit u[64];
    char text[1024];
    ck_assert_int_eq(pipeline_order(SCHED_DUALPIPEV, 2, 0, 4, 2, 0, u), 19);
    order_text(u, 19, text, sizeof text);
    ck_assert_str_eq(text, "F0.0 F0.1 F0.2 F1.0 B1.0 W1.0 F1.1 F0.3&X1.1 F1.2&X0.0 X1.2 "
                           "F1.3&X0.1 X1.3 B0.2 W0.2 B0.3 W0.3");
    ck_assert_int_eq(pipeline_order(SCHED_DUALPIPEV, 2, 1, 4, 2, 0, u), 18);
    order_text(u, 18, text, sizeof text);
    ck_assert_str_eq(text, "F0.0 F1.0 F0.1 F1.1 F0.2 X1.0 F1.2&X0.0 F0.3&X1.1 F1.3&X0.1 X1.2 "
                           "X0.2 B1.3 B0.3 W1.3 W0.3");
    ck_assert_int_le(19, pipeline_units(SCHED_DUALPIPEV, 4, 2));
}
END_TEST

/* Every order for stages <= 16 and 2 stages <= micro <= 4 stages + 8: each micro-batch's chunk
 * passes once each (F, then a whole backward or its B then its W), forwards and backwards in
 * micro-batch order within a chunk, a merged forward always followed by a whole backward of the
 * other chunk, 4 m + 2 p - s - 1 units, and never more than 2 p + 1 chunk forwards held (forward
 * done, backward not through its W: the repository's PP + 1 with PP = 2 p chunks); stage 0
 * reaches it (its warm-up fills 2 p, the first merged step adds one before it frees one). */
START_TEST(dualpipev_orders_complete_and_bounded)
{
    enum { P = 16, M = 4 * P + 8 };
    pipeline_unit *u = malloc((size_t)6 * M * sizeof *u);
    for (int p = 1; p <= P; p++)
        for (int m = 2 * p; m <= 4 * p + 8; m++)
            for (int s = 0; s < p; s++) {
                int n = pipeline_order(SCHED_DUALPIPEV, p, s, m, 2, 0, u);
                ck_assert_int_eq(n, 4 * m + 2 * p - s - 1);
                ck_assert_int_le(n, pipeline_units(SCHED_DUALPIPEV, m, 2));
                int state[2][M], next[2][2] = {{0, 0}, {0, 0}}, held = 0, most = 0;
                memset(state, 0, sizeof state);
                for (int i = 0; i < n; i++) {
                    int c = u[i].chunk, j = u[i].micro, bw = u[i].backward;
                    int step = !bw ? 0 : u[i].part == PART_WEIGHT ? 2 : 1;
                    ck_assert_int_eq(state[c][j], step);
                    state[c][j] = u[i].part == PART_WHOLE && bw ? 3 : step + 1;
                    if (step < 2) { /* F and B/X in micro-batch order */
                        ck_assert_int_eq(next[c][step], j);
                        next[c][step]++;
                    }
                    if (u[i].merged) {
                        ck_assert(!bw && i + 1 < n && u[i + 1].backward &&
                                  u[i + 1].part == PART_WHOLE && u[i + 1].chunk != c);
                    }
                    held += !bw ? 1 : u[i].part == PART_INPUT ? 0 : -1;
                    most = held > most ? held : most;
                }
                for (int c = 0; c < 2; c++)
                    for (int j = 0; j < m; j++)
                        ck_assert_int_eq(state[c][j], 3);
                ck_assert_int_eq(held, 0);
                ck_assert_int_le(most, 2 * p + 1);
                if (s == 0 && p > 1)
                    ck_assert_int_eq(most, 2 * p + 1);
            }
    free(u);
}
END_TEST

typedef struct dpv_times {
    double tf, tb, tw, tfb; /* ms: a forward, a B, a W, a merged forward and whole backward */
    int two;                /* 0: DualPipeV, m = 8; 1: DualPipe, m = 16 (8 a copy) */
} dpv_times;

typedef struct dpv_out {
    double makespan, busy[4];
} dpv_out;

/* The schedule on an execution graph built here: p = 4 stages of four.xml, one compute task per
 * unit (a whole backward t_B + t_W, a merged step one task of t_F&B standing for both passes).
 * A micro-batch's chain of chunk positions: DualPipeV's V is one chain of 2p (chunk 0 down the
 * stages, then the last stage's chunk 1 back up); DualPipe's copies two chains of p (copy 0's
 * stage k on stage k, copy 1's on stage p - 1 - k; each stage's chunk 0 is the copy it meets
 * first). A forward waits for the one before it in its chain, a backward for the one after it
 * (the chain's last for its own forward). */
static void dpv_child(const void *arg, void *out)
{
    enum { P = 4, M = 16 };
    const dpv_times *t = arg;
    dpv_out *o = out;
    int m = t->two ? M : M / 2, mc = M / 2, len = t->two ? P : 2 * P; /* mc: a chunk's */
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    sim_load("tests/data/hetero/four.xml", &c);
    exec_graph *g = graph_create(P);
    int label = graph_label(g, "pass");
    uint32_t f[2][2 * P][M / 2], b[2][2 * P][M / 2]; /* [chain][position][micro-batch] */
    pipeline_unit units[6 * M];
    for (int s = 0; s < P; s++) {
        int n = pipeline_order(t->two ? SCHED_DUALPIPE : SCHED_DUALPIPEV, P, s, m, 2, 0, units);
        o->busy[s] = 0;
        for (int i = 0; i < n; i++) {
            pipeline_unit x = units[i];
            double ms = x.merged                ? t->tfb
                        : !x.backward           ? t->tf
                        : x.part == PART_INPUT  ? t->tb
                        : x.part == PART_WEIGHT ? t->tw
                                                : t->tb + t->tw;
            uint32_t id = graph_add_compute(g, s, x.backward ? CAT_BACKWARD : CAT_FORWARD,
                                            ms * 1e-3, label, x.micro);
            o->busy[s] += ms;
            for (int k = 0; k < (x.merged ? 2 : 1); k++) { /* a merged step: both units */
                pipeline_unit y = units[i + k];
                int chain = t->two && (y.chunk == 0) != (s < P / 2);
                int at = t->two ? (chain ? P - 1 - s : s) : (y.chunk ? 2 * P - 1 - s : s);
                if (!y.backward)
                    f[chain][at][y.micro] = id;
                else if (y.part != PART_WEIGHT)
                    b[chain][at][y.micro] = id;
            }
            i += x.merged;
        }
    }
    for (int chain = 0; chain < 1 + t->two; chain++)
        for (int j = 0; j < mc; j++)
            for (int k = 0; k < len; k++) {
                if (k > 0)
                    graph_add_edge(g, f[chain][k - 1][j], f[chain][k][j]);
                graph_add_edge(g, k == len - 1 ? f[chain][k][j] : b[chain][k + 1][j],
                               b[chain][k][j]);
            }
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    htae_options opt;
    htae_default_options(&opt);
    htae_result r;
    ck_assert_msg(htae_run(g, &c, &opt, &r, &err) == 0, "%s", err.message);
    o->makespan = r.makespan * 1e3;
    htae_result_free(&r);
    graph_free(g);
    cluster_free(&c);
}

static dpv_out dpv_graph(double tf, double tb, double tw, double tfb, int two)
{
    dpv_times t = {tf, tb, tw, tfb, two};
    dpv_out o;
    fixture_forked(dpv_child, &t, &o, sizeof o);
    return o;
}

/* The repository's bubble, (PP / 2 - 1)(F&B + B - 3 W) with PP = 2 p chunks, B a whole backward
 * (t_B + t_W here) and F&B a merged step, on the last stage (the one with the fewest merged
 * steps, hence the most idle): p = 4, m = 8. That stage computes 2 m (t_F + t_B + t_W) less
 * what its 2 (m - p) - 1 = 7 merged steps save, t_F + t_B + t_W - t_F&B each, and the iteration
 * is that plus the bubble:
 * t = 1 ms each, t_F&B = 3 (no overlap): 48 + 3 (3 + 2 - 3) = 54 ms (ZB-V on the same chunks:
 * 51, zbv_bubble_on_a_graph: without overlap DualPipeV's V is ZB-V's with a longer warm-up);
 * t_F&B = 2.5: 48 - 3.5 + 3 x 1.5 = 49 ms; t_F&B = 2: 48 - 7 + 3 = 44 ms;
 * t_W = 0.5, t_F&B = 2: 40 - 3.5 + 3 (2 + 1.5 - 1.5) = 42.5 ms.
 * The table's formula holds while a merged step takes at least t_F + t_B (each backward's input
 * gradient then leaves no later than the formula counts); shorter steps leave the stages waiting
 * on each other's transfers and the bubble grows past it (t_F&B = 1.5: more than 1.5 ms). */
START_TEST(dualpipev_bubble_on_a_graph)
{
    static const double cases[][5] = {
        {1, 1, 1, 3, 54.0}, {1, 1, 1, 2.5, 49.0}, {1, 1, 1, 2, 44.0}, {1, 1, 0.5, 2, 42.5}};
    const int p = 4, m = 8;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double tf = cases[i][0], tb = cases[i][1], tw = cases[i][2], tfb = cases[i][3];
        dpv_out o = dpv_graph(tf, tb, tw, tfb, 0);
        double pass = tf + tb + tw, busy = 2 * m * pass - (2 * (m - p) - 1) * (pass - tfb);
        ck_near(o.busy[p - 1], busy, 1e-9);
        ck_near(o.makespan, busy + (p - 1) * (tfb + (tb + tw) - 3 * tw), 1e-9);
        ck_near(o.makespan, cases[i][4], 1e-9);
    }
    dpv_out o = dpv_graph(1, 1, 1, 1.5, 0);
    ck_assert(o.makespan - o.busy[p - 1] > (p - 1) * (1.5 + 2 - 3) + 1e-9);
}
END_TEST

/* DualPipe's orders: stages s and p - 1 - s run the same one, DualPipeV's for stage
 * min(s, p - 1 - s) of p / 2 with m / 2 micro-batches (dualpipe.py's steps with half_rank and
 * half_num_chunks); on a graph its bubble is the repository's (PP / 2 - 1)(F&B + B - 3W), PP = p
 * whole stages, on the middle stages (the fewest merged steps: 2 (m / 2 - p / 2) - 1 = 11):
 * t = 1 ms, t_F&B = 3: 2 x 8 x 3 = 48 ms of passes + 1 x (3 + 2 - 3) = 50 ms; t_F&B = 2:
 * 48 - 11 + 1 = 38 ms; t_W = 0.5, t_F&B = 2: 40 - 5.5 + (2 + 1.5 - 1.5) = 36.5 ms. */
START_TEST(dualpipe_orders_and_bubble)
{
    pipeline_unit a[6 * 16], v[6 * 16];
    for (int s = 0; s < 4; s++) {
        int n = pipeline_order(SCHED_DUALPIPE, 4, s, 16, 2, 0, a);
        ck_assert_int_eq(pipeline_order(SCHED_DUALPIPEV, 2, s < 2 ? s : 3 - s, 8, 2, 0, v), n);
        ck_assert(memcmp(a, v, (size_t)n * sizeof *a) == 0);
    }
    static const double cases[][5] = {{1, 1, 1, 3, 50.0}, {1, 1, 1, 2, 38.0}, {1, 1, 0.5, 2, 36.5}};
    const int p = 4, mc = 8;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double tf = cases[i][0], tb = cases[i][1], tw = cases[i][2], tfb = cases[i][3];
        dpv_out o = dpv_graph(tf, tb, tw, tfb, 1);
        double pass = tf + tb + tw;
        double busy = 2 * mc * pass - (2 * (mc - p / 2) - 1) * (pass - tfb);
        ck_near(o.busy[1], busy, 1e-9);
        ck_near(o.makespan, busy + (p / 2 - 1) * (tfb + (tb + tw) - 3 * tw), 1e-9);
        ck_near(o.makespan, cases[i][4], 1e-9);
    }
}
END_TEST

static const char *const PLAN =
    "workload: {family: gpt, layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000}\n"
    "batch: {global: 16, micro: 2}\nprecision: bf16\noptimizer: adam\n"
    "strategy:\n  pipeline: {degree: 4, schedule: %s}\n";

typedef struct plan_out {
    double makespan, busy[4], act[4], weights[4], grads[4], sync[4];
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
    int sync = graph_label(f.p.graph, "dualpipe copies grad all-reduce");
    for (int r = 0; r < 4; r++) {
        o->sync[r] = 0;
        o->act[r] = f.p.memory[r].activations;
        o->weights[r] = f.p.memory[r].weights;
        o->grads[r] = f.p.memory[r].gradients;
    }
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++)
        if (f.p.graph->tasks[t].label == sync)
            o->sync[f.p.graph->tasks[t].rank] += f.p.graph->tasks[t].bytes;
    fixture_pass_seconds(&f, o->busy);
    fixture_free(&f);
}

static plan_out plan_run(const char *schedule)
{
    plan_out o;
    fixture_forked(plan_child, schedule, &o, sizeof o);
    return o;
}

/* A compiled GPT plan, 8 layers on 4 stages, 8 micro-batches: DualPipeV runs ZB-V's chunks
 * (stage s layers s and 7 - s), so every GPU's kernel time is ZB-V's (its whole backwards are
 * B and W together, its merged steps a forward and a backward) and the pipeline's is 1F1B's;
 * it ends before 1F1B. Memory: stage 1 holds chunks of one transformer layer each and peaks at
 * 2 p + 1 = 9 layers' activations of a micro-batch (stage_order's bound, reached there at the
 * first merged step), where 1F1B's stage 1 holds p - 1 = 3 micro-batches of its two layers:
 * 9 / 6 = 1.5 times as much. */
START_TEST(compiled_dualpipev_keeps_work)
{
    plan_out b = plan_run("1f1b"), v = plan_run("zb-v"), d = plan_run("dualpipev");
    double all_b = 0, all_d = 0;
    for (int r = 0; r < 4; r++) {
        ck_assert_msg(fabs(d.busy[r] / v.busy[r] - 1) < 1e-9, "rank %d %.12g %.12g", r, d.busy[r],
                      v.busy[r]);
        all_b += b.busy[r];
        all_d += d.busy[r];
    }
    ck_assert(fabs(all_d / all_b - 1) < 1e-9);
    ck_assert(d.makespan < b.makespan);
    ck_near(d.act[1] / b.act[1], 1.5, 1e-9);
}
END_TEST

/* A four-layer MoE (hidden 1024, 4 experts of width 4096, top-2, seq 4096) on four GPUs of one
 * DGX H100: pipeline 2 x data 2, expert 2, 4 micro-batches of 1 under `schedule`; the busiest
 * GPU's exposed communication (communicating while not computing) and its EP all-to-all time. */
static void moe_child(const void *arg, void *out)
{
    char text[1024];
    snprintf(text, sizeof text,
             "workload: {family: llama, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, "
             "ffn_hidden: 4096, seq: 4096, vocab: 8192, attention: flash, experts: 4, "
             "experts_topk: 2}\nbatch: {global: 8, micro: 1}\nprecision: bf16\n"
             "optimizer: adam\nstrategy:\n  pipeline: {degree: 2, schedule: %s}\n"
             "  data: {degree: 2}\n  expert: {degree: 2}\n",
             (const char *)arg);
    sim_fixture f;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 1, .gpus_per_node = 4}, &f.c);
    fixture_text(&f, text, NULL);
    fixture_run(&f);
    double *o = out;
    o[0] = f.sum.fig.exposed_comm_s;
    o[1] = f.sum.comm_s[CAT_EP_COMM];
    fixture_free(&f);
}

/* DualPipeV's merged steps run one micro-batch's all-to-alls beside the other chunk's compute
 * (emit_merged, as Megatron-Core's combined 1F1B: tests/test_ep.c checks the hiding by hand):
 * against ZB-V on the same V, with the same all-to-alls, less of the communication is exposed. */
START_TEST(dualpipev_hides_alltoalls)
{
    double v[2], d[2];
    fixture_forked(moe_child, "zb-v", v, sizeof v);
    fixture_forked(moe_child, "dualpipev", d, sizeof d);
    ck_assert_msg(fabs(d[1] / v[1] - 1) < 1e-6, "%.9g %.9g", d[1], v[1]);
    ck_assert_msg(d[0] < 0.8 * v[0], "exposed %.9g s against %.9g s", d[0], v[0]);
}
END_TEST

/* DualPipe on the same plan: stage s holds slices s and 3 - s of the 1F1B split (two layers
 * each; stage 0 the embedding and the head, tied and held once: the embedding's weight less
 * 1F1B's last stage's own copy of it), each run for half the micro-batches, so its kernel time
 * is the mean of 1F1B's two stages' and its weights their sum; after the backward each stage
 * all-reduces its gradients (ZeRO 0: all of them, the gradient memory) with its mirror stage,
 * and the pipeline is shorter than 1F1B's (its bubble (p / 2 - 1)(F&B + B - 3W) against 1F1B's
 * (p - 1)(F + B)). */
START_TEST(compiled_dualpipe_two_copies)
{
    plan_out b = plan_run("1f1b"), d = plan_run("dualpipe");
    for (int r = 0; r < 4; r++) {
        double mean = (b.busy[r] + b.busy[3 - r]) / 2;
        ck_assert_msg(fabs(d.busy[r] / mean - 1) < 1e-9, "rank %d %.12g %.12g", r, d.busy[r], mean);
        ck_near(d.sync[r], d.grads[r], 1e-3);
        ck_assert(d.sync[r] > 0);
    }
    double tied = 32000.0 * 1024 * 2; /* the head's copy of the embedding, bf16 */
    ck_near(d.weights[1], b.weights[1] + b.weights[2], 1e-3);
    ck_near(d.weights[0], b.weights[0] + b.weights[3] - tied, 1e-3);
    ck_assert(d.makespan < b.makespan);
}
END_TEST

/* DualPipe folded as unfolded: 8 GPT layers over 2 stages, DP 8, on two DGX H100 nodes sharing
 * one NIC each (`--nics 1`): stage 0 on node 0, stage 1 on node 1, so every data replica's
 * copy all-reduce crosses the same NIC pair. Simulating replica 0 alone, its folded replicas'
 * pairs must still load those NICs (companion groups of its pair's collective), or the
 * all-reduce would run 8 times too fast (before the companions: 0.29 s folded against 1.39 s
 * unfolded); and the same under TP folding (TP 8). Within 0.2%: the companions start with
 * their twin's pair, the unfolded replicas' pairs each when its own reduction ends. */
typedef struct fold_args {
    const char *strategy;
    int fold;
} fold_args;

static void fold_child(const void *arg, void *out)
{
    const fold_args *a = arg;
    char text[512];
    snprintf(text, sizeof text,
             "workload: {family: gpt, layers: 8, hidden: 4096, heads: 32, seq: 256, "
             "vocab: 32000}\nbatch: {global: 32, micro: 1}\nstrategy:\n%s",
             a->strategy);
    sim_fixture f;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 2, .nics_per_node = 1}, &f.c);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(sim_strategy_text(text, &f.s, &err) == 0, "%s", err.message);
    compile_options o;
    compile_default_options(&o);
    o.fold_data_parallel = a->fold;
    fixture_compile(&f, &o);
    fixture_run(&f);
    *(double *)out = f.r.makespan;
    fixture_free(&f);
}

START_TEST(dualpipe_folds_as_unfolded)
{
    static const char *const plans[] = {
        "  pipeline: {degree: 2, schedule: dualpipe}\n  data: {degree: 8}\n",
        "  tensor: {degree: 8}\n  pipeline: {degree: 2, schedule: dualpipe}\n"};
    for (int i = 0; i < 2; i++) {
        double t[2];
        for (int fold = 0; fold < 2; fold++) {
            fold_args a = {plans[i], fold};
            fixture_forked(fold_child, &a, &t[fold], sizeof t[fold]);
        }
        ck_assert_msg(fabs(t[1] / t[0] - 1) < 2e-3, "plan %d: folded %.9g s, unfolded %.9g s", i,
                      t[1], t[0]);
    }
}
END_TEST

/* op-level recompute is refused too (its replay inside a merged step is not modelled). */
START_TEST(dualpipe_refuses_op_recompute)
{
    const char *text = "workload: {family: llama, layers: 8, hidden: 1024, heads: 16, kv_heads: 8, "
                       "ffn_hidden: 2816, seq: 2048, vocab: 32000, attention: flash}\n"
                       "batch: {global: 8, micro: 1}\nstrategy:\n"
                       "  pipeline: {degree: 2, schedule: dualpipev}\n  recompute: op\n";
    sim_expect_strategy_error(text, "strategy.recompute", 5,
                              "op-level recompute with the dualpipev");
}
END_TEST

/* DualPipeV's and DualPipe's own rules, at the schedule's line: fewer than 2 p micro-batches
 * (DualPipeV's steady state starts at micro-batch 2 p, each DualPipe copy's at p), full recompute
 * (at the recompute key), and Megatron-Core's overlap_a2a (at its key); DualPipe's odd pipeline
 * degree and odd micro-batch count (global 5); with zero 3 as the other split schedules. */
START_TEST(dualpipev_refusals)
{
    static const struct {
        const char *strategy, *field, *message;
        int line, global;
    } cases[] = {
        {"  pipeline: {degree: 2, schedule: dualpipev}\n  data: {degree: 2}\n",
         "strategy.pipeline.schedule", "at least 2 x pipeline degree = 4", 4, 4},
        {"  pipeline: {degree: 2, schedule: dualpipev}\n  recompute: full\n", "strategy.recompute",
         "full recompute with the dualpipev", 5, 4},
        {"  pipeline: {degree: 2, schedule: dualpipev}\n  expert: {degree: 1, overlap_a2a: true}\n",
         "strategy.expert.overlap_a2a", "overlaps its forward and backward chunks itself", 5, 4},
        {"  pipeline: {degree: 2, schedule: dualpipe}\n  recompute: full\n", "strategy.recompute",
         "full recompute with the dualpipe", 5, 4},
        {"  pipeline: {degree: 3, schedule: dualpipe}\n", "strategy.pipeline.schedule",
         "even pipeline degree", 4, 6},
        {"  pipeline: {degree: 4, schedule: dualpipe}\n", "strategy.pipeline.schedule",
         "at least 2 x pipeline degree = 8", 4, 4},
        {"  pipeline: {degree: 2, schedule: dualpipe}\n", "strategy.pipeline.schedule",
         "an even number per data-parallel rank, got 5", 4, 5},
        {"  pipeline: {degree: 2, schedule: dualpipev}\n  data: {degree: 2, zero: 3}\n",
         "strategy.pipeline.schedule", "zero 3", 4, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "workload: {family: gpt, layers: 4, hidden: 256, heads: 4, seq: 128, "
                 "vocab: 1000}\nbatch: {global: %d, micro: 1}\nstrategy:\n%s",
                 cases[i].global, cases[i].strategy);
        sim_expect_strategy_error(text, cases[i].field, cases[i].line, cases[i].message);
    }
}
END_TEST

static Suite *dualpipe_suite(void)
{
    Suite *s = suite_create("dualpipe");
    const TTest *const tests[] = {dualpipev_orders_by_hand,
                                  dualpipev_orders_complete_and_bounded,
                                  dualpipev_bubble_on_a_graph,
                                  compiled_dualpipev_keeps_work,
                                  dualpipev_hides_alltoalls,
                                  dualpipev_refusals,
                                  dualpipe_orders_and_bubble,
                                  compiled_dualpipe_two_copies,
                                  dualpipe_folds_as_unfolded,
                                  dualpipe_refuses_op_recompute,
                                  NULL};
    suite_add_tests(s, "core", 120, tests);
    return s;
}

int main(void)
{
    return suite_run(dualpipe_suite());
}
