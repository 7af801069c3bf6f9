/* sim_util.h: helpers the executor-level unit tests share (test_htae, test_report): the data
 * directory, loading a platform, running a graph with every software overhead off. */
#ifndef PROTOSIM_TEST_SIM_UTIL_H
#define PROTOSIM_TEST_SIM_UTIL_H

#include <check.h>
#include <math.h>

#include "../sim/base/graph.h"
#include "../sim/htae.h"
#include "../topology/cluster.h"

#define GB 1e9

/* |got - want| <= rel * |want|, printing both. */
#define ck_close(got, want, rel)                                                                   \
    ck_assert_msg(fabs((got) - (want)) <= (rel)*fabs(want), "got %.12g, want %.12g",               \
                  (double)(got), (double)(want))

/* $PROTOSIM_DATA_DIR (the source tree under meson test), else ".". */
const char *sim_data_dir(void);
/* Start the engine and load the platform at data-dir-relative path `rel` (asserts success). */
void sim_load(const char *rel, cluster *c);
/* Options with every software overhead off, so only the platform shapes the timings. */
htae_options sim_bare_options(void);
/* Finalize g and run it (asserts success). */
void sim_run(htae_graph *g, cluster *c, const htae_options *o, htae_result *r);

#endif
