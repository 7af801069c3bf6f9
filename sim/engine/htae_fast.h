/* htae_fast.h: a pattern run otherwise than as one SimGrid task of all its flows, with the same
 * timings where it may: a timed wait (htae_timed.c) or the all-to-all's lean task (htae_lean.c).
 * htae_coll.c chooses and calls them; they call down to htae_pattern.c, never back. */
#ifndef PROTOSIM_HTAE_FAST_H
#define PROTOSIM_HTAE_FAST_H

#include <stdint.h>

#include "htae_pattern.h"

/* The pattern's SimGrid task replaced by a timed wait of the time it would take alone on its
 * links (htae_timed.c): its worst route latency, then scale x its unit time; the flows count in
 * the link statistics. */
void htae_coll_run_timed(coll_group *gp, pattern *p, double scale, double latency,
                         coll_run_ctx *cx);
/* Whether the merged pattern of a companion collective (groups of equal size, one SimGrid
 * task per group when more than HTAE_PTASK_MAX_HOSTS in all) takes, alone on its links, the
 * time of one task over all of it: always when it is one task; else when every group alone
 * reaches the merged bottleneck (u_min, the least of the groups' unit times, equals the
 * merged unit time), so that each group's bottleneck is its own and the max-min rates are
 * all the merged one. Sets p->unit_s; key identifies the groups and their algorithms for
 * cx->units. */
int htae_merged_alone(coll_group *merged, pattern *p, double u_min, uint64_t key, coll_run_ctx *cx);

/* Run the balanced all-to-all as its lean task (htae_lean.c). */
void htae_coll_run_lean(coll_group *gp, double scale, double latency, coll_run_ctx *cx);

#endif
