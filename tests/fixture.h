/* fixture.h: the plan-level tests' setup and teardown in one call each: a strategy, the cluster
 * it runs on, the plan compiled from them and, once run, the executor's result. */
#ifndef PROTOSIM_TESTS_FIXTURE_H
#define PROTOSIM_TESTS_FIXTURE_H

#include "../sim/engine/htae.h"
#include "../strategies/compile/compile.h"
#include "../strategies/strategy.h"
#include "../topology/cluster.h"

typedef struct sim_fixture {
    strategy s;
    cluster c;
    compiled_plan p;
    htae_options o; /* fixture_run's options: sim_bare_options unless the test changes them */
    htae_result r;  /* after fixture_run */
    int ran;        /* whether r holds a result (fixture_free frees it) */
} sim_fixture;

/* Load the strategy file and the platform at data-dir-relative strategy_rel and cluster_rel
 * (one SimGrid engine per test process) and compile the plan; asserts each step. */
void fixture_files(sim_fixture *f, const char *strategy_rel, const char *cluster_rel);
/* As fixture_files, the strategy given as `text` (sim_strategy_text); cluster_rel NULL compiles
 * on the cluster the test loaded into f->c beforehand. */
void fixture_text(sim_fixture *f, const char *text, const char *cluster_rel);
/* Compile f->s on f->c with `o` (NULL: the defaults) into f->p; asserts. */
void fixture_compile(sim_fixture *f, const compile_options *o);
/* Run f->p on f->c with f->o into f->r; asserts. */
void fixture_run(sim_fixture *f);
/* Free what the fixture holds: the result once run, the plan, the cluster, the strategy. */
void fixture_free(sim_fixture *f);

#endif
