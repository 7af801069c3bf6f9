/* run.h: the one run path of `run`, the sweep's workers and replay: compile a strategy (or take
 * a traced job's graph), simulate, summarize; one request in, one result out. */
#ifndef PROTOSIM_RUN_H
#define PROTOSIM_RUN_H

#include "../../workloads/trace/trace.h"
#include "../report/report.h"
#include "../report/report_replay.h"
#include "steady.h"

/* What a gate answers between compile and simulate: simulate, or stop there (the plan is not
 * simulated: the sweep's plans that do not fit, its twins); any other value is an error code,
 * with err set. */
enum { RUN_SIMULATE = 0, RUN_STOP = -1 };
typedef int (*run_gate)(void *ctx, const compiled_plan *plan, ps_error *err);

typedef struct run_request {
    const cluster *c;
    /* What runs: a strategy, compiled with copt (NULL: the defaults), or a traced job, whose
     * graph is built from its ranks (no compile step). Exactly one of s and job. */
    const strategy *s;
    const compile_options *copt;
    const trace_job *job;
    /* NULL: htae_default_options. The gate may change what it points to (counted links, known
     * once the plan's GPUs are). */
    const htae_options *hopt;
    int steady; /* a strategy's steady state may be simulated once (nothing needs every task
                   simulated, as a trace does; sim/run/steady.h) */
    int path;   /* 1: the critical path too */
    int again;  /* 1: another run follows in this process: the engine's clock is put back to 0
                   after a successful simulation (run_outcome.clock_reset) */
    /* 1: when the steady state is simulated once, the whole plan's graph is never built: the
     * report comes from the shorter plan and the plan one period longer (steady.h, "the
     * steady state without the whole plan's graph"); the outcome's plan is then that longer
     * one (its figures the whole plan's), its timeline that plan's. For a caller that reads the
     * summary, the path and the links, not the timeline task by task: `run` (its gate only
     * looks). The sweep's gate keys plans by their whole graph. */
    int window;
    run_gate gate; /* NULL: every compiled plan is simulated */
    void *gate_ctx;
} run_request;

/* Owned by the caller once run_execute returns (run_outcome_free), whatever it returned. */
typedef struct run_outcome {
    const trace_job *job;      /* the request's (its tasks are freed with it) */
    compiled_plan plan;        /* a strategy's, compiled */
    exec_graph *traced;        /* a job's graph, owned */
    uint32_t **task_of;        /* a job's: its events' tasks (trace_job_graph) */
    const exec_graph *graph;   /* the graph simulated: plan.graph or traced */
    htae_result res;           /* the timeline */
    steady_info steady;        /* a strategy's: whether its steady state was simulated once */
    report_summary sum;        /* a strategy's summary */
    replay_summary replay;     /* a job's summary */
    steady_prepared *window;   /* request.window, used: the shorter run the report came from */
    uint64_t tasks;            /* the whole plan's tasks (its graph's, or counted: window) */
    report_critical_path path; /* request.path: the critical path; else empty */
    int stopped;               /* the gate stopped the run after compiling */
    int clock_reset;           /* request.again: 1 when the engine's clock is back at 0, else no run
                        may follow in this process (it would count from this one's end) */
    /* Host seconds of the steps: compiling (or building the traced graph), simulating,
     * summarizing (with the critical path). */
    double compile_s, simulate_s, summarize_s;
} run_outcome;

/* Compile (or build the job's graph), ask the gate, simulate, summarize into *out. Errors are
 * the compiler's, the graph builder's, the gate's and the executor's; what was done before
 * one stays in *out. */
int run_execute(const run_request *rq, run_outcome *out, ps_error *err);
void run_outcome_free(run_outcome *r);

/* What the report reads of plan p. */
report_plan run_report_plan(const compiled_plan *p);
/* The summarize step alone: report_summarize on what the report reads of plan p. */
void run_summarize(const compiled_plan *p, const htae_result *r, report_summary *out);

#endif
