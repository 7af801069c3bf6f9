/* profile.h: the profile database (measured GPU kernel times by op, input shapes, dtype and
 * device, `protosim profile`), its JSON file, and how an op of the op graph matches it. */
#ifndef PROTOSIM_PROFILE_H
#define PROTOSIM_PROFILE_H

#include "../topology/cluster.h"
#include "../workloads/workload.h"
#include "cost.h"

/* One measured op: a PyTorch op (aten::addmm) on inputs of these shapes and this dtype took
 * `seconds` of GPU kernel time (the median of `count` occurrences). */
typedef struct profile_entry {
    char op[96];
    char dtype[24]; /* fp32, fp16, bf16, fp8, or the trace's type name when none of those */
    int n_inputs;
    int *ndim;    /* [n_inputs]: dimensions of each input, -1 for one that is not a tensor's
                     shape (a tensor list) */
    int *first;   /* [n_inputs]: offset of its dimensions in dims */
    double *dims; /* all inputs' dimensions, in order */
    double seconds;
    int count;
} profile_entry;

typedef struct profile_db {
    char file[512];  /* where it was read from, "" when built in memory */
    char device[48]; /* a devices.yaml name */
    profile_entry *e;
    int n;
    size_t cap;
} profile_db;

/* Read a table written by profile_db_write. Not JSON (file, line, column), a missing or
 * mistyped field, a negative or non-finite time, a count below 1 are PS_EINPUT errors naming
 * the file and the field ("entries[3].seconds"). */
int profile_db_load(const char *path, profile_db *out, ps_error *err);
/* Write db as JSON ({"protosim_profile": 1, "device", "entries": [...]}, docs/design-notes.md
 * "Profile database"), entries in db order. */
int profile_db_write(const char *path, const profile_db *db, ps_error *err);
/* Append an entry (copies op, dtype and the shapes); the db owns it. */
void profile_db_add(profile_db *db, const char *op, const char *dtype, int n_inputs,
                    const int *ndim, const double *dims, double seconds, int count);
void profile_db_free(profile_db *db);

/* The devices.yaml name of a GPU as CUDA names it (deviceProperties' "name": "NVIDIA
 * A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "NVIDIA H100 80GB HBM3"): into out, 0; -1 when the
 * name is not one of the known GPUs (docs/design-notes.md has the map). */
int profile_device_of_cuda_name(const char *cuda_name, char *out, size_t cap);

/* The dtype name of a trace's "Input type" ("float" -> fp32, "c10::Half" -> fp16,
 * "c10::BFloat16" -> bf16, "c10::Float8_e4m3fn" -> fp8), or NULL when it is not a float type. */
const char *profile_dtype_of_torch_type(const char *type);

/* How an op of the op graph matched the table in one pass. A pass has one part (forward, or an
 * attention or norm backward) or two (a GEMM's backward: dX, then dW); each part is measured
 * (an entry matched) or modelled. */
typedef struct profile_hit {
    int parts, matched;
    const profile_entry *entry[2]; /* the entry of each part, NULL when modelled */
    double seconds;                /* the pass's kernel time with the table */
} profile_hit;

/* The op's kernel time in `pass` with the table, in hit->seconds: the measured time of each
 * matched part, the cost model's for the others (`model_seconds`: cost_op_kernel_seconds of
 * op, pass, prec, dev). op is the part one rank runs (sharded), full the op graph's op (a GEMM
 * has a bias when its parameters exceed k x n), model the model it is of. Returns
 * hit->matched (0: the model's time, hit->seconds = model_seconds). Nothing matches on another
 * device than the table's (dev->name), and never what docs/design-notes.md lists as not
 * matched. */
int profile_match_op(const profile_db *db, const workload_model *model, const workload_op *full,
                     const workload_op *op, op_pass pass, precision_t prec, const device_spec *dev,
                     double model_seconds, profile_hit *hit);

/* The record of a compile with a table: every op pass of one micro-batch on the reference ranks
 * (the first rank of each pipeline stage: every model chunk once), with its modelled and used
 * kernel times. */
typedef struct profile_use {
    char name[48]; /* the op graph's name, layers.3.mlp.fc1 */
    int pass;      /* op_pass */
    int replay;    /* a forward replayed for recompute */
    int parts, matched;
    char entry_op[96];  /* the first matched entry's op, "" */
    double model, used; /* kernel seconds: the cost model's, and those the plan uses */
    double measured;    /* the part of used the table's entries give */
} profile_use;

typedef struct profile_stats {
    char file[512], device[48];
    int device_in_cluster; /* some GPU of the cluster is the table's device */
    profile_use *use;
    int n;
    size_t cap;
} profile_stats;

/* An empty record for a compile with db on cluster c (allocated; free with profile_stats_free,
 * then free()). */
profile_stats *profile_stats_create(const profile_db *db, const cluster *c);
void profile_stats_add(profile_stats *st, const workload_op *op, op_pass pass, int replay,
                       const profile_hit *hit, double model);
void profile_stats_free(profile_stats *st);

/* The record by op name, the layer left out (layers.*.mlp.fc1), pass and replay, in order of
 * first appearance; totals over every op pass. */
typedef struct profile_group {
    char name[48];
    int pass, replay;
    int ops, matched; /* op passes; those with at least one part measured */
    char entry_op[96];
    double model, used, measured;
} profile_group;

typedef struct profile_summary {
    int ops, matched;
    double model, used, measured; /* kernel seconds, one micro-batch through every chunk */
    profile_group *g;
    int n;
} profile_summary;

void profile_summarize(const profile_stats *st, profile_summary *out);
void profile_summary_free(profile_summary *s);

#endif
