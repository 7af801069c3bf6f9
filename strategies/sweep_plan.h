/* sweep_plan.h: the plans of a sweep: every combination of a sweep file's axes applied to its
 * base strategy, each judged valid or not by strategy_validate and the GPU count. */
#ifndef PROTOSIM_SWEEP_PLAN_H
#define PROTOSIM_SWEEP_PLAN_H

#include <stddef.h>

#include "../sim/base/figures.h"
#include "sweep_spec.h"

typedef enum {
    SWEEP_PLAN_OK,      /* simulated */
    SWEEP_PLAN_OOM,     /* does not fit in GPU memory (not simulated under memory: fit) */
    SWEEP_PLAN_FAILED,  /* its worker crashed or reported an error */
    SWEEP_PLAN_INVALID, /* inconsistent combination (not simulated, not an error) */
    SWEEP_PLAN_PENDING, /* valid, not yet processed */
    SWEEP_PLAN_STATUS_COUNT
} sweep_plan_status;

/* "ok", "oom", "failed", "invalid", "pending", indexed by sweep_plan_status. */
extern const enum_names sweep_plan_status_names;

/* One combination of the axes and, once processed, its outcome. Plain data (no pointers):
 * workers send it back through a pipe as is. */
typedef struct sweep_plan {
    int index;         /* position in the cartesian product, 0-based */
    int gpus;          /* the GPUs it takes: the first this many of the cluster */
    plan_desc desc;    /* the combination: tensor, pipeline, data, micro_batch, schedule, ... */
    int status;        /* sweep_plan_status */
    int rank;          /* 1-based among simulated plans after ranking; 0 else */
    plan_figures fig;  /* ok: all; oom: the memory */
    double sim_wall_s; /* host seconds the worker spent simulating */
    /* dlrm: tables_sharding: auto's proposal (0-based, -1: none) and then each table's
     * sharding (emb_sharding, n_tables entries) */
    int proposal, n_tables;
    unsigned char table_sharding[DLRM_MAX_TABLES];
    /* dlrm, simulated: the largest per-GPU lookup time per iteration (the cost model's TBE
     * kernels), the embedding all-to-alls' simulated busy time on the report's GPU, and the
     * lookup imbalance (max / mean); `dlrm` says they are set */
    int dlrm;
    double lookup_max_s, alltoall_s, lookup_imbalance;
    char reason_kind[64]; /* invalid/failed: the field or cause, for grouping */
    char reason[448];
} sweep_plan;

/* Every combination of s's axes on a cluster of cluster_gpus GPUs, in enumeration order (first
 * axis slowest), each marked SWEEP_PLAN_INVALID with its reason or SWEEP_PLAN_PENDING; a plan
 * takes the gpus axis's value, else constraints.gpus, else cluster_gpus (values above
 * cluster_gpus are the caller's to refuse). Errors: more combinations than
 * constraints.max_plans. Caller frees *out (free()). */
int sweep_enumerate(const sweep_spec *s, int cluster_gpus, sweep_plan **out, int *n, ps_error *err);

/* Put d's fields (degrees, batches, schedule, virtual stages, zero, shard degree, recompute,
 * bucket, sequence parallelism, precision) into s; the rest of s (workload, overrides,
 * locations) is kept. */
void sweep_plan_apply(const plan_desc *d, strategy *s);

/* p's per-table shardings (a tables_sharding: auto proposal) into s: the most common one as
 * the root's sharding, the others as children "tables.N"; nothing when p has no proposal. */
void sweep_plan_apply_tables(const sweep_plan *p, strategy *s);

/* A proposal's shardings as "tw tw dp ..." (short names); "" without a proposal. */
void sweep_plan_tables_text(const sweep_plan *p, char *out, size_t n);

/* Short names of the shardings in labels: tw, rw, cw, twrw, dp (indexed by emb_sharding). */
const char *sweep_sharding_short(int sharding);

/* The base strategy with p's combination applied (deep copy; free with strategy_free). */
void sweep_plan_strategy(const sweep_spec *s, const sweep_plan *p, strategy *out);

/* "tp8 pp16 dp8 mb1 1f1b zero1 sel" ("gpus16 " first when the GPU count is swept; + bucket and sequence parallelism when swept, and
 * "shard4" when ZeRO shards over groups of 4 ranks, HSDP); a dlrm plan: "dp8 mb8192
 * table-wise greedy", or with a proposal "dp8 mb8192 auto3 tw20 rw6 greedy". */
void sweep_plan_label(const sweep_plan *p, int show_gpus, int show_bucket, int show_sp, char *out,
                      size_t n);

/* tables_sharding: auto (strategies/sweep_tables.c): s->proposals, each table's sharding, costed
 * on c's first GPU and its narrowest GPU-to-GPU route (nothing when the axis is absent). Errors:
 * fewer than 2 GPUs, a table that fits no GPU under any sharding (at the axis). */
int sweep_tables_propose(sweep_spec *s, const cluster *c, ps_error *err);
/* TorchRec's column shards of a table of dim `dim`: dim / 128 (its smallest column shard),
 * 0 when that is not at least 2 whole shards. */
int sweep_tables_column_shards(int dim);

/* counts[s] = how many of plans[0..n) have status s. */
void sweep_plans_count(const sweep_plan *plans, int n, int counts[SWEEP_PLAN_STATUS_COUNT]);

#endif
