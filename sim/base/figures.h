/* figures.h: a simulated plan's headline figures, the one set every writer reads (run text and
 * JSON, sweep table, CSV, JSON and plot, merge): computed once by report_summarize. */
#ifndef PROTOSIM_FIGURES_H
#define PROTOSIM_FIGURES_H

/* Plain data (no pointers): a sweep worker sends it back through a pipe inside its record. */
typedef struct plan_figures {
    double iteration_s, samples_per_s, tokens_per_s, mfu;
    /* The GPU with the least memory headroom: its estimate and its own HBM capacity;
     * peak_memory_bytes > memory_capacity_bytes exactly when some GPU does not fit. */
    double peak_memory_bytes, memory_capacity_bytes;
    /* The busiest GPU's iteration, split: compute + exposed_comm + bubble + idle = iteration_s
     * (sim/report/report.h says what each holds). */
    double compute_s, exposed_comm_s, bubble_s, idle_s;
} plan_figures;

#endif
