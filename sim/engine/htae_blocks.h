/* htae_blocks.h: a pattern too large for one SimGrid task, as the tasks it runs as (blocks),
 * and when those blocks, alone on their links, may be timed instead of run (htae_timed.c).
 * htae_coll.c runs the blocks as tasks; htae_timed.c times them; this calls only SimGrid. */
#ifndef PROTOSIM_HTAE_BLOCKS_H
#define PROTOSIM_HTAE_BLOCKS_H

#include "htae_pattern.h"

/* run_pattern's tasks over p: its edges in order[] (p->n_edges; sorted by lower member when
 * the group has more than HTAE_PTASK_MAX_HOSTS members, else as they are), block b being
 * order[bound[b] .. bound[b + 1]): greedily the longest run of edges within the host cap,
 * never members of two spans in one block (members [k span, (k + 1) span), span > 0). Returns
 * the block count; *bound is malloc'ed [count + 1]. */
int htae_blocks_of(const coll_group *gp, const pattern *p, int span, int *order, int **bound);

/* The blocks as SimGrid would run them with nothing else on their links: each block's host
 * pairs (each once, in order of first edge, their weights summed: its task's matrix cells),
 * its worst route latency (what ptask_L07 charges a task first) and its unit time (its busiest
 * link's load per byte over the bandwidth). A lone task moves at 1 / (scale x unit). `alone`:
 * those lone rates together load no link past its bandwidth (to 1e-9), and every link is
 * shared. Then each block is alone on its own busiest link (a second block there would
 * overload it), which it saturates: the rates are the max-min allocation FairBottleneck
 * gives, they stay so as blocks end, and block b ends lat + scale x unit after the start. */
typedef struct htae_blocks {
    int n;
    int *first; /* [n + 1]: block b's pairs are [first[b], first[b + 1]) */
    int *src, *dst;
    double *w;
    double *lat, *unit; /* [n] */
    int alone;
} htae_blocks;

htae_blocks *htae_blocks_alone(const coll_group *gp, const pattern *p, int span);
void htae_blocks_free(htae_blocks *b);

#endif
