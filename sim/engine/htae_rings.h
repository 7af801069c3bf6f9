/* htae_rings.h: NCCL-like ring construction over a group's hosts: rings chosen for the largest
 * bottleneck of residual link capacity, so a multi-link topology (DGX-1) gets several rings. */
#ifndef PROTOSIM_HTAE_RINGS_H
#define PROTOSIM_HTAE_RINGS_H

#include <simgrid/host.h>

/* The edges of all rings of a group; every ring carries the collective's full per-edge volume
 * times its share, shares summing to 1 over rings. */
typedef struct ring_set {
    int n; /* members */
    int n_rings;
    int n_edges;    /* n * n_rings */
    int *src, *dst; /* member indices */
    double *share;  /* of the per-edge volume, per edge */
} ring_set;

/* Rings over hosts[0..n): for n <= HTAE_RING_SEARCH_MAX an exhaustive search, repeated on the
 * residual capacity while it yields a useful ring; larger groups get one ring in the given order. */
#define HTAE_RING_SEARCH_MAX 8
void htae_rings_build(const sg_host_t *hosts, int n, ring_set *out);
void htae_rings_free(ring_set *rs);

#endif
