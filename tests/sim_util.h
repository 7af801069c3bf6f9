/* sim_util.h: helpers the executor-level unit tests share (test_htae, test_report): loading a
 * platform, running a graph with every software overhead off. */
#ifndef PROTOSIM_TEST_SIM_UTIL_H
#define PROTOSIM_TEST_SIM_UTIL_H

#include <check.h>
#include <math.h>

#include "../sim/base/graph.h"
#include "../sim/base/vocab.h"
#include "../sim/engine/htae.h"
#include "../strategies/strategy.h"
#include "../topology/cluster.h"

#define GB 1e9

/* |got - want| <= rel * |want|, printing both. */
#define ck_close(got, want, rel)                                                                   \
    ck_assert_msg(fabs((got) - (want)) <= (rel)*fabs(want), "got %.12g, want %.12g",               \
                  (double)(got), (double)(want))

/* Start the engine and load the platform at data-dir-relative path `rel` (asserts success). */
void sim_load(const char *rel, cluster *c);
/* topology/clusters/dgx4.xml, loaded on the first call of the test process (SimGrid holds one
 * platform per process; each test runs in its own). */
cluster *sim_dgx4(void);
/* A temporary file (name ending in `suffix`, "" for none) holding `text`; the caller unlinks
 * and frees the path. */
char *sim_temp_file(const char *suffix, const char *text);
/* strategy_load of the data-dir-relative file `rel` with the data directory (asserts success). */
void sim_strategy_load(const char *rel, strategy *s);
/* strategy_load of a file holding `text` (removed after) with the data directory, err cleared
 * first; returns strategy_load's code. */
int sim_strategy_text(const char *text, strategy *s, ps_error *err);
/* sim_strategy_text of `text` fails with an input error at `field`, on line `line`, its message
 * holding `needle`. */
void sim_expect_strategy_error(const char *text, const char *field, int line, const char *needle);
/* Start the engine and cluster_load a file holding `xml` (an XML platform or a cluster
 * description; removed after), err cleared first; returns cluster_load's code. */
int sim_cluster_text(const char *xml, cluster *c, ps_error *err);
/* Start the engine and load the cluster description `protosim cluster KIND` writes with o (its
 * default form; asserts). */
void sim_load_generated(const char *kind, cluster_gen_opts o, cluster *c);
/* Options with every software overhead off, so only the platform shapes the timings. */
htae_options sim_bare_options(void);
/* m nodes of k GPUs, as sim_load_two_nodes (nvl_lat[m], nic_lat[k]); every pair of nodes
 * joined over the one fabric link. */
void sim_load_nodes(int m, int k, const char *const *nvl_lat, const char *const *nic_lat,
                    cluster *c);
/* The result's entry for SimGrid link `name` (fails the test if absent). */
const htae_link_stat *sim_find_link(const htae_result *r, const char *name);
/* Two nodes of k GPUs, ranks node * k + j. Each GPU has its own NVLink port to its node's
 * switch (100 GB/s per direction, latency nvl_lat[node]: a route inside a node crosses two
 * ports) and its own NIC to a 1000 GB/s fabric (10 GB/s per direction, latency nic_lat[j]: a
 * route between the nodes crosses two NICs). No other latency. */
void sim_load_two_nodes(int k, const char *const nvl_lat[2], const char *const *nic_lat,
                        cluster *c);
/* Two nodes of two GPUs, NVLink without latency; the NICs of local GPU 0 (ranks 0, 2) have
 * none, those of local GPU 1 (ranks 1, 3) 0.5 ms: the route between ranks 1 and 3 has 1 ms,
 * between 1 and 2 (or 0 and 3) 0.5 ms. */
void sim_load_two_by_two(cluster *c);
/* Finalize g and run it (asserts success). */
void sim_run(exec_graph *g, cluster *c, const htae_options *o, htae_result *r);
/* A ring all-reduce of S bytes over p GPUs of topology/clusters/dgx4.xml (NVSwitch ports of
 * 300 GB/s at o's protocol efficiency, 0.7 us each, two per route; docs/collectives.md), nothing
 * beside it: its latency terms (launch, 2 (p-1) steps) and its bandwidth term 2 (p-1)/p S / B. */
void sim_dgx4_allreduce(const htae_options *o, double S, double p, double *latency,
                        double *bandwidth);

/* The route from host a to host b is exactly the SimGrid links want[] (NULL-terminated, any
 * order; a name ending in _UP or _DOWN is one direction of a SPLITDUPLEX link). */
void sim_expect_route(const char *a, const char *b, const char *const *want);

#endif
