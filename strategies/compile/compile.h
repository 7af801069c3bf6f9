/* compile.h: the compiler from (op graph, strategy tree, cluster) to the execution graph, plus
 * the plan-level facts the report needs (batch, model FLOPs, memory per GPU). */
#ifndef PROTOSIM_COMPILE_H
#define PROTOSIM_COMPILE_H

#include "../../sim/base/graph.h"
#include "../../sim/cost/cost_profile.h"
#include "../../topology/cluster.h"
#include "../strategy.h"

/* Per-GPU memory, bytes, at the plan's peak (first model; issue 4 refines it). */
typedef struct memory_estimate {
    double weights, gradients, optimizer, activations, buffers;
    double total;
} memory_estimate;

/* What a dlrm plan did with its tables, for reports and sweep rankings (heap-owned by the
 * compiled plan). Lookup times are the cost model's TBE kernels (forward + backward) over a GPU's
 * tables for one iteration, slowdown included; the all-to-all's simulated time is the report's
 * emb-comm busy time. */
typedef struct dlrm_plan_stats {
    int sharding;       /* emb_sharding, -1: no embedding block (the one GPU holds the tables) */
    int placement;      /* emb_placement, -1: none (unsharded) */
    int bottom_mlp_gpu; /* -1: the bottom MLP data-parallel */
    int per_table;      /* children "tables.N" set some tables' sharding */
    int comm;           /* sharded over GPUs: the lookups' all-to-alls and collectives run */
    int sparse_update;  /* embedding.update: sparse (a gradient row per lookup, then SGD), not
                           the update fused into the lookup's backward */
    int n_tables, gpus;
    int *owner;         /* [n_tables] the GPU holding each table (a column-wise table: its first
                   shard's), -1 when on several (data-parallel, row-wise, table-row-wise) */
    int *tables_of_gpu; /* [gpus] tables each GPU looks up */
    double *lookup_s;   /* [gpus] */
    double lookup_max_s, lookup_mean_s;
    double lookup_imbalance; /* max / mean (1 when balanced; 0 when no GPU looks up) */
    double alltoall_bytes;   /* per iteration, all GPUs' sends, forward and backward: the
                              all-to-alls' matrices, the row-wise ring collectives' (G - 1) / G
                              of S per GPU each */
} dlrm_plan_stats;

/* Data-parallel replicas run the same compute and pipeline traffic on the same kind of GPUs and
 * meet only in their gradient collectives, so by default one replica is simulated and every
 * DP collective still runs over all member GPUs' links (the other members reach it at once,
 * replica 0 sets the pace; a ring advances at its most loaded edge, which is replica 0's).
 * Exact for symmetric replicas, so it is done only where replicas provably behave alike: at
 * every position (tensor index, stage) the same GPU model and slowdown as replica 0's, and the
 * same bottleneck bandwidth and latency on the routes to the TP peers and pipeline neighbours
 * (cluster_route). Otherwise every replica is simulated, as with fold_data_parallel = 0.
 * The same switch folds tensor-parallel peers where they provably behave alike (fold.c,
 * tp_peers_alike): tensor index 0 computes, its peers only move bytes. */
typedef struct compile_options {
    int fold_data_parallel;
    /* A profile database (`run --profile`): the op passes it matches on a GPU of its device
     * take their measured kernel times (sim/profile.h); NULL: the cost model everywhere. */
    const profile_db *profile;
    /* > 0: the graph holds this many micro-batches of each replica (at most the plan's), while
     * every figure of the plan (micro_batches, samples, tokens, model FLOPs, memory) stays the
     * whole plan's: the steady state's shorter plans (sim/run/steady.h). 0: all of them. */
    int graph_micro_batches;
} compile_options;

void compile_default_options(compile_options *o);

typedef struct compiled_plan {
    exec_graph *graph;
    char strategy_file[512];                         /* where the plan came from, for reports */
    workload_model model;                            /* the model as resolved */
    plan_desc plan;                                  /* the strategy root's layout and knobs */
    int gpus, tp, pp, dp, cp, chunks, micro_batches; /* dp: data.degree, cp: context.degree */
    int zero_shard;         /* ranks ZeRO shards over: dp x cp, or HSDP's data.shard_degree */
    int simulated_replicas; /* dp, or 1 when data-parallel replicas are folded */
    int simulated_tp;       /* tp, or 1 when tensor-parallel peers are folded (fold.c) */
    int simulated_context;  /* cp, or fewer context indices when folded inside replica 0 */
    double samples_per_iter, tokens_per_iter;
    double model_flops_per_iter; /* forward + backward of the model, recompute excluded */
    /* At the plan's precision, the mean of the GPUs' datasheet peaks (slowdown not counted), so
     * MFU = model FLOPs / (iteration x gpus x this) is against the sum of the GPUs' peaks on a
     * mixed cluster; the one model's peak on a homogeneous one. */
    double peak_flops_per_gpu;
    double params_total;
    int *chunk_layers;    /* [pp x chunks]: each model chunk's layers, model order */
    int *stage_of_rank;   /* [gpus] */
    int *replica_of_rank; /* [gpus]: data x cp + context index */
    /* [gpus]: the computing rank whose timeline a folded rank follows (itself when it
     * computes); NULL when every rank computes its own (dlrm plans) */
    int *twin_of_rank;
    memory_estimate *memory;         /* [gpus] */
    double *memory_capacity_of_rank; /* [gpus]: each GPU's own HBM capacity */
    /* With a profile database: every op pass of one micro-batch on the first rank of each
     * stage, modelled and used kernel times (what the report's profile section sums); NULL
     * without one. */
    profile_stats *profile;
    dlrm_plan_stats *dlrm; /* dlrm plans only (strategies/compile/dlrm_plan.c), else NULL */
} compiled_plan;

/* Rank of the GPU at tensor index t, data-context index d (data index x cp + context index:
 * the dp x cp ranks holding the same weights), pipeline stage p under s->order. */
int compile_rank_of(const strategy *s, int t, int d, int p);

/* opt may be NULL (defaults). Compute is costed per rank on its own GPU (device model and
 * cluster slowdown): one set of segment templates per distinct (device, slowdown) in use. */
int compile_plan(const strategy *s, const cluster *c, const compile_options *opt,
                 compiled_plan *out, ps_error *err);
void compiled_plan_free(compiled_plan *p);

/* The plan of a recommendation model (family dlrm; strategies/compile/dlrm_plan.c), which compile_plan
 * hands over to: MLPs data-parallel, tables on the one GPU, replicated or sharded. */
int compile_dlrm_plan(const strategy *s, const cluster *c, compiled_plan *out, ps_error *err);
/* Bytes per element of the MLP gradients a dlrm plan all-reduces: 2 under fp16, else 4. */
double dlrm_plan_grad_elem_bytes(precision_t p);

/* The GPU closest to its own memory capacity (on one GPU model: the one needing the most), so
 * the plan fits exactly when that GPU's memory[].total <= memory_capacity_of_rank[] of it. The
 * one fit rule of `run --strict-memory`, the report and sweep pruning. */
int compiled_plan_tightest_rank(const compiled_plan *p);
/* The GPUs whose memory estimate exceeds their own capacity (0 when the plan fits). */
int compiled_plan_gpus_over_memory(const compiled_plan *p);

#endif
