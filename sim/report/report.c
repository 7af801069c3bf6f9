/* report.c: summaries from the executor's timeline: the busiest GPU's breakdown by interval
 * arithmetic on its streams and its top items. The writers are the command's (cli/). */
#include "report.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
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

/* Seconds per label on `rank`: [n_labels], the caller frees it. */
static double *label_seconds(const report_plan *p, const htae_result *r, int rank)
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
    return by;
}

/* The REPORT_TOP largest of by[n] into s->top (by is consumed). */
static void top_labels(double *by, int n, report_summary *s)
{
    s->n_top = 0;
    for (int k = 0; k < REPORT_TOP; k++) {
        int best = -1;
        for (int l = 0; l < n; l++)
            if (by[l] > 0 && (best < 0 || by[l] > by[best]))
                best = l;
        if (best < 0)
            break;
        s->top[s->n_top].label = best;
        s->top[s->n_top++].seconds = by[best];
        by[best] = 0;
    }
}

/* Compute seconds per rank: [n_ranks], the caller frees it. */
static double *rank_busy(const exec_graph *g, const htae_result *r)
{
    double *busy = xcalloc((size_t)g->n_ranks + 1, sizeof *busy);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE)
            busy[g->tasks[t].rank] += r->end[t] - r->start[t];
    return busy;
}

static int busiest_of(const double *busy, int n)
{
    int b = 0;
    for (int k = 1; k < n; k++)
        if (busy[k] > busy[b] + 1e-12)
            b = k;
    return b;
}

/* The figures of one iteration of T seconds: throughput, MFU, memory. */
static void summary_head(const report_plan *p, double T, report_summary *out)
{
    memset(out, 0, sizeof *out);
    out->fig.iteration_s = T;
    out->fig.samples_per_s = T > 0 ? p->samples_per_iter / T : 0;
    out->fig.tokens_per_s = T > 0 ? p->tokens_per_iter / T : 0;
    out->fig.mfu = T > 0 ? p->model_flops_per_iter / (T * p->gpus * p->peak_flops_per_gpu) : 0;
    out->peak_memory_rank = p->memory_rank;
    out->fig.peak_memory_bytes = p->memory_bytes;
    out->fig.memory_capacity_bytes = p->memory_capacity_bytes;
}

void report_summarize(const report_plan *p, const htae_result *r, report_summary *out)
{
    const exec_graph *g = p->graph;
    summary_head(p, r->makespan, out);
    double *busy = rank_busy(g, r);
    out->busiest_rank = busiest_of(busy, g->n_ranks);
    free(busy);
    breakdown(p, r, out->busiest_rank, flush_end(p, r), out);
    double *by = label_seconds(p, r, out->busiest_rank);
    top_labels(by, g->n_labels, out);
    free(by);
}

/* a + K (b - a): a figure of the timeline with K periods inserted, from the timelines with none
 * (a) and with one (b). */
static double extrapolate(double a, double b, int K)
{
    return a + K * (b - a);
}

static void extrapolate_all(double *a, const double *b, int n, int K)
{
    for (int i = 0; i < n; i++)
        a[i] = extrapolate(a[i], b[i], K);
}

void report_summarize_periodic(const report_plan *p1, const htae_result *r1, const report_plan *p2,
                               const htae_result *r2, int K, double T, report_summary *out)
{
    const exec_graph *g1 = p1->graph, *g2 = p2->graph;
    assert(g1->n_ranks == g2->n_ranks && g1->n_labels == g2->n_labels && K >= 0);
    summary_head(p2, T, out);
    double *busy = rank_busy(g1, r1), *busy2 = rank_busy(g2, r2);
    extrapolate_all(busy, busy2, g1->n_ranks, K);
    out->busiest_rank = busiest_of(busy, g1->n_ranks);
    free(busy);
    free(busy2);
    report_summary a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    breakdown(p1, r1, out->busiest_rank, flush_end(p1, r1), &a);
    breakdown(p2, r2, out->busiest_rank, flush_end(p2, r2), &b);
    out->fig.compute_s = extrapolate(a.fig.compute_s, b.fig.compute_s, K);
    out->fig.exposed_comm_s = extrapolate(a.fig.exposed_comm_s, b.fig.exposed_comm_s, K);
    out->fig.bubble_s = extrapolate(a.fig.bubble_s, b.fig.bubble_s, K);
    out->fig.idle_s = extrapolate(a.fig.idle_s, b.fig.idle_s, K);
    if (out->fig.idle_s < 0) /* rounding only */
        out->fig.idle_s = 0;
    for (int c = 0; c < CAT_COUNT; c++)
        out->comm_s[c] = extrapolate(a.comm_s[c], b.comm_s[c], K);
    double *by = label_seconds(p1, r1, out->busiest_rank),
           *by2 = label_seconds(p2, r2, out->busiest_rank);
    extrapolate_all(by, by2, g1->n_labels, K);
    top_labels(by, g1->n_labels, out);
    free(by);
    free(by2);
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
    if (s.seconds <= PATH_TOL) /* nothing, or the rounding of times a period apart */
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

/* Each distinct step name made once (a path of millions of steps has a few hundred): an
 * open-addressing table of (label, rank, peer) -> index into out->names + 1, 0 empty. */
typedef struct name_table {
    int *slot;
    size_t cap;     /* a power of two, above twice the names */
    path_step *key; /* [names]: the step each name was made for */
    size_t cap_key;
} name_table;

static size_t step_slot(const name_table *t, const path_step *s)
{
    uint64_t h = ((uint64_t)(uint32_t)s->label * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)s->rank * 0xBF58476D1CE4E5B9ull) ^
                 ((uint64_t)(uint32_t)s->peer * 0x94D049BB133111EBull);
    size_t k = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
    while (t->slot[k]) {
        const path_step *o = &t->key[t->slot[k] - 1];
        if (o->label == s->label && o->rank == s->rank && o->peer == s->peer)
            break;
        k = (k + 1) & (t->cap - 1);
    }
    return k;
}

static char *name_of(const exec_graph *g, const path_step *s, name_table *t,
                     report_critical_path *out)
{
    size_t k = step_slot(t, s);
    if (t->slot[k])
        return out->names[t->slot[k] - 1];
    size_t n = (size_t)out->n_names;
    xgrow(&t->key, sizeof *t->key, n + 1, &t->cap_key);
    out->names = xreallocarray(out->names, t->cap_key, sizeof *out->names);
    t->key[n] = *s;
    out->names[n] = step_name(g, s);
    t->slot[k] = ++out->n_names;
    if (2 * (size_t)out->n_names > t->cap) { /* grow, every name placed again */
        free(t->slot);
        t->cap *= 2;
        t->slot = xcalloc(t->cap, sizeof *t->slot);
        for (int i = 0; i < out->n_names; i++)
            t->slot[step_slot(t, &t->key[i])] = i + 1;
    }
    return out->names[n];
}

/* Steps v[n] (latest first) as the path's items (report.h): time order, runs of one step
 * merged. */
static void items_of(const exec_graph *g, const path_step *v, size_t n, report_critical_path *out)
{
    memset(out, 0, sizeof *out);
    out->items = xmalloc((n + 1) * sizeof *out->items);
    name_table t = {xcalloc(64, sizeof(int)), 64, NULL, 0};
    const path_step *last = NULL;
    for (size_t i = n; i-- > 0;) { /* time order */
        const path_step *s = &v[i];
        if (last && s->label == last->label && s->rank == last->rank && s->peer == last->peer &&
            strcmp(s->kind, last->kind) == 0) {
            out->items[out->n - 1].seconds += s->seconds;
            continue;
        }
        report_path_item it = {name_of(g, s, &t, out), s->kind, s->seconds};
        out->items[out->n++] = it;
        last = s;
    }
    free(t.slot);
    free(t.key);
}

void report_critical_path_create(const exec_graph *g, const htae_result *r,
                                 report_critical_path *out)
{
    int n;
    path_step *v = walk(g, r, &n);
    items_of(g, v, (size_t)n, out);
    free(v);
}

/* The same step (its seconds within tol). */
static int same_step(const path_step *a, const path_step *b, double tol)
{
    return a->label == b->label && a->rank == b->rank && a->peer == b->peer &&
           strcmp(a->kind, b->kind) == 0 && fabs(a->seconds - b->seconds) <= tol;
}

int report_critical_path_periodic(const exec_graph *g1, const htae_result *r1, const exec_graph *g2,
                                  const htae_result *r2, int K, double tol,
                                  report_critical_path *out)
{
    int n1, n2;
    path_step *v1 = walk(g1, r1, &n1), *v2 = walk(g2, r2, &n2);
    int L = n2 - n1, a = 0, b = 0;
    while (L > 0 && a < n1 && same_step(&v1[a], &v2[a], tol)) /* the latest, a period later */
        a++;
    while (L > 0 && b < n1 && same_step(&v1[n1 - 1 - b], &v2[n2 - 1 - b], tol))
        b++; /* the earliest steps, where they were */
    /* v2 = v1[0, a) + the period's steps v2[a, a + L) + v1[a, n1): a + b covers v1 */
    int ok = L > 0 && a + b >= n1;
    if (ok) {
        size_t n = (size_t)n1 + (size_t)K * (size_t)L;
        path_step *v = xmalloc((n + 1) * sizeof *v);
        memcpy(v, v2, (size_t)a * sizeof *v);
        for (int k = 0; k < K; k++)
            memcpy(v + a + (size_t)k * L, v2 + a, (size_t)L * sizeof *v);
        memcpy(v + a + (size_t)K * L, v2 + a + L, (size_t)(n1 - a) * sizeof *v);
        items_of(g2, v, n, out);
        free(v);
    }
    free(v1);
    free(v2);
    return ok;
}

void report_critical_path_free(report_critical_path *cp)
{
    for (int i = 0; i < cp->n_names; i++)
        free(cp->names[i]);
    free(cp->names);
    free(cp->items);
    memset(cp, 0, sizeof *cp);
}

static int by_name(const void *x, const void *y)
{
    const report_path_item *p = x, *q = y;
    int c = strcmp(p->name, q->name);
    return c ? c : strcmp(p->kind, q->kind);
}

/* FNV-1a over a path item's name and kind. */
static uint64_t item_hash(const report_path_item *it)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = it->name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    for (const char *c = it->kind; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

int report_critical_path_top(const report_critical_path *cp, report_path_item *top, int max)
{
    /* the items of one name summed, in time order, through a hash table of the distinct names
     * (a path of millions of items has a few hundred); then those in name order */
    size_t cap = 64;
    while (cap < 2 * (size_t)cp->n + 2 && cap < ((size_t)1 << 40))
        cap *= 2;
    int *slot = xmalloc(cap * sizeof *slot); /* index into v + 1, 0 empty */
    memset(slot, 0, cap * sizeof *slot);
    report_path_item *v = xmalloc(((size_t)cp->n + 1) * sizeof *v);
    int m = 0;
    for (int i = 0; i < cp->n; i++) {
        size_t k = (size_t)item_hash(&cp->items[i]) & (cap - 1);
        while (slot[k] && by_name(&v[slot[k] - 1], &cp->items[i]) != 0)
            k = (k + 1) & (cap - 1);
        if (slot[k]) {
            v[slot[k] - 1].seconds += cp->items[i].seconds;
        } else {
            v[m] = cp->items[i];
            slot[k] = ++m;
        }
    }
    free(slot);
    qsort(v, (size_t)m, sizeof *v, by_name);
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
