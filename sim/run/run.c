/* run.c: the one run path (run.h): a strategy compiled or a traced job's graph built, the gate
 * asked, the graph simulated (a strategy's through its steady state when allowed), summarized. */
#include "run.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

report_plan run_report_plan(const compiled_plan *p)
{
    int m = compiled_plan_tightest_rank(p);
    return (report_plan){p->graph,
                         p->gpus,
                         p->pp,
                         p->samples_per_iter,
                         p->tokens_per_iter,
                         p->model_flops_per_iter,
                         p->peak_flops_per_gpu,
                         m,
                         p->memory[m].total,
                         p->memory_capacity_of_rank[m]};
}

void run_summarize(const compiled_plan *p, const htae_result *r, report_summary *out)
{
    report_plan rp = run_report_plan(p);
    report_summarize(&rp, r, out);
}

/* The request's compile options, or the defaults (into *defaults). */
static const compile_options *request_options(const run_request *rq, compile_options *defaults)
{
    if (rq->copt)
        return rq->copt;
    compile_default_options(defaults);
    return defaults;
}

/* Step 1: the graph to simulate: the strategy compiled, or the job's graph built. */
static int run_build(const run_request *rq, run_outcome *out, ps_error *err)
{
    double t0 = ps_now_s();
    int rc;
    if (rq->job) {
        rc = trace_job_graph(rq->job, rq->c->n_gpus, &out->traced, &out->task_of, err);
        out->graph = out->traced;
    } else {
        rc = compile_plan(rq->s, rq->c, rq->copt, &out->plan, err);
        out->graph = out->plan.graph;
    }
    out->compile_s = ps_now_s() - t0;
    return rc;
}

/* Step 3: the graph simulated; the clock put back to 0 when another run follows. */
static int run_simulate(const run_request *rq, run_outcome *out, ps_error *err)
{
    double t0 = ps_now_s();
    int rc;
    if (rq->job) {
        rc = htae_run(out->traced, rq->c, rq->hopt, &out->res, err);
    } else {
        compile_options defaults;
        const compile_options *copt = request_options(rq, &defaults);
        rc = steady_run(rq->s, rq->c, copt, rq->hopt, rq->steady, &out->plan, &out->res,
                        &out->steady, err);
    }
    out->simulate_s = ps_now_s() - t0;
    if (!rc && rq->again)
        out->clock_reset = htae_clock_restart();
    return rc;
}

/* The whole plan, compiled into out->plan (its seconds added to compile_s). */
static int run_compile_whole(const run_request *rq, const compile_options *copt, run_outcome *out,
                             ps_error *err)
{
    double t0 = ps_now_s();
    int rc = compile_plan(rq->s, rq->c, copt, &out->plan, err);
    out->graph = out->plan.graph;
    out->compile_s += ps_now_s() - t0;
    return rc;
}

/* The whole plan compiled and simulated through steady_finish after all (request.window: the
 * critical path's walks did not line up): what run_simulate would have done. */
static int run_whole(const run_request *rq, const compile_options *copt, run_outcome *out,
                     ps_error *err)
{
    steady_prepared *pr = out->window;
    out->window = NULL;
    compiled_plan_free(&out->plan);
    htae_result_free(&out->res);
    int rc = run_compile_whole(rq, copt, out, err);
    if (rc) {
        steady_prepared_free(pr);
        return rc;
    }
    double t0 = ps_now_s();
    out->steady.used = 0;
    rc = steady_finish(rq->c, rq->hopt, &out->plan, pr, &out->res, &out->steady, err);
    out->simulate_s += ps_now_s() - t0;
    if (!rc && rq->again)
        out->clock_reset = htae_clock_restart();
    return rc;
}

/* Step 4: the summary (a strategy's or a job's) and, when asked, the critical path. */
static int run_summary(const run_request *rq, run_outcome *out, ps_error *err)
{
    double t0 = ps_now_s();
    if (out->window && rq->path &&
        !steady_window_path(out->window, &out->plan, &out->res, &out->path)) {
        compile_options defaults;
        int rc = run_whole(rq, request_options(rq, &defaults), out, err);
        if (rc)
            return rc;
        t0 = ps_now_s();
    }
    if (rq->job)
        report_replay_summarize(rq->job, out->traced, out->task_of, &out->res, &out->replay);
    else if (out->window)
        steady_window_summarize(out->window, &out->plan, &out->res, &out->sum);
    else
        run_summarize(&out->plan, &out->res, &out->sum);
    if (rq->path && !out->window)
        report_critical_path_create(out->graph, &out->res, &out->path);
    out->tasks = out->window ? steady_window_tasks(out->window, &out->plan) : out->graph->n_tasks;
    out->summarize_s = ps_now_s() - t0;
    return 0;
}

/* Request.window: the first shorter plan (or the whole plan, when no shorter run may be tried)
 * before the gate, then the shorter runs, the plan one period longer and the expansion; the
 * whole plan, every task simulated, when no window holds or the graphs do not line up. Every
 * compile's seconds go to compile_s, the rest to simulate_s. */
/* The window plan compiled on a second thread while the shorter plan simulates: compile_plan
 * reads the strategy and the cluster, and on a built platform its routes come from the
 * description, not from SimGrid (cluster_routes_concurrent). */
typedef struct window_compile {
    const run_request *rq;
    const compile_options *copt;
    int micro_batches, started, rc;
    compiled_plan plan;
    ps_error err;
    pthread_t thread;
} window_compile;

static void *window_compile_main(void *arg)
{
    window_compile *w = arg;
    ps_error_clear(&w->err);
    w->rc = steady_window_plan(w->rq->s, w->rq->c, w->copt, w->micro_batches, &w->plan, &w->err);
    return NULL;
}

static void window_compile_start(window_compile *w, const run_request *rq,
                                 const compile_options *copt, const steady_prepared *pr)
{
    memset(w, 0, sizeof *w);
    w->rq = rq;
    w->copt = copt;
    w->micro_batches = steady_window_micro_batches(rq->s, pr);
    w->started = cluster_routes_concurrent() &&
                 pthread_create(&w->thread, NULL, window_compile_main, w) == 0;
}

/* The window plan of pr into out->plan: the one compiled beside the run when it is pr's (the
 * first attempt found its window), else compiled now. */
static int window_plan(window_compile *w, const run_request *rq, const compile_options *copt,
                       const steady_prepared *pr, run_outcome *out, ps_error *err)
{
    double t0 = ps_now_s();
    if (w->started)
        pthread_join(w->thread, NULL);
    int rc;
    if (w->started && !w->rc && w->micro_batches == steady_window_micro_batches(rq->s, pr)) {
        out->plan = w->plan;
        rc = 0;
    } else {
        if (w->started && !w->rc)
            compiled_plan_free(&w->plan);
        rc = steady_window_plan(rq->s, rq->c, copt, steady_window_micro_batches(rq->s, pr),
                                &out->plan, err);
    }
    w->started = 0;
    out->graph = out->plan.graph;
    out->compile_s += ps_now_s() - t0;
    return rc;
}

static void window_compile_drop(window_compile *w)
{
    if (!w->started)
        return;
    pthread_join(w->thread, NULL);
    if (!w->rc)
        compiled_plan_free(&w->plan);
    w->started = 0;
}

static int run_windowed(const run_request *rq, run_outcome *out, ps_error *err)
{
    compile_options defaults;
    const compile_options *copt = request_options(rq, &defaults);
    double start = ps_now_s();
    steady_prepared *pr = steady_begin(rq->s, rq->c, copt, rq->hopt, 1, &out->steady);
    out->compile_s = ps_now_s() - start;
    int rc = pr ? 0 : run_compile_whole(rq, copt, out, err);
    if (!rc && rq->gate) {
        rc = rq->gate(rq->gate_ctx, pr ? steady_begun_plan(pr) : &out->plan, err);
        out->stopped = rc == RUN_STOP;
    }
    if (!rc && pr) {
        window_compile w;
        window_compile_start(&w, rq, copt, pr);
        pr = steady_prepare_run(rq->s, rq->c, copt, rq->hopt, 1, pr, &out->steady);
        if (pr) {
            rc = window_plan(&w, rq, copt, pr, out, err);
        } else {
            window_compile_drop(&w);
            rc = run_compile_whole(rq, copt, out, err);
        }
    }
    if (!rc && pr && steady_window_expand(pr, &out->plan, &out->res, &out->steady)) {
        out->window = pr;
        pr = NULL;
    } else if (!rc) {
        if (pr) { /* the whole plan after all: steady_window_expand said why */
            compiled_plan_free(&out->plan);
            rc = run_compile_whole(rq, copt, out, err);
        }
        if (!rc)
            rc = steady_finish(rq->c, rq->hopt, &out->plan, NULL, &out->res, &out->steady, err);
    }
    steady_prepared_free(pr);
    out->simulate_s = ps_now_s() - start - out->compile_s;
    if (rc)
        return out->stopped ? 0 : rc;
    if (rq->again)
        out->clock_reset = htae_clock_restart();
    return run_summary(rq, out, err);
}

int run_execute(const run_request *rq, run_outcome *out, ps_error *err)
{
    assert((rq->s != NULL) != (rq->job != NULL));
    memset(out, 0, sizeof *out);
    out->job = rq->job;
    if (rq->window && rq->steady && rq->s)
        return run_windowed(rq, out, err);
    int rc = run_build(rq, out, err);
    if (!rc && rq->gate) { /* step 2 */
        rc = rq->gate(rq->gate_ctx, &out->plan, err);
        if (rc == RUN_STOP) {
            out->stopped = 1;
            return 0;
        }
    }
    if (!rc)
        rc = run_simulate(rq, out, err);
    if (!rc)
        rc = run_summary(rq, out, err);
    return rc;
}

void run_outcome_free(run_outcome *r)
{
    steady_prepared_free(r->window);
    report_critical_path_free(&r->path);
    if (r->job)
        report_replay_free(&r->replay);
    htae_result_free(&r->res);
    if (r->job)
        trace_tasks_free(r->job, r->task_of);
    graph_free(r->traced);
    compiled_plan_free(&r->plan);
    memset(r, 0, sizeof *r);
}
