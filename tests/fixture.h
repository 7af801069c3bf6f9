/* fixture.h: the plan-level tests' setup and teardown in one call each: a strategy, the cluster
 * it runs on, the plan compiled from them and, once run, the executor's result and the report's
 * summary; and a run in a child process, for tests that compare several runs. */
#ifndef PROTOSIM_TESTS_FIXTURE_H
#define PROTOSIM_TESTS_FIXTURE_H

#include <stddef.h>

#include "../sim/engine/htae.h"
#include "../sim/report/report.h"
#include "../strategies/compile/compile.h"
#include "../strategies/strategy.h"
#include "../topology/cluster.h"

typedef struct sim_fixture {
    strategy s;
    cluster c;
    compiled_plan p;
    htae_options o;     /* fixture_run's options: sim_bare_options unless the test changes them */
    htae_result r;      /* after fixture_run */
    report_summary sum; /* after fixture_run: run_summarize of p and r */
    int ran;            /* whether r holds a result (fixture_free frees it) */
} sim_fixture;

/* Load the strategy file at data-dir-relative strategy_rel and, unless cluster_rel is NULL (the
 * test loads f->c itself), the platform at cluster_rel (one SimGrid engine per test process);
 * asserts each step. Nothing is compiled: the test may change f->s first. */
void fixture_load(sim_fixture *f, const char *strategy_rel, const char *cluster_rel);
/* fixture_load, then fixture_compile with the defaults. */
void fixture_files(sim_fixture *f, const char *strategy_rel, const char *cluster_rel);
/* As fixture_files, the strategy given as `text` (sim_strategy_text); cluster_rel NULL compiles
 * on the cluster the test loaded into f->c beforehand. */
void fixture_text(sim_fixture *f, const char *text, const char *cluster_rel);
/* Compile f->s on f->c with `o` (NULL: the defaults) into f->p; asserts. */
void fixture_compile(sim_fixture *f, const compile_options *o);
/* Run f->p on f->c with f->o into f->r and summarize it into f->sum; asserts. */
void fixture_run(sim_fixture *f);
/* Each GPU's kernel time in the compiled graph's passes (its compute tasks but the optimizer
 * step) into busy[0 .. f->p.gpus). */
void fixture_pass_seconds(const sim_fixture *f, double *busy);
/* Free what the fixture holds but its cluster: the result once run, the plan, the strategy. For
 * a fixture compiled on another's cluster (f->c a copy of its handle: one platform a process). */
void fixture_free_plan(sim_fixture *f);
/* fixture_free_plan, and the cluster. */
void fixture_free(sim_fixture *f);

/* Run `child(arg, out)` in a child process and copy its `size` bytes of *out back: SimGrid runs
 * once per process, and these tests compare several runs. Fails the test if the child fails
 * (an assertion in it, or its exit status). */
void fixture_forked(void (*child)(const void *arg, void *out), const void *arg, void *out,
                    size_t size);

#endif
