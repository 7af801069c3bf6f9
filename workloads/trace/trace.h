/* trace.h: a PyTorch profiler (Kineto) trace read into the traced graph: per rank, CPU threads and
 * CUDA streams as lanes of ops in program order, with the dependencies between them. */
#ifndef PROTOSIM_TRACE_H
#define PROTOSIM_TRACE_H

#include <stdint.h>

#include "../../sim/base/error.h"
#include "../../sim/base/graph.h"

/* Lin et al.'s host overheads: where a CPU thread's time goes, op by op (an op is the outermost
 * `cpu_op` of its thread). A CUDA runtime call is TRACE_OVH_LAUNCH; the rest of the thread's
 * time is split by the op it falls in: before the op's first launch, between two of its
 * launches, after its last launch, or outside every op (between consecutive ops). An op that
 * launches nothing counts wholly as before its first launch. */
typedef enum {
    TRACE_OVH_BEFORE_FIRST_LAUNCH,
    TRACE_OVH_BETWEEN_LAUNCHES,
    TRACE_OVH_AFTER_LAST_LAUNCH,
    TRACE_OVH_BETWEEN_OPS,
    TRACE_OVH_LAUNCH,
    TRACE_OVH_COUNT,
    /* not an overhead: a thread other than the main one outside its ops waits for work */
    TRACE_OVH_IDLE = TRACE_OVH_COUNT
} trace_overhead;
extern const enum_names trace_overhead_names; /* before_first_launch, ..., launch */

typedef enum {
    TRACE_CPU,           /* a piece of a CPU thread's time between runtime calls (measured) */
    TRACE_RUNTIME,       /* a CUDA runtime call (its own time; a synchronizing call's wait is not in
                      it: its edges make it wait for the GPU work it covers) */
    TRACE_GPU,           /* a kernel, copy or memset on a CUDA stream (measured) */
    TRACE_COLL,          /* an NCCL kernel: a collective of the executor */
    TRACE_COMM_MEASURED, /* an NCCL kernel the executor does not model (broadcast, send/recv,
                           reduce; or of unknown size): its measured time, like a kernel's */
    TRACE_SEND,          /* a point-to-point send of `bytes` to rank `peer` (a Chakra send
                            node): a transfer of the executor */
    TRACE_RECV           /* its arrival on the receiver (a Chakra receive node): no time of its
                            own, done when the matching send's bytes have arrived */
} trace_op_kind;

typedef struct trace_op {
    uint8_t kind;      /* trace_op_kind */
    uint8_t overhead;  /* TRACE_CPU, TRACE_RUNTIME: its trace_overhead */
    uint8_t coll;      /* TRACE_COLL: coll_kind */
    int32_t lane;      /* into trace_rank.lanes */
    int32_t name;      /* into trace_job.names: kernel or call name; a CPU piece: its op's */
    int32_t op;        /* CPU, runtime: the name of the op it falls in, -1 outside ops; GPU: the
                         op that launched it, -1 if none */
    int32_t op_seq;    /* CPU, runtime: which op of its thread (0, 1, ...), -1 outside ops */
    int32_t step;      /* replayed step it belongs to, 0-based */
    int32_t event;     /* index in traceEvents of the event it comes from (messages) */
    double start;      /* measured, seconds from the window's start */
    double seconds;    /* duration it keeps in the replay (TRACE_COLL: measured, unused) */
    double lag;        /* GPU ops: how long after its last explicit predecessor (its launch, a
                         stream it waits for) it started, measured, when that bound it: the
                         launch latency of an idle GPU; 0 otherwise */
    double bytes;      /* TRACE_COLL: the executor's per-rank buffer size */
    int32_t group_n;   /* TRACE_COLL: communicator size */
    int32_t group_at;  /* TRACE_COLL: its members, group_n of them ascending, at
                         trace_rank.group_ranks[group_at]; -1: the block of group_n consecutive
                         ranks holding the rank (the trace names no members) */
    int32_t call;      /* runtime, GPU: the launching op's shapes, into trace_rank.calls; 0:
                         none known (calls[0] is the empty call) */
    int32_t optimizer; /* runtime, GPU: 1 if launched inside an `Optimizer.step#` span */
    int32_t peer;      /* TRACE_SEND: the receiving rank; TRACE_RECV: the sending rank */
    int32_t tag;       /* TRACE_SEND, TRACE_RECV: what pairs a send with its receive */
    uint8_t grad;      /* TRACE_COLL: 1 if a gradient collective (trace_params.c) */
    uint8_t floating;  /* 1: may overtake other floating ops of its lane (graph_set_floating) */
} trace_op;

/* The innermost cpu_op around a launch, with the shapes the profiler recorded (record_shapes:
 * `Input Dims`, `Input type`); the what-ifs that re-cost kernels read them. */
#define TRACE_CALL_INPUTS 4
#define TRACE_CALL_DIMS   4
typedef struct trace_call {
    int32_t name; /* into trace_job.names, -1 for calls[0] */
    int32_t n_in; /* inputs with shapes, at most TRACE_CALL_INPUTS; 0: none recorded */
    int32_t rank[TRACE_CALL_INPUTS];                 /* dims of each input (0: a scalar) */
    double dims[TRACE_CALL_INPUTS][TRACE_CALL_DIMS]; /* the first TRACE_CALL_DIMS of each */
    int32_t type[TRACE_CALL_INPUTS]; /* `Input type` into trace_job.names, -1 if none */
} trace_call;

typedef struct trace_lane {
    int is_cpu;
    char name[48]; /* "cpu main", "cpu thread 2", "gpu stream 7" */
} trace_lane;

/* One trace: one rank's window. ops of one lane are in program order; edges are pairs
 * (before, after) of op indices beyond that order: a launch before its kernel, GPU work before
 * the synchronizing call that waits for it, a recorded event before the stream that waits on
 * it. */
typedef struct trace_rank {
    char file[512];
    int rank;        /* distributedInfo.rank (0 without it) */
    char device[64]; /* deviceProperties' GPU name, "" if the trace has none */
    trace_lane *lanes;
    int n_lanes;
    trace_op *ops;
    uint32_t n_ops;
    size_t cap_ops;
    uint32_t *edges; /* [2 * n_edges] */
    uint32_t n_edges;
    size_t cap_edges;
    trace_call *calls; /* [n_calls], calls[0] empty */
    int n_calls;
    size_t cap_calls;
    int n_steps;           /* replayed ProfilerStep spans (all of them), or 1: the whole window */
    int first_reported;    /* the steps reported are [first_reported, n_steps) (--steps N: the
                              last N; those before are replayed for the work they leave in
                              flight, not reported) */
    int has_steps;         /* 1 if they are ProfilerStep spans */
    double *measured_step; /* [n_steps] seconds */
    int main_lane;         /* the thread that holds the steps */
    int n_inferred;        /* cross-stream waits inferred from the timing */
    int n_blocked;         /* runtime calls found blocked by GPU work (the launch queue) */
    int n_backlog;         /* GPU events queued before the trace began (no runtime call),
                              replayed as queued at the window's start */
    int *group_ranks;      /* members of the communicators the trace names */
    int n_group_ranks;
    int n_comm_measured; /* NCCL kernels kept at their measured time (TRACE_COMM_MEASURED) */
    char comm_measured_what[64]; /* the first one's kind, for the warning */
    int n_thread_waits;          /* CPU pieces found waiting for another thread */
    int n_thread_wakes;          /* idle threads found woken by the thread that then waited */
    int n_grad_colls;            /* gradient collectives found (trace_params.c) */
    uint32_t *needs;             /* pairs (GPU op, gradient collective): the op was launched by
                                    a forward op whose parameters' gradients it carries */
    uint32_t n_needs;
    size_t cap_needs;
    char params_why[320]; /* why the parameters of the gradient collectives could not be
                                    inferred, "" if they were (or there are none) */
    int steady;           /* 1: its last step is a copy of the one before (what-if
                                    priority:gradients): the predicted step is the period */
    int et_nodes, et_linked, et_edges; /* its execution trace's op nodes, those linked to the
                                          Kineto trace, and the edges across threads they gave */
    int chakra; /* 1: read from a Chakra execution trace (trace_chakra.c): its ops are nodes,
                   `event` a node's position in the file, and nothing was measured (the
                   measured step is 0) */
} trace_rank;

typedef struct trace_job {
    int world_size;
    trace_rank *ranks; /* one per trace, in the order given */
    int n_ranks;
    char **names; /* interned op, call and kernel names */
    int n_names;
    size_t cap_names;
    struct trace_names *index; /* name lookup */
} trace_job;

/* Read traces (JSON, or gzip-compressed JSON) into a job: one trace is the whole job taken as
 * SPMD, several are one rank each (distinct distributedInfo ranks, one world size). Chakra
 * execution traces (protobuf, told apart by content; trace_chakra.c) are one rank each, the
 * rank from the file's name (NAME.RANK.et), the world every file given. Every
 * ProfilerStep span is replayed; steps: report the last `steps` of them, 0: all. Every input
 * error (not JSON, not a Kineto trace, no GPU events, an unknown device, a GPU event without a
 * launch that runs after work launched in the window, an NCCL kernel without a communication
 * annotation or of a kind not modelled) is a PS_EINPUT error naming the file and the event
 * (field "traceEvents[i]"). */
int trace_job_load(const char *const *paths, int n_paths, int steps, trace_job *out, ps_error *err);
/* The same with each Kineto trace's PyTorch execution trace (ExecutionTraceObserver's JSON):
 * ets[i] for paths[i] (ets NULL, or an entry NULL: none). An ET node links to the Kineto op
 * whose "Record function id" (PyTorch 2.2 on), else "External id", is its rf_id; a tensor an op
 * writes and an op on another thread later reads is an edge between them (trace_et.c). Its
 * errors name the ET file and node (field "nodes[i]..."). */
int trace_job_load_et(const char *const *paths, const char *const *ets, int n_paths, int steps,
                      trace_job *out, ps_error *err);
void trace_job_free(trace_job *j);

/* The first cap - 1 bytes of a file, decompressed when it is gzip, NUL-terminated into buf: the
 * count read, or -1 when it cannot be read (for telling files apart, cli/file_kind.c). */
int trace_file_head(const char *path, char *buf, int cap);

/* The index of `name` in j->names, interned if new. */
int trace_job_name(trace_job *j, const char *name);

/* The [batch x] (m x k).(k x n) GEMM a call computes, from its recorded shapes: mm, addmm, bmm,
 * baddbmm, and convolutions as implicit GEMMs (m = N H W, n = K, k = C/groups R S: the output
 * size is not recorded, the input's H W stands for it); *a and *w: the inputs of its two
 * operands (their `Input type` is c->type[*a], c->type[*w]). 0 if the call is none of these or
 * its shapes are missing (the outputs then hold nothing to read). */
int trace_call_gemm(const trace_job *j, const trace_call *c, int *a, int *w, double *b, double *m,
                    double *n, double *k);

/* Median of v[0..n) with the rule of measured steps: the first one left out when there are
 * more than two. */
double trace_step_median(const double *v, int n);

/* The execution graph of a job on n_gpus GPUs (ranks in order): each traced rank's lanes as
 * streams (CPU threads as STREAM_KIND_CPU), its ops as tasks, NCCL kernels as collectives over
 * the block of group_n consecutive ranks holding the rank; ranks without a trace take part in
 * collectives as stand-ins. task_of[r][i]: the task of op i of job rank r (out, allocated,
 * free with trace_tasks_free). A world larger than n_gpus, or collectives that do not match
 * across traces, are PS_EINPUT errors. */
int trace_job_graph(const trace_job *j, int n_gpus, exec_graph **out, uint32_t ***task_of,
                    ps_error *err);
void trace_tasks_free(const trace_job *j, uint32_t **task_of);

#endif
