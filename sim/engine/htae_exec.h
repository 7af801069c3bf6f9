/* htae_exec.h: the executor's state (sim/engine/htae.c), shared with the steps that set it up
 * and take it down (htae_state.c). Not for use outside sim/engine. */
#ifndef PROTOSIM_HTAE_EXEC_H
#define PROTOSIM_HTAE_EXEC_H

#include <stdint.h>

#include <simgrid/semaphore.h>

#include "htae.h"
#include "htae_alone.h"
#include "htae_coll.h"
#include "htae_dyn.h"
#include "htae_links.h"
#include "htae_prune.h"

struct exec_state;

typedef struct stream_state {
    struct exec_state *x;
    int rank, stream;
    int computing;         /* a GPU compute task is mid-run on this stream */
    uint32_t first, count; /* into g->stream_tasks */
    uint32_t next;         /* its next task not yet started (index from first) */
    int64_t waiting_task;  /* task whose predecessors this actor waits for, or -1 */
    int64_t waiting_coll;  /* collective this actor waits to finish, or -1 */
    int waiting_any;       /* a stream with floating tasks waits for any of its tasks */
    sg_sem_t sem;
} stream_state;

/* A GPU's host thread: walks the rank's HOST_ISSUE tasks in program order. Its own clock runs
 * ahead of simulated time (issuing never waits for the GPU), so it only blocks, as an actor,
 * where the program synchronizes (HOST_WAIT). */
typedef struct host_state {
    struct exec_state *x;
    uint32_t *tasks, count;
    int64_t waiting_deps; /* HOST_WAIT task whose predecessors it waits for, or -1 */
    sg_sem_t sem;
} host_state;

typedef struct exec_state {
    const exec_graph *g;
    htae_options opt;
    sg_host_t *hosts;       /* per rank */
    uint32_t *pending;      /* per task: predecessors not yet done */
    uint32_t *coll_arrived; /* per collective */
    uint8_t *coll_done;
    int *comm_active;      /* per rank: communication streams with a kernel in flight */
    int *comm_on_stream;   /* [n_ranks * g->n_streams]: communications in flight per stream */
    double *sms;           /* per rank: the GPU's SMs */
    int *computing;        /* per rank: GPU streams with a compute task mid-run */
    stream_state *streams; /* [n_ranks * g->n_streams] */
    host_state *host;      /* per rank */
    double *ready;         /* per HOST_ISSUE task: earliest GPU start (host clock); a compute
                               task's issue start, so it ends no earlier than ready + span */
    double *pred_end;      /* per task, only for a graph with lags (graph_set_lag): the latest
                              end of its explicit predecessors */
    coll_group **groups;   /* per graph group: its collectives' algorithms and flows */
    htae_tclass tclass;    /* transfers by the links they cross (the planners' unit) */
    htae_prune prune;      /* folded flows left out of SimGrid's tasks (htae_prune.h) */
    htae_alone alone;      /* which all-to-alls may run as lean tasks, and when */
    htae_dyn dyn;          /* which collectives run alone from some point on (timed) */
    struct htae_unit_cache *units; /* merged companion patterns' unit times */
    struct htae_solo *solo;        /* acts timed until another comes; NULL: off */
    struct solo_shape **tshape;    /* [tclass.n]: each transfer class's shape, when met */
    htae_result *res;
    htae_links *links; /* per-link bytes and busy time */
    uint64_t activities;
    uint32_t lean_colls;
    uint32_t timed_colls;
    uint32_t done_tasks;
    uint32_t inlined_colls;
} exec_state;

/* The steps of htae_run around the simulation (htae_state.c). */
int htae_plan_groups(exec_state *x, const cluster *c, ps_error *err);
int htae_lookup_hosts(const exec_graph *g, const cluster *c, sg_host_t **out, ps_error *err);
void htae_state_init(exec_state *x, const exec_graph *g, const htae_options *opt, sg_host_t *hosts,
                     htae_result *out);
int htae_collect_result(exec_state *x, ps_error *err);
void htae_shift_result(htae_result *out, uint32_t n_tasks, double origin);
void htae_state_free(exec_state *x);

#endif
