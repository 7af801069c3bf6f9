/* report.c: summaries from the executor's timeline: the busiest GPU's breakdown by interval
 * arithmetic on its streams and its top items. The writers are the command's (sim/cli). */
#include "report.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

typedef struct interval {
    double a, b;
} interval;

static int by_start(const void *x, const void *y)
{
    const interval *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge overlapping intervals in place; returns the new count. */
static int merge(interval *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, by_start);
    int m = 0;
    for (int i = 1; i < n; i++) {
        if (v[i].a <= v[m].b) {
            if (v[i].b > v[m].b)
                v[m].b = v[i].b;
        } else {
            v[++m] = v[i];
        }
    }
    return m + 1;
}

static double total(const interval *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i].b - v[i].a;
    return s;
}

/* Length of the part of union `u` that lies inside union `w` (both merged). */
static double overlap(const interval *u, int nu, const interval *w, int nw)
{
    double s = 0;
    int j = 0;
    for (int i = 0; i < nu; i++) {
        while (j < nw && w[j].b <= u[i].a)
            j++;
        for (int k = j; k < nw && w[k].a < u[i].b; k++) {
            double a = u[i].a > w[k].a ? u[i].a : w[k].a;
            double b = u[i].b < w[k].b ? u[i].b : w[k].b;
            if (b > a)
                s += b - a;
        }
    }
    return s;
}

/* Busy time inside [0, t] of a merged union. */
static double busy_before(const interval *u, int n, double t)
{
    double s = 0;
    for (int i = 0; i < n && u[i].a < t; i++)
        s += (u[i].b < t ? u[i].b : t) - u[i].a;
    return s;
}

/* End of the pipeline flush: when the last backward of any stage ends (0 without backward). */
static double flush_end(const compiled_plan *p, const htae_result *r)
{
    const htae_graph *g = p->graph;
    double end = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE && g->tasks[t].category == CAT_BACKWARD &&
            r->end[t] > end)
            end = r->end[t];
    return end;
}

/* The busiest GPU's iteration split into compute, exposed communication, bubble and idle.
 *
 * Bubble (pipelined plans only) is the time in [0, F] during which the GPU neither computes
 * nor communicates, F being the end of the pipeline flush (the last backward of any stage):
 * the warm-up wait before its first forward, the gaps between units waiting on other stages,
 * and the cool-down wait after its own last backward until the flush is over. Idle is the
 * rest of its idle time, after F (waiting on data-parallel collectives, the optimizer of
 * slower stages, the end of the iteration).
 *
 * Check against the textbook 1F1B bubble, p stages each taking t_f and t_b per micro-batch, m
 * micro-batches, no communication: stage s starts its first forward at s t_f and ends its last
 * backward at F - s t_b, with F = (m + p - 1)(t_f + t_b); in [0, F] it computes m (t_f + t_b),
 * so its bubble is F - m (t_f + t_b) = (p - 1)(t_f + t_b), the same on every stage. With
 * unequal stages the slowest stage's bubble is one forward and one backward of every other
 * stage (tests/test_hetero.c works an example). */
static void breakdown(const compiled_plan *p, const htae_result *r, int rank, double flush,
                      report_summary *s)
{
    const htae_graph *g = p->graph;
    int nc = 0, nm = 0;
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        int n = (int)(g->stream_first[i + 1] - g->stream_first[i]);
        if (st == STREAM_COMPUTE)
            nc += n;
        else
            nm += n;
    }
    interval *comp = xmalloc((size_t)(nc + 1) * sizeof *comp);
    interval *comm = xmalloc((size_t)(nm + 1) * sizeof *comm);
    nc = nm = 0;
    memset(s->comm_s, 0, sizeof s->comm_s);
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++) {
            uint32_t t = g->stream_tasks[k];
            interval iv = {r->start[t], r->end[t]};
            assert(iv.b >= iv.a);
            if (st == STREAM_COMPUTE) {
                comp[nc++] = iv;
            } else {
                comm[nm++] = iv;
                s->comm_s[g->tasks[t].category] += iv.b - iv.a;
            }
        }
    }
    nc = merge(comp, nc);
    nm = merge(comm, nm);
    double T = r->makespan;
    s->compute_s = total(comp, nc);
    s->exposed_comm_s = total(comm, nm) - overlap(comm, nm, comp, nc);

    interval *all = xmalloc((size_t)(nc + nm + 1) * sizeof *all);
    memcpy(all, comp, (size_t)nc * sizeof *all);
    memcpy(all + nc, comm, (size_t)nm * sizeof *all);
    int na = merge(all, nc + nm);
    double idle_total = T - total(all, na);
    double idle_in_flush = flush - busy_before(all, na, flush);
    s->bubble_s = p->pp > 1 ? idle_in_flush : 0.0;
    s->idle_s = idle_total - s->bubble_s;
    if (s->idle_s < 0) /* rounding only */
        s->idle_s = 0;
    free(all);
    free(comp);
    free(comm);
}

static void top_labels(const compiled_plan *p, const htae_result *r, int rank, report_summary *s)
{
    const htae_graph *g = p->graph;
    double *by = xcalloc((size_t)g->n_labels + 1, sizeof *by);
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++) {
            uint32_t t = g->stream_tasks[k];
            by[g->tasks[t].label] += r->end[t] - r->start[t];
        }
    }
    s->n_top = 0;
    for (int n = 0; n < REPORT_TOP; n++) {
        int best = -1;
        for (int l = 0; l < g->n_labels; l++)
            if (by[l] > 0 && (best < 0 || by[l] > by[best]))
                best = l;
        if (best < 0)
            break;
        s->top[s->n_top].label = best;
        s->top[s->n_top++].seconds = by[best];
        by[best] = 0;
    }
    free(by);
}

void report_summarize(const compiled_plan *p, const htae_result *r, report_summary *out)
{
    const htae_graph *g = p->graph;
    memset(out, 0, sizeof *out);
    double T = r->makespan;
    out->iteration_s = T;
    out->samples_per_s = T > 0 ? p->samples_per_iter / T : 0;
    out->tokens_per_s = T > 0 ? p->tokens_per_iter / T : 0;
    out->mfu = T > 0 ? p->model_flops_per_iter / (T * p->gpus * p->peak_flops_per_gpu) : 0;

    double *busy = xcalloc((size_t)g->n_ranks, sizeof *busy);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE)
            busy[g->tasks[t].rank] += r->end[t] - r->start[t];
    for (int k = 1; k < g->n_ranks; k++)
        if (busy[k] > busy[out->busiest_rank] + 1e-12)
            out->busiest_rank = k;
    free(busy);

    int m = compiled_plan_tightest_rank(p);
    out->peak_memory_rank = m;
    out->peak_memory_bytes = p->memory[m].total;
    out->memory_capacity = p->memory_capacity_of_rank[m];
    breakdown(p, r, out->busiest_rank, flush_end(p, r), out);
    top_labels(p, r, out->busiest_rank, out);
}
