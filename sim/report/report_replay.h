/* report_replay.h: what a replay tells its user: measured against predicted step, where the
 * replayed step's time went (GPU active and idle, communication, Lin et al.'s host overheads). */
#ifndef PROTOSIM_REPORT_REPLAY_H
#define PROTOSIM_REPORT_REPLAY_H

#include "../../workloads/trace/trace.h"
#include "../engine/htae.h"

typedef struct replay_summary {
    int rank;           /* the job rank (trace) reported: the one with the longest predicted step */
    int steps;          /* steps replayed */
    double iteration_s; /* predicted step: trace_step_median of the predicted steps */
    double measured_step_s; /* trace_step_median of the measured ProfilerSteps */
    double *predicted;      /* [steps] each predicted step: its main thread's span (the whole
                               replay without ProfilerSteps) */
    /* Per step, over the replayed steps of that rank: GPU streams busy (union), not busy,
     * collectives in flight (union); host time by trace_overhead (modelled durations). */
    double gpu_active_s, gpu_idle_s, comm_s;
    double overheads[TRACE_OVH_COUNT];
} replay_summary;

void report_replay_summarize(const trace_job *j, const exec_graph *g, uint32_t *const *task_of,
                             const htae_result *r, replay_summary *out);
void report_replay_free(replay_summary *s);

/* Lin et al.'s overheads of one op type, seconds per step. between_ops: the gap before an op
 * on its thread counts for that op. */
typedef struct replay_op_overheads {
    int name; /* into j->names; -1: the gap after a thread's last op */
    double count, launches;
    double s[TRACE_OVH_COUNT];
} replay_op_overheads;

/* Per op type of job rank `rank`, largest total first; *n of them. Free with free(). */
replay_op_overheads *report_replay_overheads(const trace_job *j, int rank, int *n);

#endif
