/* sweep_spec.h: a sweep file: a base strategy, the axes to vary and the constraints a plan must
 * meet (docs/guide/sweep.md). Parsed with locations so bad sweeps are errors at file:line:column. */
#ifndef PROTOSIM_SWEEP_SPEC_H
#define PROTOSIM_SWEEP_SPEC_H

#include "strategy.h"

/* The axes a sweep may vary, in enumeration order (the first varies slowest). */
typedef enum {
    SWEEP_GPUS, /* the plan's GPUs: the first N of the cluster */
    SWEEP_TENSOR,
    SWEEP_PIPELINE,
    SWEEP_DATA,
    SWEEP_MICRO_BATCH,
    SWEEP_SCHEDULE,
    SWEEP_VIRTUAL_STAGES,
    SWEEP_ZERO,
    SWEEP_SHARD_DEGREE,
    SWEEP_RECOMPUTE,
    SWEEP_BUCKET_MB,
    SWEEP_SEQUENCE_PARALLEL,
    SWEEP_CONTEXT,
    SWEEP_EXPERT, /* expert.degree; expert.tensor stays the base's */
    /* dlrm bases only: strategy.embedding.sharding, .placement, and `tables_sharding: auto`
     * (per-table shardings proposed by strategies/sweep_tables.c) */
    SWEEP_SHARDING,
    SWEEP_PLACEMENT,
    SWEEP_SHARDS, /* strategy.embedding.shards: column-wise plans' column shards */
    SWEEP_TABLES_SHARDING,
    SWEEP_AXIS_COUNT
} sweep_axis_kind;

/* One axis's values. Enums are stored as their index (pipeline_schedule, recompute_mode,
 * emb_sharding, emb_placement), booleans as 0/1. data_auto: `data: auto` (GPUs / (tensor x
 * context x pipeline)) or `tables_sharding: auto` (the only value of that axis); then n == 0. */
typedef struct sweep_axis {
    int present;
    int data_auto;
    double *values;
    int n;
    src_loc loc;
} sweep_axis;

/* constraints.memory's names: "ignore" (0), "fit" (1). */
extern const enum_names sweep_memory_names;

typedef struct sweep_spec {
    char file[512];
    char base_file[1024]; /* the base strategy's path; "" when inline */
    strategy base;
    sweep_axis axes[SWEEP_AXIS_COUNT];
    int gpus; /* constraints.gpus, the first N of the cluster; 0: all of them */
    src_loc gpus_loc;
    int memory_fit;
    /* index in sweep_memory_names */ /* constraints.memory: 1 fit (default), 0 ignore */
    int max_plans;                    /* constraints.max_plans (default 100000) */
    src_loc max_plans_loc;
    src_loc axes_loc;
    /* tables_sharding: auto: the proposals (sweep_tables_propose), each an emb_sharding per
     * table of the base model; heap-owned */
    unsigned char (*proposals)[DLRM_MAX_TABLES];
    int n_proposals;
} sweep_spec;

/* Parse and check SWEEP.yaml; data_dir as for strategy_load. Free with sweep_spec_free. */
int sweep_spec_load(const char *path, const char *data_dir, sweep_spec *out, ps_error *err);
void sweep_spec_free(sweep_spec *s);

extern const enum_names sweep_axis_names;
const char *sweep_axis_name(sweep_axis_kind k);
/* Number of values an axis contributes to the product (1 when absent or data: auto; the
 * proposals' count for tables_sharding: auto). */
int sweep_axis_count(const sweep_spec *s, sweep_axis_kind k);

#endif
