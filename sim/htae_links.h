/* htae_links.h: per-link accounting of the simulated iteration: bytes each SimGrid link carried
 * and the time at least one flow was active on it. Routes are cached per host pair; a flow's
 * start or end costs O(links on its route), never a scan of all links. */
#ifndef PROTOSIM_HTAE_LINKS_H
#define PROTOSIM_HTAE_LINKS_H

#include <simgrid/host.h>

#include "htae.h"
#include "htae_rings.h"

typedef struct htae_links htae_links;

htae_links *htae_links_create(void);
/* A flow of `bytes` (> 0) from src to dst (distinct hosts) starts / ends at simulated `now`.
 * Every start is matched by one end with the same hosts. */
void htae_links_start(htae_links *L, sg_host_t src, sg_host_t dst, double bytes, double now);
void htae_links_end(htae_links *L, sg_host_t src, sg_host_t dst, double now);
/* The flows of one ring phase start (start != 0) or end: the edges of `rs` over `hosts` with
 * rs->share[e] * edge_bytes each, or with rs NULL one ring in host order, edge_bytes per edge
 * (the edges and bytes rings_start puts in its matrix). Edges without bytes are skipped. */
void htae_links_ring(htae_links *L, sg_host_t *hosts, int n, const ring_set *rs, double edge_bytes,
                     int start, double now);
/* The links that carried bytes into out->links, busiest first (busy time, then bytes, then
 * name). Every flow must have ended. */
void htae_links_collect(const htae_links *L, htae_result *out);
void htae_links_free(htae_links *L);

#endif
