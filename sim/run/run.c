/* run.c: the one run path (run.h): a strategy compiled or a traced job's graph built, the gate
 * asked, the graph simulated (a strategy's through its steady state when allowed), summarized. */
#include "run.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

void run_summarize(const compiled_plan *p, const htae_result *r, report_summary *out)
{
    int m = compiled_plan_tightest_rank(p);
    report_plan rp = {p->graph,
                      p->gpus,
                      p->pp,
                      p->samples_per_iter,
                      p->tokens_per_iter,
                      p->model_flops_per_iter,
                      p->peak_flops_per_gpu,
                      m,
                      p->memory[m].total,
                      p->memory_capacity_of_rank[m]};
    report_summarize(&rp, r, out);
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
        const compile_options *copt = rq->copt;
        if (!copt) {
            compile_default_options(&defaults);
            copt = &defaults;
        }
        rc = steady_run(rq->s, rq->c, copt, rq->hopt, rq->steady, &out->plan, &out->res,
                        &out->steady, err);
    }
    out->simulate_s = ps_now_s() - t0;
    if (!rc && rq->again)
        out->clock_reset = htae_clock_restart();
    return rc;
}

/* Step 4: the summary (a strategy's or a job's) and, when asked, the critical path. */
static void run_summary(const run_request *rq, run_outcome *out)
{
    double t0 = ps_now_s();
    if (rq->job)
        report_replay_summarize(rq->job, out->traced, out->task_of, &out->res, &out->replay);
    else
        run_summarize(&out->plan, &out->res, &out->sum);
    if (rq->path)
        report_critical_path_create(out->graph, &out->res, &out->path);
    out->summarize_s = ps_now_s() - t0;
}

/* The full plan's compile on a second thread (run_overlapped). */
typedef struct full_compile {
    const run_request *rq;
    run_outcome *out;
    ps_error err;
    int rc;
} full_compile;

static void *full_compile_main(void *arg)
{
    full_compile *f = arg;
    ps_error_clear(&f->err);
    f->rc = run_build(f->rq, f->out, &f->err);
    return NULL;
}

/* Steps 1 and 3 side by side: the full plan compiles on a second thread while this one simulates
 * the shorter plan (steady_prepare), then the gate, then the expansion (steady_finish). The
 * result is the sequential path's: the shorter run reads nothing the full compile writes. 1 when
 * it ran (rc then the outcome), 0 when it may not (no second thread, or the routes may not be
 * read from two threads: rq->overlap unset, a platform file). */
static int run_overlapped(const run_request *rq, run_outcome *out, ps_error *err, int *rc)
{
    if (!rq->overlap || !rq->steady || rq->job || !cluster_routes_concurrent())
        return 0;
    full_compile f = {rq, out, {0}, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, full_compile_main, &f) != 0)
        return 0;
    double t0 = ps_now_s();
    compile_options defaults;
    const compile_options *copt = rq->copt;
    if (!copt) {
        compile_default_options(&defaults);
        copt = &defaults;
    }
    steady_prepared *pr = steady_prepare(rq->s, rq->c, copt, rq->hopt, 1, &out->steady);
    double prepared_s = ps_now_s() - t0;
    pthread_join(th, NULL);
    out->compile_s = ps_now_s() - t0 - prepared_s; /* what the compile added: its wait */
    if (f.rc) {
        steady_prepared_free(pr);
        *err = f.err;
        *rc = f.rc;
        return 1;
    }
    *rc = rq->gate ? rq->gate(rq->gate_ctx, &out->plan, err) : 0;
    if (*rc == RUN_STOP)
        out->stopped = 1;
    if (*rc) {
        steady_prepared_free(pr);
        *rc = *rc == RUN_STOP ? 0 : *rc;
        return 1;
    }
    t0 = ps_now_s();
    *rc = steady_finish(rq->s, rq->c, copt, rq->hopt, 1, &out->plan, pr, &out->res, &out->steady,
                        err);
    out->simulate_s = prepared_s + ps_now_s() - t0;
    if (!*rc && rq->again)
        out->clock_reset = htae_clock_restart();
    if (!*rc)
        run_summary(rq, out);
    return 1;
}

int run_execute(const run_request *rq, run_outcome *out, ps_error *err)
{
    assert((rq->s != NULL) != (rq->job != NULL));
    memset(out, 0, sizeof *out);
    out->job = rq->job;
    int rc;
    if (run_overlapped(rq, out, err, &rc))
        return rc;
    rc = run_build(rq, out, err);
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
        run_summary(rq, out);
    return rc;
}

void run_outcome_free(run_outcome *r)
{
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
