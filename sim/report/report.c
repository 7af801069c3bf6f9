/* report.c: summaries from the executor's timeline: the busiest GPU's breakdown by interval
 * arithmetic on its streams and its top items. The writers are the command's (cli/). */
#include "report.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"

typedef struct interval {
    double a, b;
} interval;

static int by_start(const void *x, const void *y)
{
    const interval *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge overlapping intervals in place; returns the new count. A stream's tasks come
 * in start order already: the sort is skipped when nothing is out of order. */
static int merge(interval *v, int n)
{
    if (n == 0)
        return 0;
    int sorted = 1;
    for (int i = 1; i < n && sorted; i++)
        sorted = v[i - 1].a <= v[i].a;
    if (!sorted)
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

/* The union of two merged unions into out (room for na + nb), merged; returns its count. */
static int union_of(const interval *a, int na, const interval *b, int nb, interval *out)
{
    int i = 0, j = 0, m = 0;
    while (i < na || j < nb) {
        interval x = j >= nb || (i < na && a[i].a <= b[j].a) ? a[i++] : b[j++];
        if (m > 0 && x.a <= out[m - 1].b) {
            if (x.b > out[m - 1].b)
                out[m - 1].b = x.b;
        } else {
            out[m++] = x;
        }
    }
    return m;
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
static double flush_end(const report_plan *p, const htae_result *r)
{
    const exec_graph *g = p->graph;
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
static void breakdown(const report_plan *p, const htae_result *r, int rank, double flush,
                      report_summary *s)
{
    const exec_graph *g = p->graph;
    int nc = 0, nm = 0;
    for (int st = 0; st < g->n_streams; st++) {
        uint32_t i = (uint32_t)rank * (uint32_t)g->n_streams + (uint32_t)st;
        int n = (int)(g->stream_first[i + 1] - g->stream_first[i]);
        if (st == STREAM_COMPUTE)
            nc += n;
        else
            nm += n;
    }
    interval *comp = xmalloc((size_t)(nc + 1) * sizeof *comp);
    interval *comm = xmalloc((size_t)(nm + 1) * sizeof *comm);
    interval *run = xmalloc((size_t)(nm + 1) * sizeof *run);
    interval *both = xmalloc((size_t)(nm + 1) * sizeof *both);
    nc = nm = 0;
    memset(s->comm_s, 0, sizeof s->comm_s);
    /* each stream's union (in start order: linear), the communication streams' joined two at
     * a time (linear each) */
    for (int st = 0; st < g->n_streams; st++) {
        uint32_t i = (uint32_t)rank * (uint32_t)g->n_streams + (uint32_t)st;
        int nr = 0;
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++) {
            uint32_t t = g->stream_tasks[k];
            interval iv = {r->start[t], r->end[t]};
            assert(iv.b >= iv.a);
            if (st == STREAM_COMPUTE) {
                comp[nc++] = iv;
            } else {
                run[nr++] = iv;
                s->comm_s[g->tasks[t].category] += iv.b - iv.a;
            }
        }
        if (st == STREAM_COMPUTE || nr == 0)
            continue;
        nr = merge(run, nr);
        nm = union_of(comm, nm, run, nr, both);
        interval *swap = comm;
        comm = both;
        both = swap;
    }
    free(run);
    free(both);
    nc = merge(comp, nc);
    double T = r->makespan;
    s->fig.compute_s = total(comp, nc);
    s->fig.exposed_comm_s = total(comm, nm) - overlap(comm, nm, comp, nc);

    interval *all = xmalloc((size_t)(nc + nm + 1) * sizeof *all);
    int na = union_of(comp, nc, comm, nm, all);
    double idle_total = T - total(all, na);
    double idle_in_flush = flush - busy_before(all, na, flush);
    s->fig.bubble_s = p->pp > 1 ? idle_in_flush : 0.0;
    s->fig.idle_s = idle_total - s->fig.bubble_s;
    if (s->fig.idle_s < 0) /* rounding only */
        s->fig.idle_s = 0;
    free(all);
    free(comp);
    free(comm);
}

static void top_labels(const report_plan *p, const htae_result *r, int rank, report_summary *s)
{
    const exec_graph *g = p->graph;
    double *by = xcalloc((size_t)g->n_labels + 1, sizeof *by);
    for (int st = 0; st < g->n_streams; st++) {
        uint32_t i = (uint32_t)rank * (uint32_t)g->n_streams + (uint32_t)st;
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

void report_summarize(const report_plan *p, const htae_result *r, report_summary *out)
{
    const exec_graph *g = p->graph;
    memset(out, 0, sizeof *out);
    double T = r->makespan;
    out->fig.iteration_s = T;
    out->fig.samples_per_s = T > 0 ? p->samples_per_iter / T : 0;
    out->fig.tokens_per_s = T > 0 ? p->tokens_per_iter / T : 0;
    out->fig.mfu = T > 0 ? p->model_flops_per_iter / (T * p->gpus * p->peak_flops_per_gpu) : 0;

    double *busy = xcalloc((size_t)g->n_ranks, sizeof *busy);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE)
            busy[g->tasks[t].rank] += r->end[t] - r->start[t];
    for (int k = 1; k < g->n_ranks; k++)
        if (busy[k] > busy[out->busiest_rank] + 1e-12)
            out->busiest_rank = k;
    free(busy);

    out->peak_memory_rank = p->memory_rank;
    out->fig.peak_memory_bytes = p->memory_bytes;
    out->fig.memory_capacity_bytes = p->memory_capacity_bytes;
    breakdown(p, r, out->busiest_rank, flush_end(p, r), out);
    top_labels(p, r, out->busiest_rank, out);
}

/* ---- the critical path (report.h) ---- */

#define NO_TASK  UINT32_MAX
#define PATH_TOL 1e-12

/* Predecessors of every task: explicit edges in CSR (from the successor lists), and the
 * previous task of its stream. */
typedef struct preds {
    uint32_t *first; /* [n_tasks + 1] into list */
    uint32_t *list;
    uint32_t *prev; /* [n_tasks], NO_TASK for a stream's first task */
} preds;

static void preds_build(const exec_graph *g, preds *pr)
{
    uint32_t n = g->n_tasks;
    pr->first = xcalloc((size_t)n + 1, sizeof *pr->first);
    for (uint32_t t = 0; t < n; t++)
        pr->first[t + 1] = pr->first[t] + g->tasks[t].n_pred;
    pr->list = xmalloc(((size_t)pr->first[n] + 1) * sizeof *pr->list);
    uint32_t *fill = xcalloc((size_t)n + 1, sizeof *fill);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t j = 0; j < g->tasks[t].n_succ; j++) {
            uint32_t s = g->succ[g->tasks[t].succ_first + j];
            pr->list[pr->first[s] + fill[s]++] = t;
        }
    free(fill);
    pr->prev = xmalloc(((size_t)n + 1) * sizeof *pr->prev);
    uint32_t n_streams = (uint32_t)g->n_ranks * (uint32_t)g->n_streams;
    for (uint32_t i = 0; i < n_streams; i++)
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++)
            pr->prev[g->stream_tasks[k]] =
                k > g->stream_first[i] ? g->stream_tasks[k - 1] : NO_TASK;
}

static void preds_free(preds *pr)
{
    free(pr->first);
    free(pr->list);
    free(pr->prev);
}

/* The latest-ending predecessor of task t alone (explicit edges first, then its stream's
 * previous task: the first of equal ends wins); NO_TASK if it has none. */
static uint32_t latest_pred_of(const preds *pr, const htae_result *r, uint32_t t)
{
    uint32_t best = NO_TASK;
    for (uint32_t k = pr->first[t]; k < pr->first[t + 1]; k++)
        if (best == NO_TASK || r->end[pr->list[k]] > r->end[best])
            best = pr->list[k];
    uint32_t p = pr->prev[t];
    if (p != NO_TASK && (best == NO_TASK || r->end[p] > r->end[best]))
        best = p;
    return best;
}

/* The latest-ending predecessor of t, over every member for a collective task; *via gets the
 * member it belongs to (t itself otherwise: the task that waited). */
static uint32_t latest_pred(const exec_graph *g, const preds *pr, const htae_result *r, uint32_t t,
                            uint32_t *via)
{
    *via = t;
    if (g->tasks[t].kind != TASK_COLLECTIVE)
        return latest_pred_of(pr, r, t);
    const graph_collective *c = &g->colls[g->tasks[t].coll];
    const uint32_t *members = &g->coll_tasks[c->first_task];
    uint32_t best = NO_TASK;
    for (uint32_t i = 0; i < g->groups[c->group].tasked; i++) {
        uint32_t p = latest_pred_of(pr, r, members[i]);
        if (p != NO_TASK && (best == NO_TASK || r->end[p] > r->end[best])) {
            best = p;
            *via = members[i];
        }
    }
    return best;
}

/* One step of the path before names: a task (label >= 0) or a wait (label < 0). */
typedef struct path_step {
    int32_t label;      /* task label; WAIT_HOST or WAIT_OTHER for waits */
    int32_t rank, peer; /* peer: a transfer's destination, -1 otherwise; rank -1: a collective */
    const char *kind;
    double seconds;
} path_step;

enum { WAIT_HOST = -1, WAIT_OTHER = -2 };

static void push_step(path_step **v, int *n, size_t *cap, path_step s)
{
    if (s.seconds <= 0)
        return;
    xgrow(v, sizeof **v, (size_t)*n + 1, cap);
    (*v)[(*n)++] = s;
}

static path_step task_step(const exec_graph *g, const graph_task *k, double seconds)
{
    /* a replayed trace's streams say where the time went: a CPU thread, a GPU stream, NCCL */
    const char *kind = !g->stream_names                    ? stream_name((stream_id)k->stream)
                       : k->kind == TASK_COLLECTIVE        ? "comm"
                       : graph_stream_is_cpu(g, k->stream) ? "cpu"
                                                           : "gpu";
    path_step s = {k->label, k->rank, -1, kind, seconds};
    if (k->kind == TASK_TRANSFER)
        s.peer = k->peer;
    else if (k->kind == TASK_COLLECTIVE)
        s.rank = -1;
    return s;
}

/* The walk of report.h, latest first, into *out (n steps). */
static path_step *walk(const exec_graph *g, const htae_result *r, int *n)
{
    preds pr;
    preds_build(g, &pr);
    uint32_t cur = NO_TASK;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (cur == NO_TASK || r->end[t] > r->end[cur])
            cur = t;
    path_step *v = NULL;
    size_t cap = 0;
    *n = 0;
    double hi = cur == NO_TASK ? 0 : r->end[cur]; /* the path covers [hi, makespan] so far */
    while (cur != NO_TASK) {
        uint32_t via;
        uint32_t p = latest_pred(g, &pr, r, cur, &via);
        double lo = p == NO_TASK ? 0.0 : r->end[p];
        double start = r->start[cur];
        if (start - lo <= PATH_TOL) {
            push_step(&v, n, &cap, task_step(g, &g->tasks[cur], hi - lo));
        } else {
            push_step(&v, n, &cap, task_step(g, &g->tasks[cur], hi - start));
            const graph_task *w = &g->tasks[via];
            path_step s = {(w->host & HOST_ISSUE) ? WAIT_HOST : WAIT_OTHER, w->rank, -1, "wait",
                           start - lo};
            push_step(&v, n, &cap, s);
        }
        hi = lo;
        cur = p;
    }
    preds_free(&pr);
    return v;
}

static char *step_name(const exec_graph *g, const path_step *s)
{
    char buf[512];
    const char *what = s->label == WAIT_HOST    ? "host issue"
                       : s->label == WAIT_OTHER ? "wait"
                                                : g->labels[s->label];
    if (s->rank < 0)
        snprintf(buf, sizeof buf, "%s", what);
    else if (s->peer >= 0)
        snprintf(buf, sizeof buf, "%s (GPU %d -> %d)", what, s->rank, s->peer);
    else
        snprintf(buf, sizeof buf, "%s (GPU %d)", what, s->rank);
    return xstrdup(buf);
}

void report_critical_path_create(const exec_graph *g, const htae_result *r,
                                 report_critical_path *out)
{
    int n;
    path_step *v = walk(g, r, &n);
    out->items = xmalloc(((size_t)n + 1) * sizeof *out->items);
    out->n = 0;
    const path_step *last = NULL;
    for (int i = n - 1; i >= 0; i--) { /* time order */
        const path_step *s = &v[i];
        if (last && s->label == last->label && s->rank == last->rank && s->peer == last->peer &&
            strcmp(s->kind, last->kind) == 0) {
            out->items[out->n - 1].seconds += s->seconds;
            continue;
        }
        report_path_item it = {step_name(g, s), s->kind, s->seconds};
        out->items[out->n++] = it;
        last = s;
    }
    free(v);
}

void report_critical_path_free(report_critical_path *cp)
{
    for (int i = 0; i < cp->n; i++)
        free(cp->items[i].name);
    free(cp->items);
    cp->items = NULL;
    cp->n = 0;
}

static int by_name(const void *x, const void *y)
{
    const report_path_item *p = x, *q = y;
    int c = strcmp(p->name, q->name);
    return c ? c : strcmp(p->kind, q->kind);
}

int report_critical_path_top(const report_critical_path *cp, report_path_item *top, int max)
{
    report_path_item *v = xmalloc(((size_t)cp->n + 1) * sizeof *v);
    memcpy(v, cp->items, (size_t)cp->n * sizeof *v);
    qsort(v, (size_t)cp->n, sizeof *v, by_name);
    int m = 0; /* sum runs of one name in place */
    for (int i = 0; i < cp->n; i++) {
        if (m > 0 && by_name(&v[m - 1], &v[i]) == 0)
            v[m - 1].seconds += v[i].seconds;
        else
            v[m++] = v[i];
    }
    int k = 0;
    for (; k < max; k++) {
        int best = -1;
        for (int i = 0; i < m; i++)
            if (v[i].seconds > 0 && (best < 0 || v[i].seconds > v[best].seconds))
                best = i;
        if (best < 0)
            break;
        top[k] = v[best];
        v[best].seconds = 0;
    }
    free(v);
    return k;
}
