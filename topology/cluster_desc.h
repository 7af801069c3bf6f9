/* cluster_desc.h: the cluster description `protosim cluster` writes by default: node models,
 * node counts, fabric options and stragglers in a few kilobytes of YAML, built into SimGrid
 * directly. */
#ifndef PROTOSIM_CLUSTER_DESC_H
#define PROTOSIM_CLUSTER_DESC_H

#include "fabric.h"

/* A loaded description (owns everything; the platform built from it keeps it for its routes). */
typedef struct cluster_desc {
    char file[512];
    node_model *models; /* [n_models] */
    src_loc *gpu_loc;   /* [n_models]: where each model names its GPU (unknown-device errors) */
    int n_models;
    const node_model **model_ptr; /* [n_models]: &models[i], for fabric_init */
    int *group_model;             /* [n_groups]: the model of each group, in rank order */
    int *group_nodes;             /* [n_groups] */
    int n_groups;
    cluster_gen_opts opts; /* fabric, nodes_per_leaf, oversubscription */
    /* slowdown: stragglers, each GPU's kernels `slow_factor` times as long (the XML form's
     * `slowdown` host property); ranks distinct and in range, factors finite and > 0 */
    int n_slow;
    int *slow_rank;
    double *slow_factor;
    fabric layout; /* of the groups with opts: ranks, links, routes */
} cluster_desc;

/* Whether the file at `path` is a cluster description rather than a SimGrid XML platform: its
 * first character other than white space is not '<', and a line of its first 4 KiB starts with
 * "protosim_cluster:" or its name does not end in ".xml" (the loader its name suggests then says
 * what is wrong). An unreadable or empty file is not (the XML loader reports it). */
int cluster_desc_sniff(const char *path);

/* Read and check a description; *out is allocated (free it with cluster_desc_free). Every error
 * is PS_EINPUT naming the file, line, column and field: unknown or missing keys, a link used by
 * a route but not declared, a GPU pair without a route, values outside cluster.h's link ranges
 * or sim/base/limits.h. */
int cluster_desc_load(const char *path, cluster_desc **out, ps_error *err);
void cluster_desc_free(cluster_desc *d);

#endif
