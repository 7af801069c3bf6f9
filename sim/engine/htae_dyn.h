/* htae_dyn.h: collectives that run alone on their links, from the start or from some point of
 * the run on, so that each may then be one timed wait (htae_coll_run_timed) with the time its
 * SimGrid tasks would take.
 *
 * A group's activities that may cross its links (every link its collectives and their
 * companion groups' may cross, htae_coll_visit_links) are the other groups' collectives and
 * the transfers (with their companion pairs) whose routes meet them: its foreign activities.
 * Once every one of them has ended, none can cross those links again, and the group's own
 * collectives follow one another on one stream: each of its collectives that starts then runs
 * alone. Counting the ends is all it takes; no reachability. A group with no foreign activity
 * at all is alone for the whole run. */
#ifndef PROTOSIM_HTAE_DYN_H
#define PROTOSIM_HTAE_DYN_H

#include <stdint.h>

#include <simgrid/host.h>

#include "htae_alone.h"
#include "htae_coll.h"

typedef struct htae_dyn {
    uint32_t n_groups;
    uint8_t *eligible;       /* [n_groups] its collectives may run timed once foreign ones ended */
    uint32_t *foreign;       /* [n_groups] foreign activities (a collective of a group counts once
                           per collective) */
    uint32_t *ended;         /* [n_groups] of those, ended so far */
    const uint32_t *t_class; /* borrowed htae_tclass.of: each transfer's class */
    uint32_t *t_first; /* [classes + 1] CSR into t_list: groups a transfer class is foreign to */
    uint32_t *t_list;
    uint32_t *g_first; /* [n_groups + 1] CSR into g_list: groups a group's collectives are
                           foreign to */
    uint32_t *g_list;
    /* Every link a group's collectives (any algorithm, their companion groups' too) or a
     * transfer (its companion pairs too) may cross, by address, with its one owner (the group,
     * or n_groups + the transfer class) or HTAE_DYN_OWNERS for two or more, or for a group whose
     * collectives are on more than one stream: one owner means no two activities cross it at
     * once (the owner's collectives follow one another on its stream). */
    sg_link_t *o_link;
    uint32_t *o_owner;
    size_t n_o;
} htae_dyn;

#define HTAE_DYN_OWNERS UINT32_MAX

/* Plan it for g's groups (tc: g's transfer classes, kept until htae_dyn_free). The all-to-alls of groups alone from the start leave a's lean list
 * (htae_alone_plan, which must have run): they run timed, not lean. */
void htae_dyn_plan(htae_dyn *d, htae_alone *a, const exec_graph *g, const htae_tclass *tc,
                   coll_group **groups, const sg_host_t *hosts);
/* Whether a collective of group gi starting now runs alone on its links to its end. */
int htae_dyn_now(const htae_dyn *d, uint32_t gi);
/* Whether group gi has no foreign activity at all: each of its collectives runs alone, whenever
 * and in whatever order the actors of one instant start it. */
int htae_dyn_always(const htae_dyn *d, uint32_t gi);
/* Whether no activity but one collective at a time of groups owners[0 .. n) may ever cross
 * `link` (a link no activity may cross is not one of theirs either: 0). */
int htae_dyn_link_theirs(const htae_dyn *d, sg_link_t link, const int32_t *owners, int n);
/* Transfer task t, or a collective of group gi, ended. */
void htae_dyn_transfer_ended(htae_dyn *d, uint32_t t);
void htae_dyn_collective_ended(htae_dyn *d, uint32_t gi);
void htae_dyn_free(htae_dyn *d);

#endif
