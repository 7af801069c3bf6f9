/* dlrm_shard.h: a dlrm plan's tables as shards, what dlrm_shard.c gives dlrm_plan.c: where the
 * shards are (dlrm_shard.c builds and places them) and what each GPU looks up. */
#ifndef PROTOSIM_DLRM_SHARD_H
#define PROTOSIM_DLRM_SHARD_H

#include "compile.h"

/* One piece of a table that GPUs look up: a whole table, a column shard, or a row-wise slice
 * (one on every GPU). */
typedef struct dlrm_shard {
    int table;
    emb_sharding kind; /* DATA_PARALLEL also for the one-GPU plan's tables (update fused) */
    int gpu;           /* its GPU; -1: on every GPU (replicated, row-wise slices, one GPU) */
    int index;         /* column shard index (0 otherwise) */
    workload_emb emb;  /* what its GPU looks up in one micro-batch */
    int node;          /* table-row-wise: the node whose GPUs hold a slice each; else -1 */
} dlrm_shard;

/* Where the tables are and who runs what, resolved once for the whole plan. */
typedef struct dlrm_layout {
    int G, n_tables;
    int comm;       /* sharded tables on more than one GPU: the collectives of the lookups */
    int bottom_gpu; /* -1: the bottom MLP on every GPU (its micro-batch) */
    dlrm_shard *shard;
    int n_shards;
    int placed;     /* shards placed on one GPU (table-wise, column-wise) */
    double rw_dims; /* the row-wise tables' dims: their reduce-scatter, all-gather */
    /* table-row-wise: the nodes (GPUs numbered node by node, `per_node` each; node_of the
     * cluster's) and each node's tables' dims (its reduce-scatter, cross-node all-to-all) */
    const int *node_of;
    int n_nodes, per_node;
    double *twrw_dims;  /* [n_nodes], NULL without table-row-wise tables */
    double dense_elems; /* the data-parallel tables' elements (dense gradient, step) */
    double table_elems;
} dlrm_layout;

/* The fused update of the strategy's optimizer. */
emb_update dlrm_update_of(optimizer_kind o);

/* The shards of every table into L (G, n_tables and bottom_gpu set by the caller), placed:
 * `local` / `global` the tables' lookups at the micro-batch and at every GPU's. 0, or a
 * located error; L's arrays are the caller's to free (dlrm_layout_free) either way. */
int dlrm_build_shards(const strategy *s, const cluster *c, const workload_emb *local,
                      const workload_emb *global, dlrm_layout *L, ps_error *err);
void dlrm_layout_free(dlrm_layout *L);

/* Whether shard sh is on rank r; whether r runs the bottom MLP; whether op is a bottom MLP's. */
int dlrm_on_gpu(const dlrm_layout *L, const dlrm_shard *sh, int r);
int dlrm_runs_bottom(const dlrm_layout *L, int r);
int dlrm_is_bottom(const workload_op *op);

/* Elements of the slice of the table a shard holds. */
double dlrm_shard_elems(const workload_emb *e);

/* One TBE kernel over rank r's shards; 0 when it has none. */
double dlrm_tbe_seconds(const dlrm_layout *L, int r, op_pass pass, const device_spec *dev);

/* The per-iteration lookup times of each GPU and the shard counts (compiled_plan.dlrm;
 * heap-owned by the plan). */
dlrm_plan_stats *dlrm_plan_stats_create(const strategy *s, const cluster *c, const dlrm_layout *L,
                                        int M, double comm_bytes);

#endif
