/* sweep_run.h: `protosim sweep` and `protosim merge`: the sweep driver with its forked worker
 * pool and shards (sweep_run.c), and the merge of shard JSON files (merge.c). */
#ifndef PROTOSIM_SWEEP_RUN_H
#define PROTOSIM_SWEEP_RUN_H

#include "output.h"

typedef struct sweep_options {
    int jobs;             /* worker processes alive at once; <= 0: the CPU count */
    int shard_k, shard_n; /* process plans with index % n == k - 1; 0/0: all */
    int top;              /* rows of the ranked table on stdout; 0: all */
    int progress; /* 0 off; else (-1 auto, 1 on) a bar on a terminal, lines every 5 s elsewhere */
    const char *csv, *json, *plot; /* outputs, NULL when not asked for */
    const char *profile;           /* a profile database every plan is costed with, or NULL */
    int twins;   /* 1 (default): a plan whose compiled plan equals a simulated one's takes its
                  outcome instead of being simulated (--simulate-all: 0) */
    int dry_run; /* --dry-run: enumerate, print the counts, simulate nothing */
} sweep_options;

void sweep_default_options(sweep_options *o);

/* `protosim sweep`: load the sweep and the cluster, enumerate, simulate, rank, write. */
int sweep_run(const char *sweep_path, const char *cluster_path, const char *data_dir,
              const sweep_options *o, ps_error *err);

/* `protosim merge`: re-rank the union of shard JSON files of one sweep (merge.c). */
int sweep_merge(const char *const *inputs, int n_inputs, const sweep_options *o, ps_error *err);

/* p's outcome from a simulated plan's summary: status ok, times, rates, memory, breakdown. */
void sweep_plan_record(sweep_plan *p, const report_summary *sum, const htae_result *res);

/* p's embedding columns from a simulated dlrm plan: its lookup stats and the emb-comm busy time
 * of the report's GPU. */
void sweep_plan_record_dlrm(sweep_plan *p, const dlrm_plan_stats *st, const report_summary *sum);

/* p's outcome (status, times, rates, memory, breakdown, embedding columns) from src, a plan
 * with the same compiled plan; sim_wall_s 0 (p was not simulated). */
void sweep_plan_copy_outcome(sweep_plan *p, const sweep_plan *src);

/* Rank t's plans: t->order gets ok (fastest first), oom, failed, invalid, each by index;
 * plans[].rank 1.. for the simulated ones. */
void sweep_rank(sweep_table *t);

/* The ranked table on stdout, then the files o asks for. */
int sweep_write_outputs(const sweep_table *t, const sweep_options *o, ps_error *err);

#endif
