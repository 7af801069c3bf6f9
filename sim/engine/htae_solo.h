/* htae_solo.h: transfers and collectives timed while they are alone on their links, turned into
 * the SimGrid tasks they would have been, over the bytes they have left, when another comes
 * (docs/design-notes.md, "Timed until another comes").
 *
 * An act (a transfer with its companion pairs, or a collective's pattern) runs as one SimGrid
 * task per block of hosts; ptask_L07 charges each its worst route latency, then moves its flows
 * at the rate of its busiest link. Alone on its links, a block therefore ends lat + scale x unit
 * after its task starts, and its flows have moved in proportion to the time in between. An act
 * whose links no other act holds over its lone lifetime runs as timed waits. An act that comes
 * later and would share one of its links, from the instant its own bytes start to move, turns
 * it: the timed act starts, at once, the tasks of its blocks over the share of their bytes not
 * yet moved (SimGrid charges them their latency again, so they are started that latency before
 * the instant from which their bytes move, which is always still to come: below). From then on
 * SimGrid shares the links, exactly as if the act had been its tasks all along.
 *
 * The instant: every act starts its tasks `wait` after it is issued (a launch, the collective's
 * latency terms), so its bytes move no earlier than wait + its own latency after it is issued.
 * An act is timed only if its latency is at most the least such wait any act of the run has
 * (the floor, htae_solo_create): the act that turns it is issued at once as the turn is made,
 * and moves no bytes before floor from then, by when the turned act's tasks have run their
 * latency. */
#ifndef PROTOSIM_HTAE_SOLO_H
#define PROTOSIM_HTAE_SOLO_H

#include <stdint.h>

#include <simgrid/exec.h>
#include <simgrid/host.h>

#include "htae_links.h"

typedef struct htae_solo htae_solo;

/* An act's blocks as they run alone: block b's worst route latency (what ptask_L07 charges
 * first) and unit time (its busiest link's load per unit of scale over the bandwidth); the
 * links of all of them (htae_links indices, each once). */
typedef struct solo_shape {
    int n;
    double *lat, *unit;
    int *ids, n_ids;    /* every block's */
    int *bfirst, *bids; /* block b's: bids[bfirst[b] .. bfirst[b + 1]) */
    double min_lat, max_lat;
    int timeable; /* every link shared (a fatpipe loads its largest flow, not their sum), and the
                     blocks' lone rates fit on every link together (htae_blocks.h) */
    void *aux;    /* the caller's, freed with it by aux_free */
    void (*aux_free)(void *);
} solo_shape;

/* The shape of an act whose block b moves w[i] bytes per unit of scale from src[i] to dst[i],
 * i in [first[b], first[b + 1]) (distinct hosts; w <= 0: no flow). */
solo_shape *htae_solo_shape(htae_links *L, int n_blocks, const int *first, const sg_host_t *src,
                            const sg_host_t *dst, const double *w);
void htae_solo_shape_free(solo_shape *sh);

/* How the caller runs the act's blocks. */
typedef struct solo_ops {
    void (*begin)(void *ctx, int block, double now);       /* its flows start (link statistics) */
    sg_exec_t (*task)(void *ctx, int block, double share); /* its task over that share of its
                                                             bytes, started */
    void (*end)(void *ctx, int block, double now);         /* its flows end (link statistics) */
    void *ctx;
} solo_ops;

/* The shape cached under `key`, NULL if none; caching one hands it over (freed with s). */
solo_shape *htae_solo_cached(const htae_solo *s, uint64_t key);
void htae_solo_cache(htae_solo *s, uint64_t key, solo_shape *sh);

/* floor_s: the least wait any act of the run has (0: nothing is timed). */
htae_solo *htae_solo_create(htae_links *L, double floor_s);
void htae_solo_free(htae_solo *s);

/* Issue an act whose blocks' tasks start `wait` from now and move scale x their bytes (called
 * from the actor that runs it). 1: it ran timed (begun, turned if another came, ended); 0: it
 * must run as its tasks, as before: it is held on its links until htae_solo_real_end(s, *real),
 * which the caller calls once they have all ended. */
int htae_solo_run(htae_solo *s, const solo_shape *sh, double wait, double scale,
                  const solo_ops *ops, int *real);
void htae_solo_real_end(htae_solo *s, int real);

/* Acts run timed, and of those, turned into tasks; flows a turned task left out (lean). */
void htae_solo_counts(const htae_solo *s, uint32_t *timed, uint32_t *turned, uint64_t *left_out);
void htae_solo_left_out(htae_solo *s, uint32_t flows);

#endif
