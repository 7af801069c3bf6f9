/* report.h: what a run tells its user: the summary (iteration time, throughput, MFU, memory,
 * where the time went on the busiest GPU), computed from the compiled plan and the timeline. */
#ifndef PROTOSIM_REPORT_H
#define PROTOSIM_REPORT_H

#include <stdio.h>

#include "../strategies/compile.h"
#include "../topology/cluster.h"
#include "htae.h"

#define REPORT_TOP 5

typedef struct report_item {
    int label;
    double seconds;
} report_item;

typedef struct report_summary {
    double iteration_s, samples_per_s, tokens_per_s, mfu;
    double peak_memory_bytes;
    int peak_memory_rank;
    double memory_capacity;
    int busiest_rank; /* the GPU with the most compute time */
    /* The busiest GPU's iteration, split: compute + exposed_comm + bubble + idle = iteration_s.
     * exposed_comm: communicating while not computing; bubble: idle before its last backward
     * when pipelined (waiting on other stages); idle: the rest (e.g. waiting at the end). */
    double compute_s, exposed_comm_s, bubble_s, idle_s;
    double comm_s[CAT_COUNT];    /* busy time per communication category on that GPU */
    report_item top[REPORT_TOP]; /* largest labels by time on that GPU */
    int n_top;
} report_summary;

void report_summarize(const compiled_plan *p, const htae_result *r, report_summary *out);
#endif
