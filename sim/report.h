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
    /* The GPU with the least memory headroom (the most memory on a single-model cluster): its
     * estimate, rank and own HBM capacity. peak_memory_bytes > memory_capacity exactly when
     * some GPU does not fit. */
    double peak_memory_bytes;
    int peak_memory_rank;
    double memory_capacity;
    int busiest_rank; /* the GPU with the most compute time */
    /* The busiest GPU's iteration, split: compute + exposed_comm + bubble + idle = iteration_s.
     * exposed_comm: communicating while not computing; bubble (pipelined plans): neither
     * computing nor communicating between the iteration's start and the end of the pipeline
     * flush (the last backward of any stage): warm-up, waits between units, cool-down; idle:
     * the rest, after the flush (e.g. waiting on DP collectives or the optimizer). For 1F1B
     * with equal stages the bubble is the textbook (p - 1)(t_f + t_b). */
    double compute_s, exposed_comm_s, bubble_s, idle_s;
    double comm_s[CAT_COUNT]; /* busy time per communication category on that GPU */
    /* Largest labels by time on that GPU: passes of a stage's chunk ("bwd stage 3, layers
     * 18-23", "fwd embedding + layers 0-23 + LM head"), collectives ("tp all-gather", "dp grad
     * reduce-scatter"), pipeline sends, the optimizer step. */
    report_item top[REPORT_TOP];
    int n_top;
} report_summary;

void report_summarize(const compiled_plan *p, const htae_result *r, report_summary *out);
#endif
