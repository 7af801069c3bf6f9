/* htae_coll.h: collectives as NCCL runs them. Each communicator (graph group) gets, once, the
 * flows of every algorithm NCCL could use on it: rings (one channel per GPU of a node across
 * nodes, searched rings inside one node), the double binary tree across nodes, NVLink SHARP
 * (NVLS) inside one NVSwitch node, and all-to-all. A collective picks its algorithm by its
 * predicted time, as NCCL's tuner does (latency + size / bandwidth), unless one is forced, and
 * runs as one SimGrid parallel task whose bytes matrix holds all its flows: the algorithm moves
 * at the pace of its busiest link, sharing every link with the rest of the traffic. */
#ifndef PROTOSIM_HTAE_COLL_H
#define PROTOSIM_HTAE_COLL_H

#include <stdint.h>

#include <simgrid/host.h>

#include "htae.h"
#include "htae_links.h"

typedef struct coll_group coll_group;

/* The plan of the group of `n` ranks (group order) whose hosts are hosts_by_rank[ranks[i]].
 * Constants come from *opt, or from the members' device specs when opt->device_constants is set
 * and the devices give them. */
coll_group *htae_coll_group_create(const cluster *c, const sg_host_t *hosts_by_rank,
                                   const int32_t *ranks, int n, const htae_options *opt);
void htae_coll_group_free(coll_group *gp);

/* 0 if `algo` can run a collective of `kind` on the group, else a PS_EINPUT error saying why
 * (NVLS needs one NVSwitch node of NVLS-capable GPUs, tree members on two nodes or more, ...).
 * COLL_ALGO_AUTO is always available. */
int htae_coll_check(const coll_group *gp, coll_kind kind, coll_algo algo, ps_error *err);

/* The algorithm a collective of `kind` and `bytes` uses: opt->algo where it applies to `kind`
 * (a forced algorithm applies to all-reduce; the other kinds have one algorithm each), else the
 * one with the least predicted time alone on the platform. */
coll_algo htae_coll_choose(coll_group *gp, coll_kind kind, double bytes, const htae_options *opt);

/* Predicted time of the collective alone on the platform with algorithm `algo` (available for
 * the group): latency terms + bytes * the busiest link's load per byte. The simulation of an
 * isolated collective reproduces it; selection compares these. */
double htae_coll_estimate(coll_group *gp, coll_kind kind, coll_algo algo, double bytes,
                          const htae_options *opt);

/* What the executor lends a running collective. */
typedef struct coll_run_ctx {
    const htae_options *opt;
    htae_links *links;
    uint64_t *activities;
} coll_run_ctx;

/* Run one collective from inside an actor: wait out its latency terms, then move its flows;
 * returns when the last flow ended. matrix: an all-to-all-v's bytes per member pair
 * (htae_collective.matrix), else NULL. */
void htae_coll_run(coll_group *gp, coll_kind kind, double bytes, const double *matrix,
                   coll_run_ctx *cx);

#endif
