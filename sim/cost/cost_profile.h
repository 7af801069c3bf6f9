/* cost_profile.h: the cost model's use of a profile database (`run --profile`): which op pass
 * of the op graph a measured PyTorch op matches, and the record of what matched. */
#ifndef PROTOSIM_COST_PROFILE_H
#define PROTOSIM_COST_PROFILE_H

#include "../../topology/cluster.h"
#include "../../workloads/trace/trace_profile.h"
#include "../../workloads/workload.h"
#include "cost.h"

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
    int partly;       /* of those, passes with a part left to the cost model */
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
