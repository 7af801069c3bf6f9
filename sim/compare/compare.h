/* compare.h: a measured training step beside protosim's prediction of the same plan, kind by
 * kind (`protosim compare`): the trace's split (workloads/trace/trace_kinds.h) and the plan's,
 * compiled and simulated by the run path, on the traced GPU. */
#ifndef PROTOSIM_COMPARE_H
#define PROTOSIM_COMPARE_H

#include "../../workloads/trace/trace_kinds.h"
#include "../run/run.h"
#include "gemm_roles.h"

/* The rows of a comparison: the kinds, then these. The GEMM kind is shown as rows of its
 * layer roles (gemm_roles.h), which add up to it. */
enum {
    ROW_RESIDUAL = KIND_COUNT, /* predicted compute outside the per-kind op sums */
    ROW_EXPOSED,               /* exposed communication */
    ROW_HOST_BOUND,            /* host-bound gaps */
    ROW_IDLE,                  /* idle (with the pipeline bubble) */
    ROW_STEP,                  /* the whole step */
    ROW_COUNT
};
/* A row's name: the kind's (step_kind_names), or the step part's. */
const char *compare_row_name(int row);

/* The most rows a table has: the kinds and the step's parts, GEMM as up to ROLE_COUNT roles. */
#define COMPARE_MAX_ROWS (ROW_COUNT - 1 + ROLE_COUNT)

typedef struct compare_row {
    int row;       /* a kind or a step part (compare_row_name); KIND_GEMM: a row of GEMM roles */
    int role;      /* KIND_GEMM: the row's first role (gemm_roles.h); -1 otherwise */
    char name[96]; /* what the outputs call it: compare_row_name(row), or the roles' name */
    double measured_s, predicted_s;
} compare_row;

/* One traced rank against the same GPU of the plan. */
typedef struct compare_table {
    const char *trace; /* the trace's file (borrowed from the job) */
    int rank;          /* the plan's GPU: the trace's distributedInfo rank */
    int steps;         /* measured steps averaged */
    step_split measured, predicted;
    /* Predicted compute of that GPU: the per-kind sums come from the cost model over the op
     * graph (each op's forward, backward and recompute on the GPU's device and slowdown, x
     * micro-batches; the optimizer's tasks as simulated); simulated_compute_s is the
     * simulated compute tasks' time on the GPU, residual_s = simulated_compute_s - the
     * per-kind compute sums (host-bound stretching of segments, overlap slowdown). */
    double simulated_compute_s, residual_s;
    /* GEMM by layer role: measured.kind_s[KIND_GEMM] and predicted.kind_s[KIND_GEMM] split,
     * one row per role (or roles sharing a GEMM shape) */
    gemm_roles roles;                   /* its shapes freed */
    compare_row rows[COMPARE_MAX_ROWS]; /* largest |difference| first, the whole step last */
    int n_rows;
} compare_table;

/* Compare every rank of job with the plan of s on cluster c: tables[i] for job->ranks[i]
 * (allocated, *n = job->n_ranks; free with free()). The plan is compiled, simulated (every
 * task, no steady-state skipping) and summarized once. Errors: a family-dlrm plan, a traced
 * rank outside the plan, a traced rank without GPU events, the run path's errors; each
 * PS_EINPUT naming the file. */
int compare_job(const trace_job *job, const strategy *s, const cluster *c, compare_table **tables,
                int *n, ps_error *err);

#endif
