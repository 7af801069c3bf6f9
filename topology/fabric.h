/* fabric.h: node models joined by a fat-tree or rail-optimized fabric, and the route between any
 * two GPUs by the fabric's rules (topology/ only: the platform writer and the routing zone). */
#ifndef PROTOSIM_FABRIC_H
#define PROTOSIM_FABRIC_H

#include <stddef.h>

#include "cluster.h"

#define FABRIC_LEAF_PORTS_DOWN 32 /* fat tree: a 64-port leaf, half its ports facing the nodes */
#define FABRIC_RAIL_UNIT_NODES 32 /* rail: a DGX SuperPOD scalable unit */
/* Most links of one route: inside the source node to a relay and out (2 node paths), four
 * fabric links, into the destination node. */
#define FABRIC_MAX_HOPS (3 * NODE_MAX_HOPS + 4)

/* One link of a route: a global link number (fabric_link_*) and its direction. */
typedef struct fabric_hop {
    int link;
    int up; /* 1: direction UP, 0: DOWN */
} fabric_hop;

/* The layout: which model each node has, how nodes group into units (a leaf switch of a fat
 * tree, a scalable unit of a rail fabric), each model's PXN relays, and every link numbered:
 * node n's links are link0[n] + i (i indexing its model's links), then the fabric's: a fat
 * tree's leaf uplink of unit u is up0 + u (more than one unit only); a rail fabric's rail r
 * uplink of unit u is up0 + u * (rails + 1) + r (rails a node of the unit has), its spine port
 * up0 + u * (rails + 1) + rails. */
typedef struct fabric {
    cluster_fabric kind;
    int nodes, per_unit, units, rails, gpus;
    double over;
    const node_model *const *models; /* [n_models]: not owned */
    int n_models;
    int *model_of;     /* [nodes]: index into models */
    int *rank0;        /* [nodes]: the node's first rank (ranks are node-major) */
    int *node_of_rank; /* [gpus] */
    int **relay;       /* rail: [model][gpu * rails + rail]: PXN relay GPU, -1 none (or own rail) */
    int *rail_used;    /* rail: [units * rails]: whether a node of the unit has the rail */
    int *link0;        /* [nodes] */
    int up0, n_links;
    double *up_GBps; /* [n_links - up0]: each fabric link's bandwidth, 0 where absent */
} fabric;

/* The layout of n_groups groups of nodes, group i being group_nodes[i] nodes of
 * *models[group_model[i]] (group_model NULL: of *models[i]), ranked node-major in group order,
 * with opts' fabric, nodes_per_leaf (0: the default) and oversubscription (0: 1). The
 * platform's size is checked against sim/base/limits.h first. 0, or a PS_EINPUT error naming the
 * option (an unknown fabric, nodes_per_leaf < 0, oversubscription < 1, or > 1 where no traffic
 * crosses an uplink); fabric_free frees it either way. */
int fabric_init(fabric *f, const node_model *const *models, int n_models, const int *group_model,
                const int *group_nodes, int n_groups, const cluster_gen_opts *opts, ps_error *err);
void fabric_free(fabric *f);

/* The ordered GPU pairs inside nodes (each a listed route in an XML platform) against
 * PS_MAX_NODE_PAIRS; call after fabric_init succeeded. 0, or a PS_EINPUT error. */
int fabric_check_pairs(const node_model *const *models, const int *group_nodes, int n_groups,
                       ps_error *err);

/* Rank a's GPU to rank b's (a != b) by the fabric's rules (docs/design-notes.md, "Fabrics"):
 * the hops into out[FABRIC_MAX_HOPS]; returns their number. */
int fabric_route(const fabric *f, int a, int b, fabric_hop *out);

/* Unit u's k-th fabric link: a fat tree's leaf uplink (k = 0), a rail fabric's rail k uplink
 * (k < rails) or its spine port (k = rails); fabric_unit_links is the number of k per unit. */
int fabric_unit_links(const fabric *f);
int fabric_unit_link(const fabric *f, int u, int k);

/* Global link `link`: whether it exists (a rail no node of its unit has does not), its name in
 * the platform (without SimGrid's _UP/_DOWN), bandwidth (GB/s per direction) and latency. */
int fabric_link_exists(const fabric *f, int link);
void fabric_link_name(const fabric *f, int link, char *buf, size_t cap);
double fabric_link_GBps(const fabric *f, int link);
double fabric_link_latency(const fabric *f, int link);

/* The NIC links (last hop of each GPU's route out) on rail r, each counted once, in GB/s; every
 * rail for r < 0. */
double fabric_nic_capacity(const node_model *m, int r);

#endif
