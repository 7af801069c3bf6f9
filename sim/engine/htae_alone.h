/* htae_alone.h: which all-to-alls of folded expert groups run alone on their stand-ins' links,
 * so that they may run as lean SimGrid tasks (htae_coll_lean) with the very same timings. */
#ifndef PROTOSIM_HTAE_ALONE_H
#define PROTOSIM_HTAE_ALONE_H

#include <stddef.h>
#include <stdint.h>

#include <simgrid/host.h>

#include "htae_coll.h"

/* Transfers that cross the same links: the same source, destination and companion pairs
 * (graph_set_companions). The planners below walk each class's routes once, not each
 * transfer's: a folded plan repeats a few such classes across every micro-batch. */
typedef struct htae_tclass {
    uint32_t n;     /* classes */
    uint32_t *of;   /* [n_tasks]: a transfer's class, UINT32_MAX for other tasks */
    uint32_t *rep;  /* [n]: the first transfer of each class */
    uint32_t *size; /* [n]: how many transfers it holds */
} htae_tclass;

void htae_tclass_make(htae_tclass *tc, const exec_graph *g);
void htae_tclass_free(htae_tclass *tc);

/* A set of links: added to one by one (htae_link_set_add, a visit callback), sorted once, then
 * asked (htae_link_set_has, a `shared` callback). */
typedef struct htae_link_set {
    sg_link_t *links;
    size_t n, cap;
} htae_link_set;

void htae_link_set_add(sg_link_t link, void *set);
void htae_link_set_sort(htae_link_set *s);
int htae_link_set_has(sg_link_t link, void *set);

/* Which all-to-alls may run lean, and when. */
typedef struct htae_alone {
    uint8_t *lean;           /* [n_colls] 1: its group has a lean task (htae_coll_lean) */
    uint32_t *first, *count; /* [n_colls]: done[first .. first + count) must have ended before */
    uint32_t *done;
} htae_alone;

/* For every group with stand-ins whose collectives are all balanced all-to-alls on one stream:
 * the links no other traffic may cross while one runs are those of no transfer and of no other
 * group's collectives, leaving out the groups that have one of its stand-ins as a member (data
 * and expert-data parallelism). Their collectives must each chain to the next in the graph (a
 * dependency path, counting that a collective's members end together); then an all-to-all runs
 * alone on those links once every one of them that does not follow it in the graph has ended:
 * the last such of each group is listed in done (the chain makes the earlier ones end first).
 * Prepares each such group's lean task (htae_coll_lean). */
void htae_alone_plan(htae_alone *a, const exec_graph *g, const htae_tclass *tc, coll_group **groups,
                     const sg_host_t *hosts);
/* Whether collective c may run lean now, coll_done[] saying which collectives have ended. */
int htae_alone_now(const htae_alone *a, uint32_t c, const uint8_t *coll_done);
void htae_alone_free(htae_alone *a);

#endif
