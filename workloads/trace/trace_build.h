/* trace_build.h: what the files of the trace reader share (workloads/trace/trace*.c only): the
 * per-trace build state, its tools (trace_build.c, which calls none of the others) and the
 * passes over it (trace_cpu.c, trace_coll.c, trace_params.c, called by trace.c). */
#ifndef PROTOSIM_TRACE_BUILD_H
#define PROTOSIM_TRACE_BUILD_H

#include "trace.h"
#include "trace_read.h"

/* Correlation id -> event position: open addressing, linear probing. */
typedef struct tb_map {
    long long *keys;
    int *vals;
    size_t cap; /* a power of two, or 0 */
} tb_map;

/* The tools (trace_build.c). */
void tb_map_init(tb_map *m, size_t n);
void tb_map_put(tb_map *m, long long key, int val);
int tb_map_get(const tb_map *m, long long key); /* -1 if absent */
void tb_map_free(tb_map *m);

/* How a runtime call synchronizes with the GPU. */
enum { SYNC_NONE, SYNC_DEVICE, SYNC_STREAM, SYNC_EVENT, SYNC_COPY };

/* Per-trace build state; arrays indexed by event position are [te->n]. */
typedef struct build {
    trace_job *j;
    trace_rank *r;
    trace_events *te;
    const char *path;
    double w0, w1; /* the replayed window, us */
    double *step_start;
    int n_steps;
    int main_thread;
    tb_map corr;
    int *launch_of;      /* GPU event -> the runtime call that launched it, -1; or
                            LAUNCH_BEFORE_TRACE: queued before the trace began (trace.c) */
    int *gpu_of;         /* runtime call -> the (first) GPU event it launched, -1 */
    int *launch_op;      /* runtime call -> its op (the launch part of a blocking copy), -1 */
    int *wait_op;        /* runtime call -> its synchronizing op, -1 */
    int *gpu_op;         /* GPU event -> its op, -1 */
    uint8_t *sync_kind;  /* runtime call -> SYNC_* */
    int *sync_stream;    /* runtime call -> the stream a GPU-side sync event names, -1 */
    int *lane_of_stream; /* [te->n_streams] */
    int *lane_of_thread; /* [te->n_tids]: a CPU thread's lane, -1 when it has none */
    int *ev_of_op;       /* GPU op -> its event position, -1 for CPU ops */
    double *end_s;       /* op -> its measured end (s from the window's start) */
    int *comm_ev;        /* positions of the communication annotations (trace_coll.c) */
    int n_comm_ev;
    size_t cap_end;
} build;

enum { LAUNCH_BEFORE_TRACE = -2 };

uint32_t tb_add_op(build *b, trace_op op);
void tb_add_edge(build *b, uint32_t from, uint32_t to);
int tb_step_of(const build *b, double ts);
/* The shapes of cpu_op event e (NULL: none) as a call of the rank; its index (0: none). */
int32_t tb_call(build *b, const trace_ev *e);
int tb_name(build *b, const char *name);
/* The job's name table freed (trace_job_name fills it). */
void tb_names_free(trace_job *j);
/* In time order, the enclosing event first at equal starts. */
void tb_sort_events(trace_ev **v, int n);
/* TorchScript module calls that the profiler records as cpu_ops ("forward", "<forward op>",
 * "<backward op>") wrap many operators: the operators inside are the ops. So does a step span
 * that older profilers recorded as a cpu_op ("ProfilerStep#3"). */
int tb_is_module_call(const char *name);

/* trace_cpu.c: the CPU threads' lanes. */
void tb_build_cpu_lanes(build *b);
/* trace_coll.c: an NCCL kernel's collective from its launch's annotations; inferred waits. */
int tb_coll_info(build *b, int kernel, trace_op *op, ps_error *err);
void tb_infer_waits(build *b, double gap_us);
/* trace_params.c: the gradient collectives and the forward ops whose parameters they carry
 * (trace_rank.needs, n_grad_colls, params_why; docs/design-notes.md, "Gradient priority"). */
void tb_infer_params(build *b);
/* trace_chakra.c: whether a file's first bytes (gzip or not) are not JSON: a Chakra trace is
 * protobuf; and Chakra execution traces into the job's ranks (j->ranks allocated for n_paths). */
int tb_is_chakra_file(const char *path);
int tb_chakra_job(trace_job *j, const char *const *paths, int n_paths, ps_error *err);
/* trace_et.c: a PyTorch execution trace (ExecutionTraceObserver's JSON) linked to the rank's
 * CPU ops: its tensors' producers before their consumers on other threads, as edges. */
int tb_et_link(build *b, const char *et_path, ps_error *err);
/* trace.c: one trace into job rank r (for trace_graph.c); et_path: its execution trace, or
 * NULL. */
int tb_build_rank(trace_job *j, trace_rank *r, trace_events *te, const char *path,
                  const char *et_path, int steps, ps_error *err);

#endif
