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
/* Whether the merged pattern of a companion collective runs as one SimGrid task (at most
 * HTAE_PTASK_MAX_HOSTS hosts in all), so that alone on its links it takes that task's time;
 * sets p->unit_s, cached in cx->units under key (the groups and their algorithms). */
int htae_merged_alone(coll_group *merged, pattern *p, uint64_t key, coll_run_ctx *cx);

/* A pattern SimGrid would run as several tasks (htae_blocks_of: a group, or merged companion
 * groups, over HTAE_PTASK_MAX_HOSTS hosts; span as run_pattern's), alone on its links: timed
 * block by block when their lone rates fit together (htae_blocks_alone, cached in cx->units:
 * under *merged_key, htae_merged_alone's key, for merged companion groups; under gp's own
 * pattern p when merged_key is NULL), each block's flows ending in the link statistics when its
 * task would; 0 (and nothing done) when they do not, or the move is empty. */
int htae_coll_run_blocks_timed(coll_group *gp, pattern *p, double scale, double latency, int span,
                               const uint64_t *merged_key, coll_run_ctx *cx);

/* Pattern p as an act of htae_solo (htae_timed.c), its tasks starting `wait` from now, its
 * blocks run_pattern's (span as there), with `ghost`'s edges in the link statistics: 1 if it ran
 * timed (may_time and alone on its links; turned into tasks if another came), else 0 and held
 * as tasks under *real until htae_solo_real_end (-1 without solo). Its shape is cached under
 * *key (NULL: built for this call). */
int htae_coll_solo(coll_group *gp, pattern *p, const pattern *ghost, double scale, double wait,
                   int span, const uint64_t *key, int may_time, coll_run_ctx *cx, int *real);

/* Run the balanced all-to-all as its lean task (htae_lean.c). */
void htae_coll_run_lean(coll_group *gp, double scale, double latency, coll_run_ctx *cx);

#endif
