/* node_model.h: one node (server) of a cluster before it is written as SimGrid XML: its GPUs,
 * the links inside it and the route between every pair of its GPUs and from every GPU out
 * through its NIC. The DGX templates (generate.c) and the hwloc import (hwloc_import.c) build
 * one; the platform writer joins copies of node models with a fabric. */
#ifndef PROTOSIM_NODE_MODEL_H
#define PROTOSIM_NODE_MODEL_H

#define NODE_MAX_HOPS 12

/* A link inside the node, written as SimGrid link "n<node><id>" (id "g0_nvl" on node 3 is
 * "n3g0_nvl"), SPLITDUPLEX: each direction has the full bandwidth. */
typedef struct node_link {
    char id[40];      /* unique in the node, starts with a letter or '_' */
    double GBps;      /* per direction, 1e9 bytes/s */
    double latency_s; /* per traversal */
} node_link;

typedef struct node_hop {
    int link; /* index into links */
    int up;   /* 1: direction UP, 0: DOWN */
} node_hop;

typedef struct node_path {
    int n; /* hops, 0..NODE_MAX_HOPS */
    node_hop hop[NODE_MAX_HOPS];
} node_path;

typedef struct node_model {
    char kind[32]; /* "dgx-h100", "hwloc:nvidiaDGX2.xml", ... for the generated header */
    char gpu[48];  /* device table name, the hosts' gpu property */
    double flops;  /* host speed (FLOP/s): the GPU's dense bf16 (or fp16) peak */
    int gpus;
    node_link *links;
    int n_links;
    /* [gpus * gpus]: route from GPU i to GPU j at [i * gpus + j], i != j; the route j -> i is
     * the same links in reverse order with directions swapped (routes are symmetrical). */
    node_path *gpu_gpu;
    int nics;           /* NICs into the fabric, >= 1 */
    double nic_GBps;    /* per NIC, per direction */
    int *nic_of_gpu;    /* [gpus]: the NIC (rail) each GPU sends through, 0..nics-1 */
    node_path *gpu_nic; /* [gpus]: route from GPU i out of the node, its NIC's link last */
} node_model;

void node_model_free(node_model *m);

#endif
