/* htae_prune.h: flows a folded run may leave out of its SimGrid tasks without changing any
 * time (docs/design-notes.md, "Folding inside a replica").
 *
 * Under inner folding every companion group and companion pair is a shifted copy of traffic the
 * same task already carries (graph_set_group_invariant, graph_set_pair_set_invariant), and the
 * shifts map every rank that does not compute onto one that does. A flow between two ranks that
 * compute nothing, every link of which only invariant traffic crosses (no other group's
 * collective, no collective of an algorithm whose loads a shift would move: only rings and
 * direct patterns), loads its links exactly as its image loads the image links at computing
 * twins, where nothing is left out: those constraints bound the same tasks as tightly, so the
 * sharing solver gives every task the same rate without it. Its bytes still count in the link
 * figures. A pair is kept when leaving it out would lower its task's worst route latency. */
#ifndef PROTOSIM_HTAE_PRUNE_H
#define PROTOSIM_HTAE_PRUNE_H

#include <stdint.h>

#include <simgrid/host.h>

#include "htae.h"
#include "htae_alone.h"
#include "htae_coll.h"

typedef struct htae_prune {
    uint8_t *drop_group;    /* [n_groups] or NULL: a companion group left out of merged tasks */
    uint8_t *drop_pair;     /* [n_pair_ranks / 2] or NULL: a companion pair left out */
    uint32_t groups, pairs; /* how many of each (for the record) */
} htae_prune;

/* Plan it for g (nothing unless g marks invariant groups or pair sets). */
void htae_prune_plan(htae_prune *pr, const exec_graph *g, const htae_tclass *tc,
                     coll_group **groups, const sg_host_t *hosts, const htae_options *opt);
void htae_prune_free(htae_prune *pr);

#endif
