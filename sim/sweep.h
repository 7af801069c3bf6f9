/* sweep.h: design-space sweeps: enumerate the plans of a sweep file, simulate them in forked
 * worker processes (one SimGrid engine each), rank them, and write table, CSV, JSON and SVG. */
#ifndef PROTOSIM_SWEEP_H
#define PROTOSIM_SWEEP_H

#include "../strategies/sweep_spec.h"
#include "base/error.h"

typedef enum {
    SWEEP_PLAN_OK,      /* simulated */
    SWEEP_PLAN_OOM,     /* does not fit in GPU memory (not simulated under memory: fit) */
    SWEEP_PLAN_FAILED,  /* its worker crashed or reported an error */
    SWEEP_PLAN_INVALID, /* inconsistent combination (not simulated, not an error) */
    SWEEP_PLAN_PENDING
} sweep_plan_status;

/* One combination of the axes and, once processed, its outcome. Plain data: workers send it
 * back through a pipe as is. */
typedef struct sweep_plan {
    int index; /* position in the cartesian product, 0-based */
    int tp, pp, dp, micro_batch, schedule, virtual_stages, zero, recompute, sequence_parallel;
    double bucket_mb;
    int status; /* sweep_plan_status */
    int rank;   /* 1-based among simulated plans after ranking; 0 else */
    double iteration_s, samples_per_s, tokens_per_s, mfu;
    double peak_memory_bytes, memory_capacity_bytes;
    double compute_s, exposed_comm_s, bubble_s, idle_s;
    double sim_wall_s;    /* host seconds the worker spent simulating */
    char reason_kind[64]; /* invalid/failed: the field or cause, for grouping */
    char reason[448];
} sweep_plan;

/* Every combination of s's axes for `gpus` GPUs, in enumeration order (first axis slowest),
 * each marked SWEEP_PLAN_INVALID with its reason or SWEEP_PLAN_PENDING. Errors: more
 * combinations than constraints.max_plans. Caller frees *out. */
int sweep_enumerate(const sweep_spec *s, int gpus, sweep_plan **out, int *n, ps_error *err);

/* The base strategy with p's axis values applied (deep copy; free with strategy_free). */
int sweep_plan_strategy(const sweep_spec *s, const sweep_plan *p, strategy *out);

/* "tp8 pp16 dp8 mb1 1f1b zero1 sel" (+ bucket and sequence parallelism when swept). */
void sweep_plan_label(const sweep_plan *p, int show_bucket, int show_sp, char *out, size_t n);

typedef struct sweep_options {
    int jobs;                      /* worker processes alive at once; <= 0: the CPU count */
    int shard_k, shard_n;          /* process plans with index % n == k - 1; 0/0: all */
    int top;                       /* rows of the ranked table on stdout; 0: all */
    int progress;                  /* -1 auto (stderr is a terminal), 0 off, 1 on */
    const char *csv, *json, *plot; /* outputs, NULL when not asked for */
} sweep_options;

void sweep_default_options(sweep_options *o);

/* `protosim sweep`: load the sweep and the cluster, enumerate, simulate, rank, write. */
int sweep_run(const char *sweep_path, const char *cluster_path, const char *data_dir,
              const sweep_options *o, ps_error *err);

/* `protosim merge`: re-rank the union of shard JSON files of one sweep. */
int sweep_merge(const char *const *inputs, int n_inputs, const sweep_options *o, ps_error *err);

#endif
