/* sweep_pool.h: the sweep's worker processes. The driver loads the platform once and forks
 * `jobs` workers, which inherit it; each worker simulates plan after plan as the driver hands
 * them out, through the run path (sim/run/run.h), the engine's clock put back to 0 after each
 * run, so that a plan gets exactly the record it gets in a process of its own, whatever ran
 * before it. A worker that dies takes only its current plan with it (failed, with the signal);
 * the driver forks another for the plans left. A plan that fails in the simulator ends its
 * worker too, since a stalled run may leave the engine with actors. */
#ifndef PROTOSIM_SWEEP_POOL_H
#define PROTOSIM_SWEEP_POOL_H

#include "output.h"

/* How progress shows on stderr: not at all (--no-progress), a bar redrawn in place (a
 * terminal), or a line every few seconds and at the end (a file or a pipe). */
enum { PROGRESS_OFF, PROGRESS_BAR, PROGRESS_LINES };

/* Simulate the pending plans todo[0..n_todo) (indices into plans[0..n_plans)) with at most `jobs`
 * workers; progress: PROGRESS_*. With twins, a plan whose compiled plan (graph and the figures
 * its record reads) equals a plan simulated in this call is not simulated and takes its outcome
 * (*n_twins counts them). Test hooks, environment variables: PROTOSIM_SWEEP_CRASH_PLAN=K makes
 * plan K's worker die of SIGSEGV where it would simulate, PROTOSIM_SWEEP_FAIL_PLAN=K plan K fail
 * there as a simulator error would. */
int sweep_pool_run(const sweep_spec *spec, const cluster *c, const profile_db *db,
                   sweep_plan *plans, int n_plans, const int *todo, int n_todo, int jobs, int twins,
                   int progress, int *n_twins, ps_error *err);

#endif
