/* htae_pattern.h: the flows of a group's collectives (patterns, htae_pattern.c) and the group
 * that holds them, shared by htae_coll.c (choosing and running them), htae_lean.c (the
 * all-to-all's lean task), htae_timed.c (timed waits) and htae_dyn.c (which groups may run
 * timed); nothing else includes it. htae_pattern.c calls none of them. */
#ifndef PROTOSIM_HTAE_PATTERN_H
#define PROTOSIM_HTAE_PATTERN_H

#include "htae_coll.h"

/* A parallel task spans at most this many hosts: its bytes matrix is dense (n x n, and SimGrid
 * copies and scans it), which at 16,384 members would take gigabytes. Larger groups split their
 * edges, sorted by their lower member (group order is node-major, so ring and chain edges stay
 * near their nodes), into blocks of at most this many hosts, one task each. Edges of one block
 * move at the pace of its slowest; blocks progress independently: the same time when the links
 * are evenly loaded (rings, trees over alike nodes), slightly optimistic otherwise. A collective
 * with companion groups (tensor-parallel folding) that needs blocks gets one per group: each
 * group's collective is then the task it is unfolded, not an arbitrary share of them. */

#define HTAE_PTASK_MAX_HOSTS 512

/* An algorithm's flows: edges (member -> member) with their bytes per byte of the buffer. */
typedef struct pattern {
    int n_edges, cap;
    int *src, *dst; /* member indices */
    double *w;      /* bytes per byte of S (efficiency divided in) */
    double unit_s;  /* busiest link's load per byte of S / its bandwidth; < 0: not computed */
    double max_lat; /* worst route latency over the edges: what SimGrid charges the task */
    double lat_intra, lat_inter; /* worst route latency of edges inside / between nodes */
    /* Its host pairs, each once, in order of first edge, with their summed weight: the flows
     * its SimGrid task starts (built at the first timed run, htae_coll_run_timed). */
    int n_pairs;
    int *pair_src, *pair_dst;
    double *pair_w;
} pattern;

struct coll_group {
    int n;
    sg_host_t *hosts; /* [n] group order */
    int *node;        /* [n] node of each member, numbered 0..m-1 in order of first appearance */
    int m, k;         /* nodes; members per node when equal on every node, else 0 */
    double launch_s, step_s, net_step_s, nvls_latency_s;
    double eff_intra, eff_net, eff_nvls; /* eff_nvls 0: not NVLS-capable */
    pattern ring, tree, nvls, direct;
    int has_tree, has_nvls, has_direct; /* built (direct lazily, at the first all-to-all) */
    /* The all-to-all's SimGrid task when it runs alone on its private links (htae_coll_lean):
     * a subset of direct's edges, its hosts lean_hosts[lean_n] in the order direct's task
     * takes them, lean_slot[2 e], [2 e + 1]: edge e's ends among them. lean.n_edges 0: none. */
    pattern lean;
    sg_host_t *lean_hosts;
    int *lean_slot, lean_n;
    /* NCCL's P2P through an intermediate GPU (NVB) for the all-to-alls: relay[i * n + j], the
     * member of i's node through whose two direct links i's bytes for j go, or -1 (built with
     * direct; NULL when no pair needs one) */
    int *relay, relay_built;
    /* The graph groups whose flows these are (htae_dyn_link_theirs): its own (gid, -1 until
     * htae_coll_group_set_id), or a merged companion set's; owners[0 .. n_owners). */
    int32_t gid;
    const int32_t *owners;
    int n_owners;
};

/* Patterns (htae_pattern.c). */
void htae_pattern_add_edge(pattern *p, int src, int dst, double w);
void htae_pattern_free(pattern *p);
/* Route latency between two hosts (0 for a host and itself). */
double htae_route_latency(sg_host_t a, sg_host_t b);
/* Build gp->ring, gp->tree, gp->nvls: each algorithm's flows on the group, with their route
 * latencies (htae_pattern.c explains each). */
void htae_pattern_build_ring(coll_group *gp);
void htae_pattern_build_tree(coll_group *gp);
void htae_pattern_build_nvls(coll_group *gp);
/* Build gp->direct, the all-to-all's flows (htae_pattern.c explains the choice). */
void htae_pattern_build_direct(coll_group *gp);
/* Into p, the flows of an uneven all-to-all: member i sends m[i * n + j] bytes to member j. */
void htae_pattern_build_alltoallv(coll_group *gp, const double *m, pattern *p);
/* The pattern's unit time: its busiest link's load per byte of S over its bandwidth (cached
 * in p->unit_s). */
double htae_pattern_unit(const coll_group *gp, pattern *p);

#endif
