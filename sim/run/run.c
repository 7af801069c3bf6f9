/* run.c: the one run path (run.h): a strategy compiled or a traced job's graph built, the gate
 * asked, the graph simulated (a strategy's through its steady state when allowed), summarized. */
#include "run.h"

#include <assert.h>
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

int run_execute(const run_request *rq, run_outcome *out, ps_error *err)
{
    assert((rq->s != NULL) != (rq->job != NULL));
    memset(out, 0, sizeof *out);
    out->job = rq->job;
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
