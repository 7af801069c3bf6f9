/* compile.h: the compiler from (op graph, strategy tree, cluster) to the execution graph, plus
 * the plan-level facts the report needs (batch, model FLOPs, memory per GPU). */
#ifndef PROTOSIM_COMPILE_H
#define PROTOSIM_COMPILE_H

#include "../sim/base/graph.h"
#include "../topology/cluster.h"
#include "strategy.h"

/* Per-GPU memory, bytes, at the plan's peak (first model; issue 4 refines it). */
typedef struct memory_estimate {
    double weights, gradients, optimizer, activations, buffers;
    double total;
} memory_estimate;

/* Data-parallel replicas run the same compute and pipeline traffic on the same kind of GPUs and
 * meet only in their gradient collectives, so by default one replica is simulated and every
 * DP collective still runs over all member GPUs' links (the other members reach it at once,
 * replica 0 sets the pace; a ring advances at its most loaded edge, which is replica 0's).
 * Exact for symmetric replicas; off when GPU models differ between replicas. */
typedef struct compile_options {
    int fold_data_parallel;
} compile_options;

void compile_default_options(compile_options *o);

typedef struct compiled_plan {
    htae_graph *graph;
    char strategy_file[512]; /* where the plan came from, for reports */
    workload_model model;    /* the model as resolved */
    plan_desc plan;          /* the strategy root's layout and knobs */
    int gpus, tp, pp, dp, chunks, micro_batches;
    int simulated_replicas; /* dp, or 1 when data-parallel replicas are folded */
    double samples_per_iter, tokens_per_iter;
    double model_flops_per_iter; /* forward + backward of the model, recompute excluded */
    double peak_flops_per_gpu;   /* at the plan's precision */
    double params_total;
    int *stage_of_rank;      /* [gpus] */
    int *replica_of_rank;    /* [gpus]: data-parallel index */
    memory_estimate *memory; /* [gpus] */
    double memory_capacity;  /* smallest HBM capacity among the GPUs */
} compiled_plan;

/* Rank of the GPU at tensor index t, data index d, pipeline stage p under s->order. */
int compile_rank_of(const strategy *s, int t, int d, int p);

/* opt may be NULL (defaults). */
int compile_plan(const strategy *s, const cluster *c, const compile_options *opt,
                 compiled_plan *out, ps_error *err);
void compiled_plan_free(compiled_plan *p);

#endif
