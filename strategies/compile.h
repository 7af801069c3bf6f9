/* compile.h: the compiler from (op graph, strategy tree, cluster) to the execution graph, plus
 * the plan-level facts the report needs (batch, model FLOPs, memory per GPU). */
#ifndef PROTOSIM_COMPILE_H
#define PROTOSIM_COMPILE_H

#include "../sim/graph.h"
#include "../topology/cluster.h"
#include "strategy.h"

/* Per-GPU memory, bytes, at the plan's peak (first model; issue 4 refines it). */
typedef struct memory_estimate {
    double weights, gradients, optimizer, activations, buffers;
    double total;
} memory_estimate;

typedef struct compiled_plan {
    htae_graph *graph;
    int gpus, tp, pp, dp, chunks, micro_batches;
    double samples_per_iter, tokens_per_iter;
    double model_flops_per_iter;   /* forward + backward of the model, recompute excluded */
    double peak_flops_per_gpu;     /* at the plan's precision */
    double params_total;
    int *stage_of_rank;            /* [gpus] */
    memory_estimate *memory;       /* [gpus] */
    double memory_capacity;        /* smallest HBM capacity among the GPUs */
} compiled_plan;

/* Rank of the GPU at tensor index t, data index d, pipeline stage p under s->order. */
int compile_rank_of(const strategy *s, int t, int d, int p);

int compile_plan(const strategy *s, const cluster *c, compiled_plan *out, ps_error *err);
void compiled_plan_free(compiled_plan *p);

#endif
