/* trace_kinds.h: where one GPU's training step goes, kind by kind (`protosim compare`): the
 * kinds and the one table that sorts a traced kernel into them by its name and the ops that
 * launched it, and the split of a step into GPU time per kind, exposed communication,
 * host-bound gaps and idle, the same arithmetic for a trace and for a simulated timeline. */
#ifndef PROTOSIM_TRACE_KINDS_H
#define PROTOSIM_TRACE_KINDS_H

#include "trace.h"

/* The kinds of GPU work, compute first, then communication (step_kind_is_comm). */
typedef enum {
    KIND_GEMM,      /* matrix multiplies (linear layers, the LM head) */
    KIND_ATTENTION, /* fused attention (flash, cuDNN, memory-efficient) and its parts */
    KIND_NORM_ELEM, /* norms, activations, softmax, dropout, adds, copies, fills, reductions */
    KIND_EMB_LOSS,  /* the embedding lookup and its gradient, the loss (log-softmax, NLL) */
    KIND_OPTIMIZER, /* the optimizer step (launched inside Optimizer.step, or its kernels) */
    KIND_OTHER,     /* kernels no pattern names */
    KIND_ALLREDUCE,
    KIND_ALLGATHER,
    KIND_REDUCE_SCATTER,
    KIND_ALLTOALL,
    KIND_SENDRECV,   /* point-to-point (pipeline sends and receives) */
    KIND_OTHER_COMM, /* broadcast, reduce, other NCCL kernels */
    KIND_COUNT
} step_kind;

extern const char *const step_kind_names[KIND_COUNT]; /* "GEMM", ..., "all-reduce", ... */
int step_kind_is_comm(int kind);

/* The kind of a traced GPU event: its kernel name, the innermost op around its launch (`call`,
 * "aten::mm"; NULL if none) and the outermost (`op`, "autograd::engine::evaluate_function:
 * EmbeddingBackward0"; NULL if none); `optimizer`: launched inside an Optimizer.step span. The
 * first row of trace_kinds.c's table that matches wins (patterns are case-insensitive
 * substrings); no row: KIND_OTHER. */
int trace_kind_of(const char *kernel, const char *call, const char *op, int optimizer);

/* One busy interval of a GPU: a kernel, copy or collective on any of its streams. issued: when
 * its host issued it (a launch's start; a task's issue), -INFINITY when before the window. */
typedef struct step_span {
    double t0, t1;
    int kind; /* step_kind */
    double issued;
} step_span;

/* One GPU's step, seconds (a trace's: the mean over its reported steps). kind_s: GPU time per
 * kind (streams overlapping count each). busy_s: the union of every span; exposed_comm_s: the
 * part of it when only communication runs; host_bound_s: the gaps between busy intervals
 * whose next span the host issued after the gap began (the GPU waited for the host); idle_s:
 * the rest of the step (step_s - busy_s - host_bound_s; negative when the step's GPU work
 * outlasts its span: a GPU-bound step runs into the next). */
typedef struct step_split {
    double kind_s[KIND_COUNT];
    double busy_s, exposed_comm_s, host_bound_s, idle_s, step_s;
} step_split;

/* Add the split of one step of length step_s made of spans v[0..n) (sorted here) to *out. */
void step_split_add(step_span *v, int n, double step_s, step_split *out);
/* *s scaled by f (a sum over steps into their mean). */
void step_split_scale(step_split *s, double f);

/* The split of rank r of job j: its reported steps (ProfilerStep spans, or the window), each a
 * step of its span's length made of the GPU events launched in it, averaged. Returns the
 * number of GPU events counted (0: none). */
int trace_step_split(const trace_job *j, int r, step_split *out);
/* Each GPU event that trace_step_split counts for rank r of j, over its reported steps (their
 * sum, not their mean): fn(ctx, the event's index in j->ranks[r].ops, its kind), in the ops'
 * order. What compare refines a kind by (the GEMMs' layer roles). */
void trace_step_events(const trace_job *j, int r, void (*fn)(void *ctx, uint32_t op, int kind),
                       void *ctx);

#endif
