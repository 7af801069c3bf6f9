/* test_steady.c: the steady state simulated once (sim/run/steady.c): wherever it is used, every
 * task's times, the links' bytes and busy times and the report equal the full simulation's;
 * where it may not be used, it says why and simulates everything. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "../sim/run/run.h"
#include "../sim/run/steady.h"
#include "sim_util.h"
#include "suite_util.h"

/* A small GPT (8 layers of hidden 1024) on the 4 A100s of dgx4, with this batch and strategy. */
static void load_plan(const char *batch, const char *strategy_yaml, strategy *s, cluster **c,
                      compiled_plan *p)
{
    char text[2048];
    snprintf(text, sizeof text,
             "workload:\n  name: gpt-small\n  family: gpt\n  layers: 8\n  hidden: 1024\n"
             "  heads: 16\n  seq: 1024\n  vocab: 50304\n"
             "batch: %s\nprecision: bf16\noptimizer: adam\nstrategy:\n%s",
             batch, strategy_yaml);
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, s, &err) == 0, "%s", err.message);
    *c = sim_dgx4();
    ck_assert_msg(compile_plan(s, *c, NULL, p, &err) == 0, "%s", err.message);
}

/* steady_run against the full simulation of the same plan: the same times for every task
 * (1 ns), the same links (1e-9), the same report. */
static void expect_same(const compiled_plan *p, const htae_result *st, const htae_result *full)
{
    const exec_graph *g = p->graph;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        ck_assert_msg(fabs(st->start[t] - full->start[t]) <= 1e-9, "task %u starts %.12g, %.12g", t,
                      st->start[t], full->start[t]);
        ck_assert(fabs(st->end[t] - full->end[t]) <= 1e-9);
    }
    ck_close(st->makespan, full->makespan, 1e-12);
    ck_assert_int_eq(st->n_links, full->n_links);
    for (int j = 0; j < full->n_links; j++) {
        const htae_link_stat *a = sim_find_link(st, full->links[j].name);
        ck_close(a->bytes, full->links[j].bytes, 1e-9);
        ck_assert(fabs(a->busy_s - full->links[j].busy_s) <= 1e-9);
    }
    report_summary a, b;
    run_summarize(p, st, &a);
    run_summarize(p, full, &b);
    ck_close(a.fig.compute_s, b.fig.compute_s, 1e-9);
    ck_close(a.fig.exposed_comm_s + a.fig.bubble_s + a.fig.idle_s,
             b.fig.exposed_comm_s + b.fig.bubble_s + b.fig.idle_s, 1e-9);
    ck_assert_int_eq(a.busiest_rank, b.busiest_rank);
    ck_assert_int_eq(a.n_top, b.n_top);
    for (int i = 0; i < a.n_top; i++) {
        ck_assert_int_eq(a.top[i].label, b.top[i].label);
        ck_close(a.top[i].seconds, b.top[i].seconds, 1e-9);
    }
}

/* Run the plan whole, then through steady_run; its info into *info. */
static void run_both(const strategy *s, const cluster *c, const compile_options *co, int allow,
                     const compiled_plan *p, htae_result *st, htae_result *full, steady_info *info)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(htae_run(p->graph, c, NULL, full, &err) == 0, "%s", err.message);
    ck_assert_msg(steady_run(s, c, co, NULL, allow, p, st, info, &err) == 0, "%s", err.message);
}

/* A plan steady_run must skip: simulated with `simulated` micro-batches, the same as whole. */
typedef struct fixture {
    strategy s;
    cluster *c;
    compiled_plan p;
    htae_result st, full;
    steady_info info;
} fixture;

static void expect_used(fixture *f, const char *batch, const char *yaml, int simulated)
{
    load_plan(batch, yaml, &f->s, &f->c, &f->p);
    run_both(&f->s, f->c, NULL, 1, &f->p, &f->st, &f->full, &f->info);
    ck_assert_msg(f->info.used, "not used: %s", f->info.why);
    ck_assert_int_eq(f->info.simulated, simulated);
    expect_same(&f->p, &f->st, &f->full);
}

static void fixture_free(fixture *f)
{
    htae_result_free(&f->st);
    htae_result_free(&f->full);
    compiled_plan_free(&f->p);
    strategy_free(&f->s);
}

/* 4 pipeline stages, 1F1B, 24 micro-batches: 4 + 8 = 12 simulated, 12 periods inserted. */
START_TEST(pipeline_1f1b)
{
    fixture f;
    expect_used(&f, "{global: 24, micro: 1}", "  pipeline: {degree: 4, schedule: 1f1b}\n",
                steady_short_micro_batches(4, 0, 0));
    ck_assert_int_eq(f.info.simulated, 12);
    ck_assert_int_eq(f.info.micro_batches, 24);
    /* the period is what one more micro-batch adds: the first stage's forward of micro-batch
     * 10 starts P after that of 9 in the full run too */
    double f9 = -1, f10 = -1;
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++) {
        const graph_task *k = &f.p.graph->tasks[t];
        if (k->rank == 0 && k->category == CAT_FORWARD && k->micro == 9 && f9 < 0)
            f9 = f.full.start[t];
        if (k->rank == 0 && k->category == CAT_FORWARD && k->micro == 10 && f10 < 0)
            f10 = f.full.start[t];
    }
    ck_assert(fabs((f10 - f9) - f.info.period_s) <= 1e-9);
    fixture_free(&f);
}
END_TEST

/* 2 stages x 2 data-parallel replicas with ZeRO-1's overlapped gradient buckets: the
 * collectives after the last micro-batch move by the inserted periods. */
START_TEST(pipeline_with_data_parallel)
{
    fixture f;
    expect_used(&f, "{global: 32, micro: 1}",
                "  pipeline: {degree: 2, schedule: 1f1b}\n"
                "  data: {degree: 2, zero: 1, overlap: true}\n",
                10);
    fixture_free(&f);
}
END_TEST

/* No pipeline, 4-way data parallel, 16 micro-batches of 8: 6 simulated. Nothing communicates
 * between the micro-batches, so a period is one micro-batch's forward and backward on the GPU:
 * the host runs ahead (it issues a micro-batch faster than the GPU runs it), and steady_prove
 * checks that its growing lead bounds nothing. */
START_TEST(data_parallel_host_ahead)
{
    fixture f;
    expect_used(&f, "{global: 512, micro: 8}", "  data: {degree: 4}\n", 6);
    double gpu = 0, host = 0; /* micro-batch 3 on rank 0 */
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++) {
        const graph_task *k = &f.p.graph->tasks[t];
        if (k->rank != 0 || k->micro != 3)
            continue;
        gpu += k->kind == TASK_COMPUTE ? k->seconds : 0.0;
        host += k->host ? k->host_s : 0.0;
    }
    ck_assert(gpu > host);
    ck_assert_msg(fabs(f.info.period_s - gpu) <= 1e-9, "period %.12g, one micro-batch %.12g",
                  f.info.period_s, gpu);
    fixture_free(&f);
}
END_TEST

/* The interleaved schedule runs its micro-batches in rounds of the pipeline degree: a period is
 * a round of 2 micro-batches here (2 stages of 2 chunks, 2 replicas); 6 rounds simulated of 20
 * micro-batches, 4 rounds inserted. */
START_TEST(interleaved_rounds)
{
    fixture f;
    expect_used(&f, "{global: 40, micro: 1}",
                "  pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2}\n"
                "  data: {degree: 2}\n",
                steady_short_micro_batches(2, 1, 0));
    ck_assert_int_eq(f.info.simulated, 12);
    ck_assert_int_eq(f.info.micro_batches, 20);
    fixture_free(&f);
}
END_TEST

/* No exact period (issue 31): tests/data/e2e/qwen-shaped-tolerant-window.yaml, a Qwen3-shaped
 * plan (30 layers of hidden 4096, 128 experts split by expert tensor 4; seq 131,072) of TP4, PP8
 * interleaved over 4 virtual stages with the embedding and the loss counted as layers (uneven
 * chunks), DP2, on 8 DGX H100. Its rounds'
 * periods converge geometrically (pipeline sends sharing links under shifting overlaps) and never
 * repeat to 1 ns in 6 rounds; the first attempt's window repeats to within 1e-3 of its period
 * and is used: 48 of 128 micro-batches simulated, K = 80 / 8 = 10 rounds inserted, each off by
 * at most approx_s, so the iteration is within K x approx_s of the full simulation's (it is
 * within 9 ms of 325 s here: 3e-5). */
START_TEST(approximate_period)
{
    strategy s;
    sim_strategy_load("tests/data/e2e/qwen-shaped-tolerant-window.yaml", &s);
    ps_error err;
    cluster c;
    sim_load_generated("dgx-h100", (cluster_gen_opts){.nodes = 8}, &c);
    compiled_plan p;
    ck_assert_msg(compile_plan(&s, &c, NULL, &p, &err) == 0, "%s", err.message);
    htae_result st, full;
    steady_info info;
    run_both(&s, &c, NULL, 1, &p, &st, &full, &info);
    ck_assert_msg(info.used, "not used: %s", info.why);
    ck_assert_int_eq(info.micro_batches, 128);
    ck_assert_int_eq(info.simulated, steady_short_micro_batches(8, 1, 0)); /* the first attempt */
    ck_assert_int_eq(info.simulated, 48);
    ck_assert(info.approx_s > 0);
    /* approx_s is 1e-3 of the window's P; period_s the median shift, within approx_s of it */
    ck_close(info.approx_s, 1e-3 * info.period_s, 1e-3);
    ck_assert_int_eq(info.inserted, (128 - 48) / 8);
    double bound = info.inserted * info.approx_s;
    ck_assert_msg(fabs(st.makespan - full.makespan) <= bound, "%.9g against %.9g (bound %.3g)",
                  st.makespan, full.makespan, bound);
    ck_assert(fabs(st.makespan - full.makespan) <= 1e-4 * full.makespan);
    htae_result_free(&st);
    htae_result_free(&full);
    compiled_plan_free(&p);
    strategy_free(&s);
    cluster_free(&c);
}
END_TEST

/* Where it may not be used: it says why, and the result is the full simulation's. */
static void expect_not_used(const char *batch, const char *yaml, int fold, int allow,
                            const char *why)
{
    strategy s;
    cluster *c;
    compiled_plan p;
    load_plan(batch, yaml, &s, &c, &p);
    compile_options co;
    compile_default_options(&co);
    co.fold_data_parallel = fold;
    if (!fold) {
        compiled_plan_free(&p);
        ps_error err;
        ck_assert(compile_plan(&s, c, &co, &p, &err) == 0);
    }
    htae_result st, full;
    steady_info info;
    run_both(&s, c, &co, allow, &p, &st, &full, &info);
    ck_assert_int_eq(info.used, 0);
    ck_assert_msg(strstr(info.why, why), "why '%s', want '%s'", info.why, why);
    ck_assert_int_eq(info.simulated, info.micro_batches);
    ck_assert(st.makespan == full.makespan);
    for (uint32_t t = 0; t < p.graph->n_tasks; t++)
        ck_assert(st.start[t] == full.start[t] && st.end[t] == full.end[t]);
    htae_result_free(&st);
    htae_result_free(&full);
    compiled_plan_free(&p);
    strategy_free(&s);
}

/* Attempts stop once they would simulate as many micro-batches as the plan: an interleaved plan
 * of 8 stages tries 6, 8 and 12 rounds (48, 64, 96 micro-batches); with 192 micro-batches the
 * third would bring the attempts to 48 + 64 + 96 = 208 >= 192, so it is not made; with 256 it
 * is (208 < 256); the first always is. */
START_TEST(attempts_stop_at_the_plan)
{
    ck_assert_int_eq(steady_short_micro_batches(8, 1, 0), 48);
    ck_assert_int_eq(steady_short_micro_batches(8, 1, 1), 64);
    ck_assert_int_eq(steady_short_micro_batches(8, 1, 2), 96);
    ck_assert(steady_attempt_pays(192, 0, 48));
    ck_assert(steady_attempt_pays(192, 48, 64));
    ck_assert(!steady_attempt_pays(192, 48 + 64, 96));
    ck_assert(steady_attempt_pays(256, 48 + 64, 96));
    ck_assert(!steady_attempt_pays(208, 48 + 64, 96));
}
END_TEST

START_TEST(not_used)
{
    const char *pp4 = "  pipeline: {degree: 4, schedule: 1f1b}\n";
    expect_not_used("{global: 24, micro: 1}", pp4, 0, 1, "--no-fold");
    expect_not_used("{global: 24, micro: 1}", pp4, 1, 0, "a trace asks for every task");
    expect_not_used("{global: 13, micro: 1}", pp4, 1, 1, "few micro-batches"); /* 12 + 2 > 13 */
    expect_not_used("{global: 24, micro: 1}", "  pipeline: {degree: 4, schedule: gpipe}\n", 1, 1,
                    "a GPipe schedule");
    /* GPipe without stages still runs every forward before the first backward */
    expect_not_used("{global: 64, micro: 1}",
                    "  pipeline: {degree: 1, schedule: gpipe}\n  data: {degree: 4}\n", 1, 1,
                    "a GPipe schedule");
    /* interleaved: its period is a round of 2 micro-batches, 6 rounds simulated: 12 + 2 x 2 > 14 */
    expect_not_used("{global: 28, micro: 1}",
                    "  pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2}\n"
                    "  data: {degree: 2}\n",
                    1, 1, "few micro-batches");
}
END_TEST

/* A plan compiled with graph_micro_batches = m: every figure the whole plan's, the graph m
 * micro-batches' (the same as the plan of m micro-batches compiled whole). 4 stages, 24
 * micro-batches of 1, 8 layers of hidden 1024 and seq 1024: model FLOPs 24 times one
 * micro-batch's. */
START_TEST(figures_of_the_whole_plan)
{
    strategy s, s12;
    cluster *c;
    compiled_plan whole, part, p12;
    const char *pp4 = "  pipeline: {degree: 4, schedule: 1f1b}\n";
    load_plan("{global: 24, micro: 1}", pp4, &s, &c, &whole);
    load_plan("{global: 12, micro: 1}", pp4, &s12, &c, &p12);
    compile_options o;
    compile_default_options(&o);
    o.graph_micro_batches = 12;
    ps_error err;
    ck_assert_msg(compile_plan(&s, c, &o, &part, &err) == 0, "%s", err.message);
    ck_assert_int_eq(part.micro_batches, 24);
    ck_assert(part.samples_per_iter == 24 && whole.samples_per_iter == 24);
    ck_assert(part.model_flops_per_iter == whole.model_flops_per_iter);
    ck_close(part.model_flops_per_iter, 2 * p12.model_flops_per_iter, 1e-15);
    for (int r = 0; r < part.gpus; r++)
        ck_assert(part.memory[r].total == whole.memory[r].total);
    ck_assert_uint_eq(part.graph->n_tasks, p12.graph->n_tasks);
    ck_assert_uint_lt(part.graph->n_tasks, whole.graph->n_tasks);
    compiled_plan_free(&whole);
    compiled_plan_free(&part);
    compiled_plan_free(&p12);
    strategy_free(&s);
    strategy_free(&s12);
}
END_TEST

/* run_execute with request.window against the whole plan's graph (window 0): the same
 * iteration to the bit, the same figures, busiest GPU, top labels, critical path and links
 * (1e-9), the whole plan's task count; the outcome's graph holds one period more than the
 * shorter run. Three plans: 1F1B, 1F1B with two replicas' overlapped gradient buckets,
 * interleaved. */
static void expect_window(const char *batch, const char *yaml, int graph_micro_batches)
{
    strategy s;
    cluster *c;
    compiled_plan p;
    load_plan(batch, yaml, &s, &c, &p);
    run_request rq = {.c = c, .s = &s, .steady = 1, .path = 1, .again = 1};
    run_outcome whole, win;
    ps_error err;
    ck_assert_msg(run_execute(&rq, &whole, &err) == 0, "%s", err.message);
    rq.window = 1;
    ck_assert_msg(run_execute(&rq, &win, &err) == 0, "%s", err.message);
    ck_assert_msg(win.steady.used && whole.steady.used, "%s", win.steady.why);
    ck_assert_ptr_nonnull(win.window);
    ck_assert_int_eq(win.plan.micro_batches, p.micro_batches);
    compiled_plan part;
    compile_options o;
    compile_default_options(&o);
    o.graph_micro_batches = graph_micro_batches;
    ck_assert(compile_plan(&s, c, &o, &part, &err) == 0);
    ck_assert_uint_eq(win.plan.graph->n_tasks, part.graph->n_tasks);
    compiled_plan_free(&part);
    ck_assert(win.tasks == whole.tasks && whole.tasks == p.graph->n_tasks);
    ck_assert(win.res.makespan == whole.res.makespan);
    const plan_figures *a = &win.sum.fig, *b = &whole.sum.fig;
    ck_assert(a->iteration_s == b->iteration_s && a->mfu == b->mfu);
    ck_close(a->compute_s, b->compute_s, 1e-9);
    ck_assert(fabs(a->exposed_comm_s - b->exposed_comm_s) <= 1e-9);
    ck_assert(fabs(a->bubble_s - b->bubble_s) <= 1e-9 && fabs(a->idle_s - b->idle_s) <= 1e-9);
    ck_assert(a->peak_memory_bytes == b->peak_memory_bytes);
    ck_assert_int_eq(win.sum.busiest_rank, whole.sum.busiest_rank);
    ck_assert_int_eq(win.sum.n_top, whole.sum.n_top);
    for (int i = 0; i < win.sum.n_top; i++)
        ck_assert(fabs(win.sum.top[i].seconds - whole.sum.top[i].seconds) <= 1e-9);
    ck_assert_int_eq(win.path.n, whole.path.n);
    for (int i = 0; i < win.path.n; i++) {
        ck_assert_str_eq(win.path.items[i].name, whole.path.items[i].name);
        ck_assert(fabs(win.path.items[i].seconds - whole.path.items[i].seconds) <= 1e-9);
    }
    ck_assert_int_eq(win.res.n_links, whole.res.n_links);
    for (int j = 0; j < whole.res.n_links; j++) {
        const htae_link_stat *l = sim_find_link(&win.res, whole.res.links[j].name);
        ck_close(l->bytes, whole.res.links[j].bytes, 1e-9);
        ck_assert(fabs(l->busy_s - whole.res.links[j].busy_s) <= 1e-9);
    }
    run_outcome_free(&whole);
    run_outcome_free(&win);
    compiled_plan_free(&p);
    strategy_free(&s);
}

/* A gate that asks for link counters on every GPU (as `run --trace` does). */
static int ask_counters(void *ctx, const compiled_plan *plan, ps_error *err)
{
    (void)err;
    htae_options *o = ctx;
    unsigned char *all = xmalloc((size_t)plan->gpus);
    memset(all, 1, (size_t)plan->gpus);
    o->counter_ranks = all;
    return RUN_SIMULATE;
}

static int stop_all(void *ctx, const compiled_plan *plan, ps_error *err)
{
    (void)plan, (void)err;
    (*(int *)ctx)++;
    return RUN_STOP;
}

/* Under request.window the gate sees the first shorter plan, before any run: one that stops
 * gets nothing simulated; one that asks for link counters (which rule the steady state out)
 * gets every task simulated, the whole plan's graph (32 micro-batches, 4 stages), as without
 * the window. */
START_TEST(window_gate)
{
    strategy s;
    cluster *c;
    compiled_plan p;
    load_plan("{global: 32, micro: 1}", "  pipeline: {degree: 4, schedule: 1f1b}\n", &s, &c, &p);
    int asked = 0;
    run_request rq = {.c = c,
                      .s = &s,
                      .steady = 1,
                      .again = 1,
                      .window = 1,
                      .gate = stop_all,
                      .gate_ctx = &asked};
    run_outcome stopped, counted, whole;
    ps_error err;
    ck_assert_int_eq(run_execute(&rq, &stopped, &err), 0);
    ck_assert_int_eq(asked, 1);
    ck_assert_int_eq(stopped.stopped, 1);
    ck_assert_ptr_null(stopped.res.start);
    ck_assert_int_eq(stopped.steady.simulated, 32); /* nothing ran: the plan's count stays */

    htae_options o;
    htae_default_options(&o);
    rq.hopt = &o;
    rq.gate = ask_counters;
    rq.gate_ctx = &o;
    ck_assert_msg(run_execute(&rq, &counted, &err) == 0, "%s", err.message);
    ck_assert_int_eq(counted.steady.used, 0);
    ck_assert_str_eq(counted.steady.why, "link counters asked");
    ck_assert(counted.steady.short_wall_s == 0); /* no shorter run simulated for nothing */
    ck_assert_ptr_null(counted.window);
    ck_assert_uint_eq(counted.plan.graph->n_tasks, p.graph->n_tasks);
    ck_assert(counted.tasks == p.graph->n_tasks);
    free((void *)o.counter_ranks);
    o.counter_ranks = NULL;
    rq.gate = NULL;
    rq.window = 0;
    ck_assert_msg(run_execute(&rq, &whole, &err) == 0, "%s", err.message);
    ck_assert(fabs(counted.res.makespan - whole.res.makespan) <= 1e-9);
    run_outcome_free(&stopped);
    run_outcome_free(&counted);
    run_outcome_free(&whole);
    compiled_plan_free(&p);
    strategy_free(&s);
}
END_TEST

START_TEST(window_alone)
{
    /* 4 + 8 = 12 simulated, the plan of 13 compiled */
    expect_window("{global: 32, micro: 1}", "  pipeline: {degree: 4, schedule: 1f1b}\n", 13);
    expect_window("{global: 64, micro: 1}",
                  "  pipeline: {degree: 2, schedule: 1f1b}\n  data: {degree: 2, overlap: true}\n",
                  11);
    /* interleaved: 6 rounds of 2 simulated, one round more compiled */
    expect_window("{global: 40, micro: 1}",
                  "  pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2}\n"
                  "  data: {degree: 2}\n",
                  14);
}
END_TEST

static Suite *steady_suite(void)
{
    const TTest *const tests[] = {pipeline_1f1b,
                                  pipeline_with_data_parallel,
                                  data_parallel_host_ahead,
                                  interleaved_rounds,
                                  attempts_stop_at_the_plan,
                                  not_used,
                                  approximate_period,
                                  figures_of_the_whole_plan,
                                  window_alone,
                                  window_gate,
                                  NULL};
    return suite_of("steady", "core", 120, tests);
}

int main(void)
{
    return suite_run(steady_suite());
}
