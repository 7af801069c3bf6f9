/* output.h: the writers of the `protosim` command: a run's text summary, JSON report and
 * trace (out_run.c), a plan's fields as JSON and back (out_plan.c), a sweep's table, CSV, JSON
 * and plot (out_sweep.c, out_plot.c) and the collective timings (out_collective.c). */
#ifndef PROTOSIM_OUTPUT_H
#define PROTOSIM_OUTPUT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "../strategies/compile/compile.h"
#include "../strategies/sweep_plan.h"
#include "../topology/cluster.h"
#include "../sim/compare/compare.h"
#include "../sim/engine/htae.h"
#include "../sim/report/report.h"
#include "../sim/report/report_replay.h"
#include "../sim/run/run.h"
#include "../sim/whatif/whatif.h"

/* ---- a plan's fields (out_plan.c) ---- */

/* Add p's fields to obj: tensor, pipeline, data, micro_batch, global_batch, schedule,
 * virtual_stages, zero, recompute, bucket_mb, sequence_parallel, precision. */
void out_plan_json(cJSON *obj, const plan_desc *p);

/* The one reader of what out_plan_json writes: every field must be present with its type
 * (integers integral), in range, enums by name. Errors are PS_EINPUT naming `file` and the
 * JSON path of the field (`where` is obj's path, e.g. "plans[3]", and field "plans[3].zero"). */
int out_plan_from_json(const cJSON *obj, const char *file, const char *where, plan_desc *out,
                       ps_error *err);

/* Small typed readers for the JSON path `where`.`key` of obj (shared by the merge reader).
 * A missing key is an error unless `optional` (then *out is left as is). */
int out_json_int(const cJSON *obj, const char *key, int optional, long lo, long hi,
                 const char *file, const char *where, int *out, ps_error *err);
int out_json_num(const cJSON *obj, const char *key, int optional, const char *file,
                 const char *where, double *out, ps_error *err);
/* A number in [lo, hi] ("must be a number between LO and HI, got X"). */
int out_json_num_in(const cJSON *obj, const char *key, int optional, double lo, double hi,
                    const char *file, const char *where, double *out, ps_error *err);
int out_json_str(const cJSON *obj, const char *key, int optional, const char *file,
                 const char *where, const char **out, ps_error *err);
int out_json_bool(const cJSON *obj, const char *key, int optional, const char *file,
                  const char *where, int *out, ps_error *err);
/* An enum by name: *out gets its value; an unknown name is an error listing the names. */
int out_json_enum(const cJSON *obj, const char *key, enum_names names, const char *file,
                  const char *where, int *out, ps_error *err);

/* A simulated plan's headline figures, named alike in the run report and the sweep outputs: add
 * iteration_time_s, samples_per_s, tokens_per_s, mfu and a "breakdown" object (compute_s,
 * exposed_comm_s, bubble_s, idle_s) to obj; returns the breakdown object for more keys (the
 * memory is not written: the run and the sweep place it differently). */
cJSON *out_figures_json(cJSON *obj, const plan_figures *f);

/* ---- one run (out_run.c) ---- */

/* run/sweep --profile with a table of a GPU the cluster does not have: a warning on stderr (it
 * matches nothing; not an error). */
void out_warn_profile_device(const profile_db *db, const cluster *c);

/* The run's text summary and JSON report, from its outcome (sim/run/run.h: the compiled plan,
 * timeline, summary, critical path, steady state, steps' host seconds); load_s: the host
 * seconds of loading the strategy and the cluster before it. */
void out_run_text(FILE *out, const cluster *c, const run_outcome *run);
/* out_run_json and out_run_trace return 0, or PS_EINPUT with err naming the file that could
 * not be written. */
int out_run_json(const char *path, const cluster *c, const run_outcome *run, double load_s,
                 ps_error *err);

/* What a trace keeps (run --trace-ranks, --trace-steps; out_trace.c). */
typedef struct out_trace_filter {
    const char *ranks; /* a rank list ("0-7", "0,3,8-11"); NULL: every rank */
    int steps;         /* tasks of micro-batches < steps, and those of none (-1); 0: all */
} out_trace_filter;

/* The rank list spec: comma-separated ranks and inclusive ranges LO-HI. Sets keep[r] = 1 for
 * each listed rank when keep is not NULL; n_ranks < 0 checks only the syntax. 0, or PS_EINPUT
 * naming --trace-ranks (a bad list, or a rank >= n_ranks). */
int out_trace_ranks(const char *spec, int n_ranks, unsigned char *keep, ps_error *err);
/* Chrome trace JSON: metadata, a complete event per kept task, flow events from each kept
 * transfer to its kept consumer on the peer. filter may be NULL (everything). */
int out_run_trace(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                  const out_trace_filter *filter, ps_error *err);

/* ---- Chakra execution traces (out_chakra.c) ---- */

/* The plan's execution graph as Chakra ETs: DIR/protosim.<rank>.et for every rank and
 * DIR/comm_group.json (DIR created when missing). The graph must be unfolded (every rank
 * simulated: compile without fold_data_parallel). 0, or PS_EINPUT naming what could not be
 * written. */
int out_run_chakra(const char *dir, const compiled_plan *p, ps_error *err);

/* ---- a replayed trace (out_replay.c) ---- */

typedef struct out_replay {
    const trace_job *job;
    const cluster *c;
    const exec_graph *graph;
    const htae_result *res;
    const replay_summary *sum;
    const report_critical_path *path;
    const whatif_spec *what_if; /* [n_what_if], applied in order */
    const whatif_effect *effects;
    int n_what_if;
    double unchanged_s; /* the predicted step without the what-ifs (n_what_if > 0) */
} out_replay;

void out_replay_text(FILE *out, const out_replay *x);
/* iteration_time_s, measured_step_s, steps, breakdown {gpu_active_s, gpu_idle_s, comm_s,
 * overheads {the five types}}, critical_path [{name, kind, seconds}], what_if [{spec, kernels,
 * launches_removed, kernel_s_before, kernel_s_after, host_s_removed}] (network: kernels is the
 * links changed), iteration_time_unchanged_s with what-ifs. */
int out_replay_json(const char *path, const out_replay *x, ps_error *err);
/* --overheads: Lin et al.'s five types per op type and per step, seconds per step. */
int out_replay_overheads(const char *path, const out_replay *x, ps_error *err);
/* --trace: the replayed timeline as a Chrome trace (ui.perfetto.dev). */
int out_replay_trace(const char *path, const out_replay *x, ps_error *err);

/* PS_EINPUT "cannot write: <strerror>" naming path. */
int out_write_error(const char *path, ps_error *err);
/* Write root as indented JSON to path and free it: 0, or a located error when the file cannot
 * be written whole (a full disk included). */
int out_json_file(const char *path, cJSON *root, ps_error *err);

/* ---- a sweep (out_sweep.c, out_plot.c) ---- */

/* Everything the sweep outputs need: the sweep's identity and its plans (sorted by index). */
typedef struct sweep_table {
    char sweep_file[512], cluster_file[512], base[1024], workload[64];
    int gpus, memory_fit, combinations, shard_k, shard_n;
    char hash[17];
    cJSON *axes; /* {"tensor": [4, 8], "data": "auto", ...}, owned */
    int show_gpus, show_bucket, show_sp;
    int dlrm;          /* a dlrm model's sweep: samples/s and the embedding columns, no tp/pp/MFU */
    sweep_plan *plans; /* owned */
    int n;
    int *order; /* ranked order of plans[], owned; NULL until ranked */
    double wall_s;
} sweep_table;

void sweep_table_free(sweep_table *t);

/* The ranked table: the best `top` plans of each status (0: all), invalid ones by reason. */
void out_sweep_table(FILE *f, const sweep_table *t, int top);
/* "invalid: N x REASON (e.g. ...)", a line per reason kind of t's invalid plans. */
void out_sweep_invalid(FILE *f, const sweep_table *t);
/* Each returns 0, or PS_EINPUT naming the file that could not be written. */
int out_sweep_csv(const char *path, const sweep_table *t, ps_error *err);
int out_sweep_json(const char *path, const sweep_table *t, ps_error *err);
int out_sweep_plot(const char *path, const sweep_table *t, ps_error *err); /* SVG */

/* ---- collective timings (out_collective.c) ---- */

/* The timings of `protosim collective`. */
typedef struct out_collective {
    const char *cluster; /* platform file, for the title */
    coll_kind kind;
    int gpus;
    coll_algo forced; /* COLL_ALGO_AUTO unless --algo */
    const double *sizes, *times;
    const coll_algo *algos; /* what each ran */
    int n;
} out_collective;

/* busbw / algbw of a collective (nccl-tests): 2(n-1)/n for all-reduce, (n-1)/n otherwise. */
double out_collective_bus_factor(coll_kind kind, int gpus);
/* csv_path NULL: the nccl-tests table on stdout; else CSV rows "bytes,time_s,algbw_GBps,
 * busbw_GBps,algo" to csv_path ("-": stdout). */
int out_collective_write(const char *csv_path, const out_collective *t, ps_error *err);

/* ---- a trace against the plan (out_compare.c) ---- */

/* What `protosim compare` tells: its tables, one per traced rank, and what they came from. */
typedef struct out_compare {
    const compare_table *t;
    int n;
    const char *strategy, *cluster;
} out_compare;

/* The tables: kind, measured, predicted, difference (ms and % of measured), largest first,
 * then the whole step, and the reconciliation of the predicted compute. */
void out_compare_text(FILE *f, const out_compare *x);
/* The same rows as JSON and CSV; 0, or PS_EINPUT naming the file that could not be written. */
int out_compare_json(const char *path, const out_compare *x, ps_error *err);
int out_compare_csv(const char *path, const out_compare *x, ps_error *err);

#endif
