/* report.h: what a run tells its user: the summary (iteration time, throughput, MFU, memory,
 * where the time went on the busiest GPU), computed from what it needs of the compiled plan
 * (report_plan: the report never reads the strategy) and the timeline. */
#ifndef PROTOSIM_REPORT_H
#define PROTOSIM_REPORT_H

#include <stdio.h>

#include "../base/figures.h"
#include "../engine/htae.h"

#define REPORT_TOP 5

typedef struct report_item {
    int label;
    double seconds;
} report_item;

/* What the report reads of a compiled plan (sim/run/run.h's run_summarize fills it from one):
 * its graph, the work of one iteration and the GPU with the least memory headroom
 * (compiled_plan_tightest_rank). Borrowed, plain. */
typedef struct report_plan {
    const exec_graph *graph;
    int gpus, pp;
    double samples_per_iter, tokens_per_iter, model_flops_per_iter, peak_flops_per_gpu;
    int memory_rank;
    double memory_bytes, memory_capacity_bytes; /* that GPU's estimate and its own HBM */
} report_plan;

typedef struct report_summary {
    /* iteration time, throughput, MFU; the memory of the GPU with the least headroom (the most
     * memory on a single-model cluster); the busiest GPU's breakdown: exposed_comm:
     * communicating while not computing; bubble (pipelined plans): neither computing nor
     * communicating between the iteration's start and the end of the pipeline flush (the last
     * backward of any stage): warm-up, waits between units, cool-down; idle: the rest, after
     * the flush (e.g. waiting on DP collectives or the optimizer). For 1F1B with equal stages
     * the bubble is the textbook (p - 1)(t_f + t_b). */
    plan_figures fig;
    int peak_memory_rank;     /* the GPU of fig.peak_memory_bytes */
    int busiest_rank;         /* the GPU with the most compute time: fig's breakdown is its */
    double comm_s[CAT_COUNT]; /* busy time per communication category on that GPU */
    /* Largest labels by time on that GPU: passes of a stage's chunk ("bwd stage 3, layers
     * 18-23", "fwd embedding + layers 0-23 + LM head"), collectives ("tp all-gather", "dp grad
     * reduce-scatter"), pipeline sends, the optimizer step. */
    report_item top[REPORT_TOP];
    int n_top;
} report_summary;

/* The summary of plan p simulated into r (the figures' formulas: here, once). */
void report_summarize(const report_plan *p, const htae_result *r, report_summary *out);
/* The summary of a timeline of T seconds that is (p1, r1) with K periods inserted, given (p2,
 * r2): the same timeline with one period inserted (the steady state's shorter plan and its
 * one-period expansion: sim/run/steady.h). Every time figure is an integral over the timeline
 * (compute, exposed communication, bubble and idle of a GPU, its busy time per category and
 * per label), so the periods add the same to each: Q = Q1 + K (Q2 - Q1). The busiest GPU and
 * the largest labels are chosen among the extrapolated figures; the plan figures (throughput,
 * MFU, memory) are p2's, which are the whole plan's. */
void report_summarize_periodic(const report_plan *p1, const htae_result *r1, const report_plan *p2,
                               const htae_result *r2, int K, double T, report_summary *out);

/* The critical path of the simulated iteration, walked backwards from the task that ends last.
 * A task's predecessors are its explicit edges' sources and the previous task of its stream;
 * for a collective task, those of every member (all members start together when the last one
 * arrives, so the member whose predecessor ended last is the one the collective waited for).
 * At each task the walk steps to the predecessor that ends latest: if it ends at the task's
 * start (within 1e-12 s) the task is charged from that end to its own end; otherwise the gap
 * is a wait item ("host issue" when the waiting task is HOST_ISSUE: its host thread had not
 * issued it yet; else "wait"), and the walk goes on from that predecessor. A task with no
 * predecessor ends the walk, with a wait item from 0 to its start if it started later. So the
 * items tile [0, makespan]: their seconds add up to the iteration time (up to rounding).
 * Items are in time order, zero-length ones dropped and consecutive ones with the same name
 * and kind merged. Cost: O(tasks + edges) to build predecessor lists, then the path. */
typedef struct report_path_item {
    char *name;       /* "fwd stage 0, layers 0-11 (GPU 3)", "pp send (GPU 3 -> 4)", "tp
                         all-reduce" (a collective spans its group), "host issue (GPU 3)" */
    const char *kind; /* "compute", "tp-comm", "pp-comm", "dp-comm", "cp-comm" (the task's
                         stream), "wait" */
    double seconds;
} report_path_item;

typedef struct report_critical_path {
    report_path_item *items; /* in time order; their names point into names */
    int n;
    char **names; /* each distinct name once */
    int n_names;
} report_critical_path;

/* g finalized and run into r. Free with report_critical_path_free. */
void report_critical_path_create(const exec_graph *g, const htae_result *r,
                                 report_critical_path *out);
/* The critical path of (g2, r2) with K - 1 more copies of the period it holds beyond (g1, r1)
 * (as report_summarize_periodic): the walk on a periodic timeline repeats a period's steps, so
 * the walk on (g2, r2) is that on (g1, r1) with one period's steps inserted, found as what lies
 * between their common latest and earliest steps (each step's seconds within tol); those are
 * inserted K times. Returns 0 (nothing in *out) when the two walks do not line up so. Names
 * are g2's. */
int report_critical_path_periodic(const exec_graph *g1, const htae_result *r1, const exec_graph *g2,
                                  const htae_result *r2, int K, double tol,
                                  report_critical_path *out);
void report_critical_path_free(report_critical_path *cp);
/* The path's largest names by total time (items of one name summed), largest first, at most
 * max of them, into top (names borrowed from cp); returns how many. */
int report_critical_path_top(const report_critical_path *cp, report_path_item *top, int max);
#endif
