/* steady.h: a pipeline's steady state simulated once (issue 15, "repeated micro-batches").
 *
 * A plan of M micro-batches per replica is simulated with m1 of them (steady_short_micro_batches).
 * If that run proves a period P of d micro-batches (find_window: three consecutive periods in
 * which every task of every stream, the host's issue pace and every link's bytes and busy time
 * repeat exactly, shifted by P, with no other task in flight; d is 1, or the pipeline degree
 * under the interleaved schedule), the full plan's timeline is that run's with K = (M - m1) / d
 * more periods inserted: the tasks before the proven window keep their times, K copies of its
 * last period follow, and the rest moves by K x P. The full plan's graph must be the short
 * plan's with those micro-batches inserted, stream by stream (checked task by task). When a
 * run proves no exact period, its window may still repeat to within 1e-4, 1e-3 or 5e-3 of the
 * period (the smallest that holds), every task and host pace: dynamics that converge to a
 * period geometrically, or settle into one of several rounds (bandwidth shared by flows whose
 * overlap shifts, under uneven stages), and never repeat to 1e-9 in the run; that window is used,
 * the period inserted is the median of its tasks' shifts, and the tolerance is reported
 * (approx_s). Otherwise every task is simulated. Built without the full plan's graph
 * (steady_window_*), the check is on the plan one period longer, and the report extrapolates
 * from the two timelines. docs/design-notes.md, "Steady-state skipping", "The window alone". */
#ifndef PROTOSIM_STEADY_H
#define PROTOSIM_STEADY_H

#include "../../strategies/compile/compile.h"
#include "../engine/htae.h"
#include "../report/report.h"

typedef struct steady_info {
    int used;          /* 1: the result was extended from the shorter run */
    int micro_batches; /* the plan's, per replica */
    int simulated;     /* micro-batches simulated */
    double period_s;   /* used: the proven period */
    /* used, 0: the period is exact (every task repeats to 1e-9 s); > 0: no run proved one, and
     * its window repeats to within this many seconds (1e-4, 1e-3 or 5e-3 of the period: flows
     * sharing links that converge to a period without reaching it exactly); each inserted
     * period is then right to about this much, the iteration to inserted x approx_s */
    double approx_s;
    int inserted;        /* used: periods inserted (K) */
    double short_wall_s; /* host seconds of the shorter runs (also when not used) */
    char why[96];        /* not used: why ("--no-fold", "no period found", ...) */
} steady_info;

/* Simulate the compiled plan (compiled from s with copt) into *out: through a shorter run and
 * its proven period when allowed (allow: nothing needs every task simulated, such as a trace)
 * and possible, else every task. hopt may be NULL. Errors are the executor's. */
int steady_run(const strategy *s, const cluster *c, const compile_options *copt,
               const htae_options *hopt, int allow, const compiled_plan *plan, htae_result *out,
               steady_info *info, ps_error *err);

/* steady_run in two steps. steady_prepare: the shorter runs, attempt by attempt, until one
 * holds a window; it needs the strategy, not the whole plan (its shorter plans carry the whole
 * plan's figures: compile_options.graph_micro_batches). NULL, with info->why, when none may be
 * tried or none holds one. steady_finish: the whole plan's result from the prepared run (which
 * it frees), or every task simulated when there is none or the graphs do not line up. The
 * options are checked once more before each shorter run (a gate may have asked for link
 * counters after steady_begin), not after. */
typedef struct steady_prepared steady_prepared;
/* steady_prepare in two steps, so that a gate may look at the first shorter plan before any
 * run: steady_begin compiles it (NULL with info->why when none may be tried), steady_begun_plan
 * is it (its figures the whole plan's; its graph m1 micro-batches), steady_prepare_run
 * simulates it and, while no window holds, the next attempts' (NULL with info->why when none
 * does; pr is consumed). */
steady_prepared *steady_begin(const strategy *s, const cluster *c, const compile_options *copt,
                              const htae_options *hopt, int allow, steady_info *info);
const compiled_plan *steady_begun_plan(const steady_prepared *pr);
steady_prepared *steady_prepare_run(const strategy *s, const cluster *c,
                                    const compile_options *copt, const htae_options *hopt,
                                    int allow, steady_prepared *pr, steady_info *info);
steady_prepared *steady_prepare(const strategy *s, const cluster *c, const compile_options *copt,
                                const htae_options *hopt, int allow, steady_info *info);
int steady_finish(const cluster *c, const htae_options *hopt, const compiled_plan *plan,
                  steady_prepared *pr, htae_result *out, steady_info *info, ps_error *err);
/* A prepared run no longer wanted (its plan failed to compile, or the gate stopped it). */
void steady_prepared_free(steady_prepared *pr);

/* The steady state without the whole plan's graph (issue 31: compile and memory in the
 * simulated window only; docs/design-notes.md, "The window alone"). steady_window_plan: the
 * plan with one period more than the prepared run (m1 + d micro-batches,
 * steady_window_micro_batches; its figures, memory included, the whole plan's). steady_window_expand: the prepared run expanded into that plan
 * (one period inserted, checked task by task as steady_finish checks the whole plan) into
 * *out, whose makespan and links are then the whole plan's; 1 when done, 0 with info->why
 * when the graphs do not line up, out untouched. The report then comes from the two timelines (the prepared run's
 * and out): steady_window_summarize (report_summarize_periodic), steady_window_path
 * (report_critical_path_periodic, 0 when the walks do not line up: the caller then simulates
 * the whole plan the old way), steady_window_tasks (the whole plan's task count). */
int steady_window_plan(const strategy *s, const cluster *c, const compile_options *copt,
                       int micro_batches, compiled_plan *plan, ps_error *err);
/* The window plan's micro-batches for pr (m1 + d): known before its run, so that the plan may
 * compile while it simulates (sim/run/run.c). */
int steady_window_micro_batches(const strategy *s, const steady_prepared *pr);
int steady_window_expand(steady_prepared *pr, const compiled_plan *plan, htae_result *out,
                         steady_info *info);
void steady_window_summarize(const steady_prepared *pr, const compiled_plan *plan,
                             const htae_result *out, report_summary *sum);
int steady_window_path(const steady_prepared *pr, const compiled_plan *plan, const htae_result *out,
                       report_critical_path *path);
uint64_t steady_window_tasks(const steady_prepared *pr, const compiled_plan *plan);

/* The micro-batches the shorter run simulates for a plan of pp stages, by attempt: under 1F1B
 * first pp + 8 (the window of three periods may then end at micro-batch pp + 3 .. pp + 6 on the
 * first stage, after the warm-up, before the cool-down), then, if that run holds no period,
 * 2 pp + 4 when that is more (uneven stages settle later); without a pipeline 6, once; under the
 * interleaved schedule, whose period is a round of pp micro-batches, 6 rounds, then 8, then 12
 * (5 never held one in the plans tried; 12 for periods that converge slowly). A run whose
 * window repeats only to a tolerance is used; an attempt is made only while
 * steady_attempt_pays. 0: no more attempts. */
int steady_short_micro_batches(int pp, int interleaved, int attempt);

/* Whether an attempt of m1 micro-batches, after attempts that simulated `spent` in all, may
 * still pay for a plan of m: only while they stay below m (when they reach it, even a proven
 * period would have cost as much as simulating every micro-batch, and a failure all of it again:
 * the Llama 3.1 405B row of llm_training_public.csv, 48 + 64 micro-batches tried of 192, no
 * longer also 96). */
int steady_attempt_pays(int m, int spent, int m1);

#endif
