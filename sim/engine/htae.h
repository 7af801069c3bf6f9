/* htae.h: the hierarchical topology-aware executor: runs an execution graph on the SimGrid
 * platform of a cluster, one actor per GPU stream, and records when every task ran. */
#ifndef PROTOSIM_HTAE_H
#define PROTOSIM_HTAE_H

#include <stdint.h>

#include "../../topology/cluster.h"
#include "../base/error.h"
#include "../base/graph.h"

/* NCCL's collective algorithms (NCCL_ALGO). AUTO: chosen per collective by predicted time, as
 * NCCL's tuner does; DIRECT: all-to-all's pairwise sends. */
typedef enum {
    COLL_ALGO_AUTO,
    COLL_ALGO_RING,
    COLL_ALGO_TREE,
    COLL_ALGO_NVLS,
    COLL_ALGO_DIRECT,
    COLL_ALGO_COUNT
} coll_algo;
extern const enum_names coll_algo_names;

/* Executor constants that are not properties of the platform. */
typedef struct htae_options {
    double overlap_slowdown;    /* >= 0: compute slows by this fixed fraction while its GPU
                                   communicates; < 0 (the default): by the SMs the running
                                   communication kernels hold (comm_sms each) */
    double comm_sms;            /* SMs one running communication kernel holds on its GPU
                                   (NCCL's channels, one thread block each) */
    double coll_launch_s;       /* fixed cost of starting one collective (NCCL kernel launch) */
    double coll_step_s;         /* per algorithm step (ring hop) software/protocol latency */
    double coll_net_step_s;     /* more per step that crosses nodes (NCCL's proxy thread, RDMA
                                   completion and flush) */
    double p2p_launch_s;        /* fixed cost of one point-to-point transfer */
    double protocol_efficiency; /* payload share of intra-node (NVLink, PCIe) link bandwidth
                                   for collectives, in (0, 1] */
    double net_efficiency;      /* payload share of network (NIC, fabric) bandwidth, (0, 1] */
    double nvls_efficiency;     /* payload share of NVLink port bandwidth under NVLS, (0, 1] */
    double nvls_latency_s;      /* NVLS's fixed cost beyond the launch (multicast setup) */
    coll_algo algo;             /* all-reduce algorithm; COLL_ALGO_AUTO: as NCCL chooses */
    int device_constants;       /* 1: a device's own collective constants (devices.yaml) replace
                                   coll_launch_s, coll_step_s, protocol_efficiency and
                                   nvls_efficiency for groups of that device */
    int timed_alone;            /* 1 (the default): collectives that provably run alone on
                                   their links (from the start, or once every other activity
                                   that may cross them ended) are timed waits of the time
                                   SimGrid would give them (htae_dyn.h); 0: SimGrid tasks */
    int inline_collectives;     /* 1 (the default): a timed collective of one tasked member
                                   whose group nothing else ever crosses, released by a compute
                                   task whose stream's next task waits for it (or for the ones
                                   right after it on its stream), is run by that compute
                                   stream's actor: the same times without the two actors'
                                   hand-over; 0: by its own stream's actor */
    int timed_solo;             /* 1 (the default): a transfer or collective alone on its links
                                   over its lone lifetime is a timed wait, turned into its
                                   SimGrid tasks over the bytes it has left when another comes
                                   (htae_solo.h): the same times; 0: SimGrid tasks */
    /* Link counters (htae_link_stat.rate): NULL records none (the default); else [n_ranks],
     * non-zero for the GPUs whose links are counted: every link on a route between such a GPU
     * and a GPU it shares a group or a transfer with (all links when every GPU is listed).
     * Memory: 24 bytes per (flow, counted link). */
    const unsigned char *counter_ranks;
    /* Snapshots (sim/run/steady.c): NULL takes none (the default); else [n_tasks], non-zero for
     * the tasks at whose start every link's bytes and busy time so far are recorded
     * (htae_result.snap_*); the host's issue times are then kept too (htae_result.ready). */
    const unsigned char *snapshot_tasks;
    int keep_ready; /* 1: keep the host's issue times (htae_result.ready) without snapshots */
} htae_options;

void htae_default_options(htae_options *o);

/* A link counter's change point: from t on, until the next point, the flows on the link move
 * `rate` bytes/s in all. Each flow contributes its own average, bytes / (end - t0), over
 * [t0, end), t0 being its start plus its parallel task's latency (SimGrid's ptask_L07 moves no
 * bytes before that). The counter's integral over any interval holding whole flows is exactly
 * the bytes they carried; pointwise it is the sum of per-flow averages, not SimGrid's
 * instantaneous share: while flows whose rates changed over their lives overlap, it can read
 * above or below the link's momentary throughput (even above its capacity). */
typedef struct htae_rate_point {
    double t, rate; /* simulated seconds, bytes/s */
} htae_rate_point;

/* One SimGrid link's share of the simulated iteration. Split-duplex links are two SimGrid links
 * (<id>_UP, <id>_DOWN), each its own entry; a shared link is one entry, direction "both". */
typedef struct htae_link_stat {
    char *name;            /* the SimGrid link's name */
    const char *direction; /* "up", "down" or "both" (static) */
    double bytes;          /* bytes of every flow whose route crosses the link */
    double busy_s;         /* simulated seconds with at least one flow on the link */
    htae_rate_point *rate; /* [n_rate] its counter (htae_options.counter_ranks), time order,
                            * the last one 0; NULL when not counted */
    int n_rate;
    int index; /* the run's own index of the link (snapshots' order before sorting) */
} htae_link_stat;

/* qsort order of htae_link_stat: busiest first (busy time, then bytes, then name). */
int htae_link_stat_cmp(const void *pa, const void *pb);

typedef struct htae_result {
    double makespan;        /* simulated seconds until the last task ended */
    double *start, *end;    /* [n_tasks] simulated start and end of each task (all times of a
                              result count from its run's start, however many ran before) */
    uint64_t activities;    /* SimGrid activities run (executions and flows) */
    uint32_t lean_colls;    /* all-to-alls run as lean tasks, alone on their private links
                              (htae_alone.h); the same timings as their full tasks */
    uint32_t timed_colls;   /* collectives run as timed waits, alone on their links
                              (htae_dyn.h); the same timings as their SimGrid tasks */
    uint32_t inlined_colls; /* of those, run by a compute stream's actor
                               (htae_options.inline_collectives) */
    uint32_t solo_acts;     /* transfers and collectives timed while alone on their links
                              (htae_solo.h); the same timings as their SimGrid tasks */
    uint32_t solo_turned;   /* of those, turned into tasks when another came */
    uint64_t solo_left_out; /* flows a turned collective's task left out (its lean task) */
    uint32_t pruned;        /* companion groups and pairs left out of SimGrid's tasks
                              (htae_prune.h; the same times, fewer flows) */
    double wall_s;          /* host seconds spent in the simulation */
    htae_link_stat *links;  /* [n_links] links that carried bytes, busiest first */
    int n_links;
    /* With htae_options.snapshot_tasks (ready: or keep_ready), else NULL and 0: */
    double *ready;  /* [n_tasks] when the host had issued each HOST_ISSUE task (others 0) */
    int n_snaps;    /* snapshots, in the order taken */
    double *snap_t; /* [n_snaps] their simulated times */
    /* [n_snaps x n_links]: link j of links[] at snapshot k, [k * n_links + j]: the bytes of the
     * flows started so far, and the time so far with a flow on it */
    double *snap_bytes, *snap_busy;
} htae_result;

/* Run `g` (finalized) on the cluster's platform, loaded by cluster_load after
 * cluster_engine_start in this process. A run after a successful one in the same process gives
 * what it would give in a process of its own (SimGrid's clock is put back to 0 first,
 * htae_clock_restart); after a failed one, run no more. On failure (a host missing from the
 * platform, a run that stalls) *out holds nothing to free; htae_result_free on it is harmless.
 * Options, when given, must be finite and non-negative, the efficiencies in (0, 1] (asserted);
 * NULL takes htae_default_options. A forced algorithm (opt->algo) that cannot run one of the
 * graph's all-reduces is a PS_EINPUT error before anything runs. */
int htae_run(const exec_graph *g, const cluster *c, const htae_options *opt, htae_result *out,
             ps_error *err);
void htae_result_free(htae_result *r);

/* Put SimGrid's clock back to 0 between two runs in one process (no actor, timer or activity
 * left), so that a run gives exactly what it gives in a process of its own: a second run from
 * the first's end time does not (measured: a 64-GPU plan's iteration time moved 0.3% after
 * another plan's run; events close in time order differently at another origin). SimGrid 3.32
 * has no call for it: its clock is a static member of its engine's implementation class, which
 * libsimgrid exports without declaring it in an installed header; it is found by its symbol
 * name and written only if it holds simgrid_get_clock()'s value. Returns 1 when the clock is
 * 0, 0 when it could not be reset (then the run counts from its start, htae_run). */
int htae_clock_restart(void);

/* Time of a collective alone on the platform, as the executor would simulate it: the model the
 * tests check against 2(p-1)/p * S / B + latency terms. Exposed for tests and docs. */
double htae_ring_latency_terms(const htae_options *o, coll_kind kind, int members,
                               double route_latency);

/* Like nccl-tests: simulate collectives of each size in `sizes`, one after another, over the
 * first `gpus` ranks of the cluster, and write each one's duration to times[] and, when algos
 * is not NULL, the algorithm each one used to algos[]. */
int htae_time_collectives(const cluster *c, coll_kind kind, int gpus, const double *sizes,
                          int n_sizes, const htae_options *opt, double *times, coll_algo *algos,
                          ps_error *err);

#endif
