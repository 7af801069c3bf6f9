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
#include <simgrid/link.h>

#include "htae.h"
#include "htae_links.h"

typedef struct coll_group coll_group;

/* The plan of the group of `n` ranks (group order) whose hosts are hosts_by_rank[ranks[i]].
 * Constants come from *opt, or from the members' device specs when opt->device_constants is set
 * and the devices give them. */
coll_group *htae_coll_group_create(const cluster *c, const sg_host_t *hosts_by_rank,
                                   const int32_t *ranks, int n, const htae_options *opt);
void htae_coll_group_free(coll_group *gp);
/* The graph group the plan is of (its flows' owner, htae_dyn_link_theirs). */
void htae_coll_group_set_id(coll_group *gp, int32_t id);

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
    uint32_t *timed; /* collectives run as timed waits */
    int timed_now;   /* this one runs alone on its links to its end (htae_dyn_now): timed */
    struct htae_unit_cache *units; /* merged companion patterns' unit times (htae_timed.c) */
    const uint8_t *drop_group;     /* companion groups left out of merged tasks (htae_prune.h)
                                      when they run as one SimGrid task; NULL: none */
    struct htae_solo *solo;        /* acts timed until another comes (htae_solo.h); NULL: off */
    /* Whether no activity but those of groups owners[0 .. n) may ever cross a link
     * (htae_dyn_link_theirs over theirs_arg); NULL: none known */
    int (*theirs)(const void *arg, sg_link_t link, const int32_t *owners, int n);
    const void *theirs_arg;
} coll_run_ctx;

/* The merged companion patterns' unit-time cache of one run (coll_run_ctx.units). */
struct htae_unit_cache *htae_unit_cache_create(void);
void htae_unit_cache_free(struct htae_unit_cache *c);

/* The least wait before its SimGrid tasks start that any collective on the group has (its
 * latency terms less the worst route latency SimGrid charges itself): the floor of
 * htae_solo_create. INFINITY for a group of one. */
double htae_coll_least_wait(coll_group *gp);

/* Call visit on every link of every flow a collective of `kind` may run on the group (any
 * algorithm it could choose; matrix not NULL: any all-to-all-v, every member pair), a link once
 * per flow crossing it. */
void htae_coll_visit_links(coll_group *gp, coll_kind kind, const double *matrix,
                           void (*visit)(sg_link_t link, void *arg), void *arg);

/* Prepare the group's balanced all-to-all to run lean: one SimGrid task of fewer flows that
 * SimGrid cannot tell from the full one while no other traffic crosses the group's links that
 * shared(link, arg) calls private. A private link on one flow only constrains the task by its
 * bandwidth over that flow's bytes, so of private links alike in both (and in nothing else) one
 * is enough: flows whose links are all private and have such a twin among the kept flows are
 * dropped; flows crossing a shared link stay, and so does one with the worst route latency.
 * Returns 1 if the lean task has fewer flows. */
int htae_coll_lean(coll_group *gp, int (*shared)(sg_link_t link, void *arg), void *arg);

/* Run one collective from inside an actor: wait out its latency terms, then move its flows;
 * returns when the last flow ended. matrix: an all-to-all-v's bytes per member pair
 * (graph_collective.matrix), else NULL. lean: a balanced all-to-all runs as its lean task
 * (htae_coll_lean), which the caller has proven alone on the group's private links; the link
 * statistics still count every flow. */
void htae_coll_run(coll_group *gp, coll_kind kind, double bytes, const double *matrix, int lean,
                   coll_run_ctx *cx);
/* The same collective over groups[first] and its companion groups groups[comp[0 .. n)]
 * (graph_set_coll_companions), each with its own algorithm and latency terms, as one SimGrid
 * task per block of hosts: every flow of every group moves at the pace of its block's slowest.
 * All groups' hosts in one task when they fit (HTAE_PTASK_MAX_HOSTS), else each group's own
 * blocks. */
void htae_coll_run_with(coll_group *const *groups, int first, const int32_t *comp, int n,
                        coll_kind kind, double bytes, coll_run_ctx *cx);

#endif
