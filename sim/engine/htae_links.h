/* htae_links.h: per-link accounting of the simulated iteration: bytes each SimGrid link carried,
 * the time at least one flow was active on it and, when asked, its counter (htae_rate_point).
 * Routes are cached per host pair; a flow's start or end costs O(links on its route), never a
 * scan of all links. */
#ifndef PROTOSIM_HTAE_LINKS_H
#define PROTOSIM_HTAE_LINKS_H

#include <simgrid/host.h>
#include <simgrid/link.h>

#include "htae.h"

typedef struct htae_links htae_links;

htae_links *htae_links_create(void);
/* Record link counters for the GPUs with ranks[r] != 0 (hosts[r] their hosts; ranks NULL: no
 * counters), before any flow starts. Every GPU listed: every link is counted. Else the links
 * counted are those on the routes, both ways, between a listed GPU and each GPU it shares a
 * group with or a transfer of g: every flow from or to a listed GPU must run on such a route
 * (ring and tree edges join members of one group; asserted), and every flow on a counted link,
 * whichever GPUs it joins, adds to its counter. */
void htae_links_count(htae_links *L, const exec_graph *g, const sg_host_t *hosts,
                      const unsigned char *ranks);
/* A flow of `bytes` (> 0) from src to dst (distinct hosts) starts / ends at simulated `now`.
 * Every start is matched by one end with the same hosts, in the same actor. For the counters,
 * the flows one actor starts at one instant, none of its flows having ended since, are the
 * edges of one SimGrid parallel task (htae_coll's run_pattern; a transfer alone): their bytes
 * move after the largest latency among their routes, as ptask_L07 charges it; and the flows
 * one actor has open on one host pair belong to one such task. */
void htae_links_start(htae_links *L, sg_host_t src, sg_host_t dst, double bytes, double now);
void htae_links_end(htae_links *L, sg_host_t src, sg_host_t dst, double now);
/* The route src -> dst (distinct hosts) as link indices, fixed for the run: *len of them at the
 * pointer returned, which holds until the next call into L. */
const int *htae_links_route(htae_links *L, sg_host_t src, sg_host_t dst, int *len);
/* Link `id`'s bandwidth (bytes/s, as it is now) and whether it is shared (not a fatpipe). */
double htae_links_bandwidth(const htae_links *L, int id);
int htae_links_shared(const htae_links *L, int id);
sg_link_t htae_links_link(const htae_links *L, int id);
/* Record every link's bytes and busy time so far, at simulated `now` (htae_result.snap_*). */
void htae_links_snapshot(htae_links *L, double now);
/* The links that carried bytes into out->links, busiest first (busy time, then bytes, then
 * name), with their counters where counted, and the snapshots taken. Every flow must have
 * ended. */
void htae_links_collect(const htae_links *L, htae_result *out);
void htae_links_free(htae_links *L);

#endif
