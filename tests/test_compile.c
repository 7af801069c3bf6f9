/* test_compile.c: the compiler and pipeline schedules, checked end to end through the executor
 * against sums of op costs computed here, and against the structure Megatron-LM would run. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../strategies/compile/compile.h"
#include "../strategies/schedule.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* Load and compile one plan (one SimGrid engine per test process) and, when simulate, run it
 * with the executor's default options. */
static void setup(sim_fixture *f, const char *strategy_rel, const char *cluster_rel, int simulate)
{
    fixture_files(f, strategy_rel, cluster_rel);
    if (!simulate)
        return;
    htae_default_options(&f->o);
    fixture_run(f);
}

/* One GPU, one segment per pass (no TP cuts), computed here from the op costs: the host
 * issues every kernel in turn (launch cost each), the GPU runs a kernel once it is launched
 * and the previous one is done (flow_op). Passes of one micro-batch: forward, the full-recompute
 * replay of the transformer-layer ops when `recompute_layers`, backward (launching 2x the
 * kernels); micro-batches one after another. Returns the time the GPU finishes the last
 * backward. */
static void issue(kernel_flow *fl, const workload_op *op, op_pass pass, const strategy *s,
                  const device_spec *dev)
{
    /* under precision: fp8 the layers' GEMMs are FP8 GEMMs, everything else bf16 */
    precision_t prec = s->fp8 && op->fp8_gemm ? PREC_FP8 : s->precision;
    flow_op(fl, op, pass, cost_op_kernel_seconds(op, pass, prec, dev));
}

/* Op-level selective checkpointing's replay of a layer op: its forward again (sac_redo 1), the
 * N slice it recomputes of a fused projection, or nothing. */
static void issue_op_replay(kernel_flow *fl, const workload_op *op, const strategy *s,
                            const device_spec *dev)
{
    if (op->sac_redo >= 1.0) {
        issue(fl, op, PASS_FWD, s, dev);
    } else if (op->sac_redo > 0.0) {
        workload_op part;
        workload_op_gemm_slice(op, op->sac_redo, &part);
        issue(fl, &part, PASS_FWD, s, dev);
    }
}

/* recompute_layers: 0 none, 1 full (every layer op's forward again), 2 op-level selective. */
static double steps_by_hand(const sim_fixture *f, int recompute_layers, int micro_batches)
{
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&f->s.model, f->s.micro_batch, f->s.precision, &wg, &err), 0);
    const device_spec *dev = f->c.device[0];
    const strategy *st = &f->s;
    kernel_flow fl = {0.0, 0.0};
    for (int m = 0; m < micro_batches; m++) {
        for (int i = 0; i < wg.n_ops; i++)
            issue(&fl, &wg.ops[i], PASS_FWD, st, dev);
        for (int i = 0; recompute_layers && i < wg.n_ops; i++)
            if (wg.ops[i].layer >= 0 && wg.ops[i].layer < wg.model.layers) {
                if (recompute_layers == 2)
                    issue_op_replay(&fl, &wg.ops[i], st, dev);
                else
                    issue(&fl, &wg.ops[i], PASS_FWD, st, dev);
            }
        for (int i = wg.n_ops - 1; i >= 0; i--)
            issue(&fl, &wg.ops[i], PASS_BWD, st, dev);
    }
    workload_graph_free(&wg);
    ck_assert(fl.host > 0 && fl.gpu > 0);
    return fl.gpu;
}

static double step_overhead(const sim_fixture *f)
{
    return cost_optimizer_seconds(f->p.params_total, 1, PREC_BF16, 1, f->c.device[0]) +
           cost_iteration_overhead_seconds();
}

START_TEST(single_gpu_iteration_is_sum_of_op_times)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/single.yaml", "tests/data/htae/one.xml", 1);
    ck_assert_int_eq(f.p.micro_batches, 4);
    double want = steps_by_hand(&f, 0, 4) + step_overhead(&f);
    ck_close(f.r.makespan, want, 1e-6);
    ck_close(f.sum.fig.compute_s, want, 1e-6);
    ck_assert(f.sum.fig.exposed_comm_s == 0 && f.sum.fig.bubble_s == 0);
    fixture_free(&f);
}
END_TEST

START_TEST(full_recompute_adds_one_forward_of_the_layers)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/single-full.yaml", "tests/data/htae/one.xml", 1);
    ck_close(f.r.makespan, steps_by_hand(&f, 1, 4) + step_overhead(&f), 1e-6);
    fixture_free(&f);
}
END_TEST

/* Op-level selective checkpointing (`recompute: op`, torchtitan's policy) on a GQA Llama, one
 * GPU: in backward each layer runs again the forward of every op but the fused attention core,
 * the down projection (matmul 7 of the block, kept) and of the fused projections the slices
 * the policy numbers even: K of QKV (kd / (qd + 2 kd) = 256 / 1536 of its columns) and the up
 * half of gate-and-up. What a layer keeps: its input, Q and V, the attention output and its
 * log-sum-exp, the gate's output and the down projection's output:
 * 2 B x t x (h + qd + kd + qd + f + h) + 4 B x b x heads x s. */
START_TEST(op_level_checkpointing_by_the_policy)
{
    const char *text = "workload: {family: llama, layers: 2, hidden: 1024, heads: 8, kv_heads: 2, "
                       "ffn_hidden: 2816, seq: 1024, vocab: 32000, attention: flash}\n"
                       "batch: {global: 4, micro: 2}\nprecision: bf16\noptimizer: adam\n"
                       "strategy:\n  recompute: op\n";
    sim_fixture f;
    fixture_text(&f, text, "tests/data/htae/one.xml");
    htae_default_options(&f.o);
    fixture_run(&f);
    ck_assert_int_eq(f.p.micro_batches, 2);
    ck_close(f.r.makespan, steps_by_hand(&f, 2, 2) + step_overhead(&f), 1e-6);

    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&f.s.model, 2, PREC_BF16, &wg, &err), 0);
    double t = 2.0 * 1024, h = 1024, qd = 1024, kd = 256, ff = 2816, e = 2;
    ck_close(find_op(&wg, "layers.0.attn.qkv")->sac_redo, kd / (qd + 2 * kd), 1e-15);
    ck_close(find_op(&wg, "layers.0.mlp.fc1")->sac_redo, 0.5, 1e-15);
    ck_assert(find_op(&wg, "layers.0.mlp.fc2")->sac_redo == 0.0);
    ck_assert(find_op(&wg, "layers.0.attn.core")->sac_redo == 0.0);
    ck_assert(find_op(&wg, "layers.0.attn.proj")->sac_redo == 1.0);
    ck_assert(find_op(&wg, "layers.0.attn.rope")->sac_redo == 1.0);
    double kept = 0, all = 0;
    for (int i = 0; i < wg.n_ops; i++)
        if (wg.ops[i].layer == 0) {
            kept += wg.ops[i].act_bytes * wg.ops[i].sac_keep;
            all += wg.ops[i].act_bytes;
        }
    ck_close(kept, e * t * (h + qd + kd + qd + ff + h) + 4.0 * 2 * 8 * 1024, 1e-9);
    workload_graph_free(&wg);
    /* the activations held: each of the 2 layers keeps `kept` instead of `all` */
    double act_op = f.p.memory[0].activations;
    fixture_free_plan(&f);
    f.s.recompute = RECOMPUTE_NONE;
    fixture_compile(&f, NULL);
    ck_close(f.p.memory[0].activations - act_op, 2 * (all - kept), 1e-9);
    fixture_free(&f);
}
END_TEST

/* Where the policy's numbering is not what the model runs, `recompute: op` is refused, with the
 * key's position: another family, biases (addmm), tensor parallelism (which collectives it
 * keeps), fp8. */
START_TEST(op_level_checkpointing_refused_where_not_modelled)
{
    static const struct {
        const char *workload, *extra, *why;
    } cases[] = {
        {"{family: gpt, layers: 2, hidden: 1024, heads: 8, seq: 1024, vocab: 32000, attention: "
         "flash}",
         "", "for this family"},
        {"{family: llama, layers: 2, hidden: 1024, heads: 8, seq: 1024, vocab: 32000, ffn_hidden: "
         "2816, attention: flash, bias: true}",
         "", "with biases"},
        {"{family: llama, layers: 2, hidden: 1024, heads: 8, seq: 1024, vocab: 32000, ffn_hidden: "
         "2816, attention: flash}",
         "  tensor: {degree: 2}\n", "with tensor parallelism"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "workload: %s\nbatch: {global: 4, micro: 2}\nprecision: bf16\n"
                 "strategy:\n%s  recompute: op\n",
                 cases[i].workload, cases[i].extra);
        strategy s;
        ps_error err;
        ps_error_clear(&err);
        ck_assert_int_eq(sim_strategy_text(text, &s, &err), PS_EINPUT);
        ck_assert_str_eq(err.field, "strategy.recompute");
        ck_assert_int_eq(err.line, strlen(cases[i].extra) ? 6 : 5);
        ck_assert_msg(strstr(err.message, "op-level selective checkpointing (recompute: op) is "
                                          "not modelled ") &&
                          strstr(err.message, cases[i].why),
                      "%s", err.message);
    }
}
END_TEST

START_TEST(memory_of_single_gpu_states)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/single.yaml", "tests/data/htae/one.xml", 0);
    const memory_estimate *m = &f.p.memory[0];
    double P = f.p.params_total;
    ck_close(m->weights, 2 * P, 1e-12);
    ck_close(m->gradients, 4 * P, 1e-12);
    ck_close(m->optimizer, 12 * P, 1e-12);
    ck_assert(m->activations > 0);
    ck_close(m->total, m->weights + m->gradients + m->optimizer + m->activations + m->buffers,
             1e-12);
    /* master_weights: false (pure bf16): gradients in bf16 (2 P), Adam's two moments in bf16
     * (4 P), no fp32 copy; the weights unchanged; the optimizer step on GPU 0 moves 14 bytes a
     * parameter, not 34 */
    double weights = m->weights;
    fixture_free_plan(&f);
    f.s.master_weights = 0;
    fixture_compile(&f, NULL);
    m = &f.p.memory[0];
    ck_close(m->weights, weights, 1e-12);
    ck_close(m->gradients, 2 * P, 1e-12);
    ck_close(m->optimizer, 4 * P, 1e-12);
    int found = 0;
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++)
        if (f.p.graph->tasks[t].category == CAT_OPTIMIZER) {
            ck_close(f.p.graph->tasks[t].seconds,
                     cost_optimizer_seconds(P, 1, PREC_BF16, 0, f.c.device[0]) +
                         cost_iteration_overhead_seconds(),
                     1e-12);
            found++;
        }
    ck_assert_int_eq(found, 1);
    fixture_free(&f);
}
END_TEST

/* A tied LM head (GPT's default) shares the word embedding: on one stage the weight is held
 * once (memory_of_single_gpu_states), with two stages the last one holds its own copy of the
 * V x h table, as Megatron's word_embeddings_for_head. Layers of 12h^2 + 13h parameters. */
START_TEST(tied_lm_head_copy_on_the_last_stage)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/pp2-1f1b.yaml", "tests/data/htae/two-300GBps.xml", 0);
    double h = 1024, V = 8192, s = 512, layer = 12 * h * h + 13 * h;
    double first = V * h + s * h + 2 * layer, last = 2 * layer + 2 * h + V * h;
    ck_close(f.p.params_total, first + last - V * h, 1e-12);
    for (int r = 0; r < f.p.gpus; r++)
        ck_close(f.p.memory[r].weights, 2 * (f.p.stage_of_rank[r] == 0 ? first : last), 1e-12);
    fixture_free(&f);
}
END_TEST

/* precision: fp8 on one H100: the same sum of op times with the layers' GEMMs costed as FP8
 * GEMMs (and their casts), the optimizer and memory as bf16 mixed precision. */
START_TEST(fp8_single_gpu_is_sum_of_op_times)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/single-fp8.yaml", "tests/data/compile/one-h100.xml", 1);
    ck_assert(f.s.fp8 && f.s.precision == PREC_BF16 && f.p.plan.precision == PREC_FP8);
    ck_close(f.r.makespan, steps_by_hand(&f, 0, 4) + step_overhead(&f), 1e-6);
    const memory_estimate *m = &f.p.memory[0];
    double P = f.p.params_total;
    ck_close(m->weights, 2 * P, 1e-12);
    ck_close(m->gradients, 4 * P, 1e-12);
    ck_close(m->optimizer, 12 * P, 1e-12);
    /* the same plan in bf16 is slower: its layer GEMMs run at half the peak */
    double fp8 = f.r.makespan;
    strategy_set_precision(&f.s, PREC_BF16);
    ck_assert(!f.s.fp8);
    double bf16 = steps_by_hand(&f, 0, 4);
    ck_assert_msg(bf16 > fp8 - step_overhead(&f), "bf16 %g, fp8 %g", bf16, fp8);
    fixture_free(&f);
}
END_TEST

START_TEST(dp_overlap_hides_small_allreduce)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/dp2-overlap.yaml", "tests/data/htae/two-300GBps.xml", 1);
    double dp = f.sum.comm_s[CAT_DP_COMM];
    ck_assert(dp > 0);
    /* Five buckets (layer 3 with the final norm: the tied LM head has no weights of its own
     * on a single stage; layers 2, 1, 0; the embedding); all but the last run under later
     * backward work, so at most about a third of the all-reduce time shows. */
    ck_assert_msg(f.sum.fig.exposed_comm_s < 0.35 * dp, "exposed %g of %g",
                  f.sum.fig.exposed_comm_s, dp);
    int buckets = 0;
    for (uint32_t i = 0; i < f.p.graph->n_colls; i++)
        buckets +=
            f.p.graph->tasks[f.p.graph->coll_tasks[f.p.graph->colls[i].first_task]].category ==
            CAT_DP_COMM;
    ck_assert_int_eq(buckets, 5);
    fixture_free(&f);
}
END_TEST

START_TEST(dp_without_overlap_exposes_allreduce)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/dp2-no-overlap.yaml", "tests/data/htae/two-300GBps.xml", 1);
    ck_close(f.sum.fig.exposed_comm_s, f.sum.comm_s[CAT_DP_COMM], 1e-6);
    fixture_free(&f);
}
END_TEST

START_TEST(dp_overlap_cannot_hide_a_slow_network)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/dp2-overlap.yaml", "tests/data/htae/two-1GBps.xml", 1);
    /* ~100 M fp32 gradients = 0.4 GB at 1 GB/s: far longer than the backward pass */
    ck_assert_msg(f.sum.fig.exposed_comm_s > 0.5 * f.r.makespan, "exposed %g of %g",
                  f.sum.fig.exposed_comm_s, f.r.makespan);
    double grads = f.p.params_total * 4.0; /* ring of 2: each edge carries S */
    ck_assert(f.sum.comm_s[CAT_DP_COMM] >= grads / 1e9);
    fixture_free(&f);
}
END_TEST

/* Two TP collectives per layer per pass, one after the vocab-parallel embedding (forward) and
 * one after the LM head (backward), per micro-batch. */
START_TEST(tp_collective_count_follows_megatron)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/tp2.yaml", "tests/data/htae/two-300GBps.xml", 0);
    const exec_graph *g = f.p.graph;
    int tp_colls = 0;
    for (uint32_t i = 0; i < g->n_colls; i++)
        if (g->tasks[g->coll_tasks[g->colls[i].first_task]].category == CAT_TP_COMM) {
            tp_colls++;
            ck_assert_int_eq(g->colls[i].kind, COLL_ALLREDUCE);
            ck_close(g->colls[i].bytes, 1.0 * 512 * 1024 * 2, 1e-12); /* b s h, bf16 */
        }
    ck_assert_int_eq(tp_colls, 2 * (2 * 2 + 1 + 2 * 2 + 1));
    fixture_free(&f);
}
END_TEST

START_TEST(pipeline_gpipe_holds_more_activations_than_1f1b)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/pp2-gpipe.yaml", "tests/data/htae/two-300GBps.xml", 0);
    double gpipe0 = f.p.memory[0].activations, gpipe1 = f.p.memory[1].activations;
    compiled_plan_free(&f.p);
    f.s.schedule = SCHED_1F1B; /* same plan, same cluster: compile again, no simulation */
    fixture_compile(&f, NULL);
    /* of 8 micro-batches, GPipe keeps all 8 alive; 1F1B keeps 2 on stage 0 and 1 on stage 1 */
    ck_close(gpipe0 / f.p.memory[0].activations, 8.0 / 2.0, 1e-12);
    ck_close(gpipe1 / f.p.memory[1].activations, 8.0 / 1.0, 1e-12);
    fixture_free(&f);
}
END_TEST

/* A pipelined plan's run: a bubble, and compute, exposed communication, bubble and idle time
 * add up to the iteration. */
static void expect_bubble_in_breakdown(const sim_fixture *f)
{
    const plan_figures *fig = &f->sum.fig;
    ck_assert(fig->bubble_s > 0);
    ck_close(fig->compute_s + fig->exposed_comm_s + fig->bubble_s + fig->idle_s, f->r.makespan,
             1e-9);
}

START_TEST(pipeline_plan_runs_with_a_bubble)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/pp2-1f1b.yaml", "tests/data/htae/two-300GBps.xml", 1);
    expect_bubble_in_breakdown(&f);
    fixture_free(&f);
}
END_TEST

/* Interleaved 1F1B with the host thread: the pipeline runtime waits for each unit's input;
 * a blocking send (waiting for a receive Megatron posts a unit earlier than the one that
 * consumes it) once deadlocked this plan. It runs, and its breakdown adds up. */
START_TEST(interleaved_plan_runs_with_a_bubble)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/pp2-interleaved.yaml", "tests/data/htae/two-300GBps.xml", 1);
    ck_assert_int_eq(f.p.chunks, 2);
    expect_bubble_in_breakdown(&f);
    fixture_free(&f);
}
END_TEST

START_TEST(rank_order_follows_strategy)
{
    sim_fixture f;
    fixture_load(&f, "tests/data/compile/order-dtp.yaml", NULL);
    /* order [data, tensor, pipeline]: rank = d + 2 * (t + 2 * p) */
    ck_assert_int_eq(compile_rank_of(&f.s, 1, 0, 1), 6);
    ck_assert_int_eq(compile_rank_of(&f.s, 0, 1, 0), 1);
    f.s.order[0] = AXIS_TENSOR;
    f.s.order[1] = AXIS_DATA;
    ck_assert_int_eq(compile_rank_of(&f.s, 1, 0, 1), 5); /* t + 2 * (d + 2 * p) */
    strategy_free(&f.s);
}
END_TEST

START_TEST(one_f_one_b_order)
{
    pipeline_unit u[16];
    pipeline_1f1b_order(4, 0, 8, u);
    int want0[][2] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {0, 4}, {1, 1}};
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(u[i].backward, want0[i][0]);
        ck_assert_int_eq(u[i].micro, want0[i][1]);
    }
    ck_assert_int_eq(u[15].backward, 1);
    ck_assert_int_eq(u[15].micro, 7);
    pipeline_1f1b_order(4, 3, 8, u); /* last stage: no warm-up */
    ck_assert(u[0].backward == 0 && u[1].backward == 1 && u[1].micro == 0);
}
END_TEST

/* Megatron-Core's combined 1F1B (expert.overlap_a2a; combined_1f1b.py): without a pipeline,
 * 3 micro-batches run F0 alone, F1 merged with B0, F2 with B1, B2 alone. Interleaved (2
 * stages, 2 chunks, 4 micro-batches), stage 0 warms up with one forward more than its 4, so
 * the fifth is chunk 0's micro-batch 2 and the sixth, merged, chunk 0's micro-batch 3. */
START_TEST(combined_1f1b_order)
{
    pipeline_unit u[16];
    ck_assert_int_eq(pipeline_order(SCHED_1F1B, 1, 0, 3, 1, 1, u), 6);
    int want[][3] = {{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {0, 2, 1}, {1, 1, 0}, {1, 2, 0}};
    for (int i = 0; i < 6; i++) { /* backward, micro, merged */
        ck_assert_int_eq(u[i].backward, want[i][0]);
        ck_assert_int_eq(u[i].micro, want[i][1]);
        ck_assert_int_eq(u[i].merged, want[i][2]);
    }
    pipeline_order(SCHED_1F1B, 1, 0, 1, 1, 1, u); /* one micro-batch: nothing to merge */
    ck_assert(!u[0].merged && u[1].backward);
    ck_assert_int_eq(pipeline_order(SCHED_INTERLEAVED, 2, 0, 4, 2, 1, u), 16);
    for (int i = 0; i < 5; i++)
        ck_assert(!u[i].backward && !u[i].merged);
    ck_assert(u[4].micro == 2 && u[4].chunk == 0);
    ck_assert(u[5].merged && u[5].micro == 3 && u[5].chunk == 0);
    ck_assert(u[6].backward && u[6].micro == 0 && u[6].chunk == 1);
}
END_TEST

START_TEST(interleaved_order_covers_every_unit_once)
{
    const int p = 2, m = 4, v = 2;
    pipeline_unit u[16];
    for (int stage = 0; stage < p; stage++) {
        ck_assert_int_eq(pipeline_order(SCHED_INTERLEAVED, p, stage, m, v, 0, u), 2 * m * v);
        int seen[2][4][2] = {{{0}}};
        for (int i = 0; i < 2 * m * v; i++) {
            seen[u[i].backward][u[i].micro][u[i].chunk]++;
            if (u[i].backward) /* a backward comes after its forward on this stage */
                ck_assert_int_eq(seen[0][u[i].micro][u[i].chunk], 1);
        }
        for (int b = 0; b < 2; b++)
            for (int mb = 0; mb < m; mb++)
                for (int c = 0; c < v; c++)
                    ck_assert_int_eq(seen[b][mb][c], 1);
    }
    pipeline_order(SCHED_INTERLEAVED, p, 0, m, v, 0, u);
    /* Megatron: stage 0 warms up with (p-1)*2 + (v-1)*p = 4 forwards: mb 0,1 of chunk 0, then chunk 1 */
    int want[][3] = {{0, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1}, {0, 2, 0}, {1, 0, 1}};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(u[i].backward, want[i][0]);
        ck_assert_int_eq(u[i].micro, want[i][1]);
        ck_assert_int_eq(u[i].chunk, want[i][2]);
    }
}
END_TEST

/* tensor.comm_overlap: each TP all-reduce starts with the segment that produces its data
 * (the previous compute task's end) instead of after it, and the next segment waits for it. */
START_TEST(tp_comm_overlap_runs_collectives_beside_their_segment)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/tp2-overlap.yaml", "tests/data/htae/two-300GBps.xml", 1);
    const exec_graph *g = f.p.graph;
    uint32_t s0 = 0 * STREAM_COUNT + STREAM_COMPUTE;
    int checked = 0;
    for (uint32_t i = 0; i < g->n_colls; i++) {
        uint32_t t = g->coll_tasks[g->colls[i].first_task]; /* rank 0's member */
        /* its segment starts with it; the following segment waits for both */
        uint32_t seg = UINT32_MAX;
        for (uint32_t k = g->stream_first[s0]; k < g->stream_first[s0 + 1]; k++) {
            uint32_t c = g->stream_tasks[k];
            if (seg != UINT32_MAX) {
                ck_assert(f.r.start[c] >= f.r.end[t] - 1e-12);
                ck_assert(f.r.start[c] >= f.r.end[seg] - 1e-12);
                break;
            }
            if (fabs(f.r.start[c] - f.r.start[t]) < 1e-9)
                seg = c;
        }
        ck_assert_msg(seg != UINT32_MAX, "collective %u (start %g) runs alone", i, f.r.start[t]);
        checked++;
    }
    ck_assert_int_eq(checked, 20);
    fixture_free(&f);
}
END_TEST

/* data.overlap_param_gather: the all-gathers open the iteration (none after the optimizer),
 * and the first forward waits for the bucket holding its layers. */
START_TEST(param_gather_overlaps_the_first_forward)
{
    sim_fixture f;
    setup(&f, "tests/data/compile/zero1-gather.yaml", "tests/data/htae/two-300GBps.xml", 1);
    const exec_graph *g = f.p.graph;
    double opt_end = 0, first_fwd = 1e30, first_gather_end = 1e30, last_gather_start = 0;
    int gathers = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        if (g->tasks[t].rank != 0)
            continue;
        if (g->tasks[t].category == CAT_OPTIMIZER)
            opt_end = f.r.end[t];
        if (g->tasks[t].category == CAT_FORWARD && f.r.start[t] < first_fwd)
            first_fwd = f.r.start[t];
        if (g->tasks[t].kind == TASK_COLLECTIVE &&
            g->colls[g->tasks[t].coll].kind == COLL_ALLGATHER) {
            gathers++;
            if (f.r.end[t] < first_gather_end)
                first_gather_end = f.r.end[t];
            if (f.r.start[t] > last_gather_start)
                last_gather_start = f.r.start[t];
        }
    }
    ck_assert_int_eq(gathers, 5);                     /* one per gradient bucket */
    ck_assert(first_fwd >= first_gather_end - 1e-12); /* embedding waits for its bucket */
    ck_assert(last_gather_start < opt_end);           /* none after the optimizer */
    ck_close(f.r.makespan, opt_end, 1e-12);
    fixture_free(&f);
}
END_TEST

/* Korthikanti et al. 2022, Figure 1: per-GPU memory of the 22B (TP 8) and 175B (TP 8, PP 8,
 * interleaved, 3 chunks) models. The paper counts parameters as 12 L h^2 at 18 bytes each
 * (2 B fp16 weights + 4 B fp32 gradients + 12 B Adam state): 45.56 GiB per GPU
 * for both; ours also holds the embedding, LM head, biases and layernorms (a few percent more).
 * Activations: its per-layer formulas times the layers alive on the first stage; ours are per
 * op and add the embedding and loss activations (under 3% here). */
static void korthikanti(const char *strategy_rel, int nodes, double act_gib)
{
    sim_fixture f;
    fixture_load(&f, strategy_rel, NULL);
    sim_load_generated("dgx-a100", (cluster_gen_opts){.nodes = nodes}, &f.c);
    fixture_compile(&f, NULL);
    const double GiB = 1073741824.0;
    const memory_estimate *m = &f.p.memory[0]; /* first stage: the most activations */
    double states = (m->weights + m->gradients + m->optimizer) / GiB;
    ck_assert_msg(states >= 45.56 && states <= 45.56 * 1.04, "states %.2f GiB", states);
    double act = m->activations / GiB;
    ck_assert_msg(act >= act_gib && act <= act_gib * 1.03, "activations %.2f GiB, paper %.2f", act,
                  act_gib);
    fixture_free(&f);
}

START_TEST(memory_22b_tp8_no_recompute)
{
    korthikanti("tests/data/memory/22b-tp8.yaml", 1, 59.25);
}
END_TEST

START_TEST(memory_22b_tp8_sp_selective)
{
    korthikanti("tests/data/memory/22b-tp8-sp-sel.yaml", 1, 9.56);
}
END_TEST

START_TEST(memory_175b_tp8_pp8_no_recompute)
{
    korthikanti("tests/data/memory/175b-tp8-pp8.yaml", 8, 66.84);
}
END_TEST

START_TEST(memory_175b_tp8_pp8_sp_selective)
{
    korthikanti("tests/data/memory/175b-tp8-pp8-sp-sel.yaml", 8, 12.35);
}
END_TEST

static Suite *compile_suite(void)
{
    const TTest *const tests[] = {single_gpu_iteration_is_sum_of_op_times,
                                  full_recompute_adds_one_forward_of_the_layers,
                                  op_level_checkpointing_by_the_policy,
                                  op_level_checkpointing_refused_where_not_modelled,
                                  memory_of_single_gpu_states,
                                  tied_lm_head_copy_on_the_last_stage,
                                  fp8_single_gpu_is_sum_of_op_times,
                                  memory_22b_tp8_no_recompute,
                                  memory_22b_tp8_sp_selective,
                                  memory_175b_tp8_pp8_no_recompute,
                                  memory_175b_tp8_pp8_sp_selective,
                                  dp_overlap_hides_small_allreduce,
                                  dp_without_overlap_exposes_allreduce,
                                  dp_overlap_cannot_hide_a_slow_network,
                                  tp_collective_count_follows_megatron,
                                  pipeline_gpipe_holds_more_activations_than_1f1b,
                                  pipeline_plan_runs_with_a_bubble,
                                  rank_order_follows_strategy,
                                  tp_comm_overlap_runs_collectives_beside_their_segment,
                                  param_gather_overlaps_the_first_forward,
                                  one_f_one_b_order,
                                  interleaved_order_covers_every_unit_once,
                                  combined_1f1b_order,
                                  interleaved_plan_runs_with_a_bubble,
                                  NULL};
    return suite_of("compile", "core", 120, tests);
}

int main(void)
{
    return suite_run(compile_suite());
}
