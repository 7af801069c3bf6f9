/* steady.c: a pipeline's steady state simulated once, the rest of its micro-batches inserted as
 * proven periods (steady.h). */
#include "steady.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "run.h"
#include "../../strategies/schedule.h"

/* Simulated seconds within which two times are the same instant: far below any task here, far
 * above the rounding of a time of a few hundred seconds. */
#define STEADY_EPS 1e-9
/* When no run proves an exact period: a window whose every task and host pace repeats to within
 * one of these shares of the period, the smallest that holds, is taken as approximately periodic
 * (steady.h). Each inserted period is then off by at most that share, so the iteration by at
 * most the last: 5e-3, the 0.5% issue 31 allows. */
static const double steady_approx[] = {1e-4, 1e-3, 5e-3};

int steady_short_micro_batches(int pp, int interleaved, int attempt)
{
    if (interleaved) { /* whole rounds of pp micro-batches: 3 to warm up and cool down */
        static const int rounds[3] = {6, 8, 12};
        return attempt < 3 ? rounds[attempt] * pp : 0;
    }
    if (attempt == 0)
        return pp > 1 ? pp + 8 : 6;
    return attempt == 1 && pp > 4 ? 2 * pp + 4 : 0;
}

/* Micro-batches a period holds: a round of pp under the interleaved schedule, else 1. */
static int period_micro_batches(const strategy *s)
{
    return s->schedule == SCHED_INTERLEAVED ? s->pp : 1;
}

/* Why the plan is simulated whole, NULL if the shorter run may be tried. */
static const char *ineligible(const strategy *s, const compile_options *copt,
                              const htae_options *hopt, int allow, int m, int m1)
{
    if (!allow)
        return "a trace asks for every task";
    if (copt && !copt->fold_data_parallel)
        return "--no-fold";
    if (s->model.family == FAMILY_DLRM)
        return "a recommendation model";
    if (s->schedule == SCHED_GPIPE) /* every forward first, even without stages */
        return "a GPipe schedule";
    if (pipeline_splits_backward(s->schedule)) /* deferred W: a period not yet proven */
        return "a zero-bubble schedule";
    if (hopt && hopt->counter_ranks)
        return "link counters asked";
    int d = period_micro_batches(s);
    if (m < m1 + 2 * d || (m - m1) % d != 0)
        return "few micro-batches";
    return NULL;
}

/* The stream's tasks: g->stream_tasks[*first .. *last). */
static void stream_span(const exec_graph *g, uint32_t i, uint32_t *first, uint32_t *last)
{
    *first = g->stream_first[i];
    *last = g->stream_first[i + 1];
}

/* The first task of each micro-batch on rank 0's compute stream (a micro-batch above every one
 * before it), in order, into *out; they are flagged for link snapshots. */
static unsigned char *snapshot_flags(const exec_graph *g, uint32_t **out, int *n)
{
    unsigned char *flags = xcalloc((size_t)g->n_tasks + 1, 1);
    uint32_t first, last;
    stream_span(g, STREAM_COMPUTE, &first, &last);
    *out = xmalloc(((size_t)(last - first) + 1) * sizeof **out);
    *n = 0;
    int top = -1;
    for (uint32_t k = first; k < last; k++) {
        uint32_t t = g->stream_tasks[k];
        if (g->tasks[t].micro > top) {
            top = g->tasks[t].micro;
            flags[t] = 1;
            (*out)[(*n)++] = t;
        }
    }
    return flags;
}

/* Task a (of graph ga) is task b (of gb) but for its micro-batch, dm later (-1 stays -1). */
static int same_task(const exec_graph *ga, uint32_t a, const exec_graph *gb, uint32_t b, int dm)
{
    const graph_task *x = &ga->tasks[a], *y = &gb->tasks[b];
    if (x->kind != y->kind || x->stream != y->stream || x->category != y->category ||
        x->host != y->host || x->rank != y->rank || x->peer != y->peer || x->label != y->label ||
        x->seconds != y->seconds || x->bytes != y->bytes || x->host_s != y->host_s ||
        x->span != y->span || x->n_pred != y->n_pred || x->n_succ != y->n_succ)
        return 0;
    if (x->micro != (y->micro < 0 ? y->micro : y->micro + dm))
        return 0;
    if (x->kind == TASK_COLLECTIVE) {
        const graph_collective *p = &ga->colls[x->coll], *q = &gb->colls[y->coll];
        if (p->kind != q->kind || p->group != q->group || p->bytes != q->bytes)
            return 0;
    }
    return 1;
}

/* Task a of r ran as task b did, d seconds later. */
static int shifted(const htae_result *r, uint32_t a, uint32_t b, double d, double e)
{
    return fabs(r->start[a] - r->start[b] - d) <= e && fabs(r->end[a] - r->end[b] - d) <= e;
}

/* The host issued t1, t2, t3 (one period apart) at a steady pace: every period P later (in
 * step with the GPU), or every h < P later, *gains set (a host that runs ahead, its lead
 * growing by P - h a period: the lead is no state that repeats, so steady_prove then checks
 * that the host bounds nothing from the window on). */
static int host_period(const htae_result *r, uint32_t t1, uint32_t t2, uint32_t t3, double P,
                       double e, int *gains)
{
    double h1 = r->ready[t1] - r->ready[t2], h2 = r->ready[t2] - r->ready[t3];
    if (fabs(h1 - h2) > e || h1 > P + e)
        return 0;
    if (h1 < P - e)
        *gains = 1;
    return 1;
}

/* Each task's latest predecessor end (an edge's source, its stream's previous task; -inf for
 * none), for host_bounds_nothing: [n_tasks], the caller frees it. */
static double *predecessor_ends(const exec_graph *g, const htae_result *r)
{
    double *bound = xmalloc(((size_t)g->n_tasks + 1) * sizeof *bound);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        bound[t] = -INFINITY;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        for (uint32_t k = 0; k < g->tasks[t].n_succ; k++) {
            uint32_t v = g->succ[g->tasks[t].succ_first + k];
            bound[v] = fmax(bound[v], r->end[t]);
        }
    uint32_t n_streams = (uint32_t)g->n_ranks * (uint32_t)g->n_streams;
    for (uint32_t i = 0; i < n_streams; i++)
        for (uint32_t k = g->stream_first[i] + 1; k < g->stream_first[i + 1]; k++)
            bound[g->stream_tasks[k]] =
                fmax(bound[g->stream_tasks[k]], r->end[g->stream_tasks[k - 1]]);
    return bound;
}

/* No task the host issues, from `from` on, started or ended because of the host: each starts
 * after its issue or has a predecessor (bound: predecessor_ends) ending when it starts, and
 * each compute task ends after its issue's flow-shop bound (span). Then a host further ahead
 * changes nothing. */
static int host_bounds_nothing(const exec_graph *g, const htae_result *r, const double *bound,
                               double from)
{
    int ok = 1;
    for (uint32_t t = 0; ok && t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (!k->host || r->start[t] < from - STEADY_EPS)
            continue;
        int at_issue = r->start[t] <= r->ready[t] + STEADY_EPS;
        ok = !(at_issue && bound[t] < r->start[t] - STEADY_EPS) &&
             !(k->span > 0 && r->end[t] <= r->ready[t] + k->span + STEADY_EPS);
    }
    return ok;
}

/* The n tasks of a stream before its task `at` repeat the n before them, and those the n
 * before them: the same tasks (micro-batch d later), P later (to e), issued by the host at a
 * steady pace (host_period). */
static int repeats(const exec_graph *g, const htae_result *r, uint32_t first, uint32_t at,
                   uint32_t n, double P, int d, double e, int *host_gains)
{
    if (at - first < 3 * n)
        return 0;
    for (uint32_t k = at - n; k < at; k++) { /* t1 in the last period, t3 in the first */
        uint32_t t1 = g->stream_tasks[k], t2 = g->stream_tasks[k - n],
                 t3 = g->stream_tasks[k - 2 * n];
        if (g->tasks[t1].micro < 0 || !same_task(g, t1, g, t2, d) || !same_task(g, t2, g, t3, d) ||
            !shifted(r, t1, t2, P, e) || !shifted(r, t2, t3, P, e))
            return 0;
        if (g->tasks[t1].host && !host_period(r, t1, t2, t3, P, e, host_gains))
            return 0;
    }
    return 1;
}

/* Twins tried for a stream's last task before tau (stream_period): tasks alike (same_task has
 * no layer) that start within e of one period earlier. */
#define STEADY_TWINS 8

/* Stream i's last three periods before tau, found by the tasks themselves: *at is its first
 * task to start from tau on (to e); the task before it has a twin (the same task d
 * micro-batches earlier, P earlier) *n tasks before it, and the stream's n tasks before *at
 * repeat (repeats). Exactly periodic, they are the tasks starting within [tau - P, tau) (to
 * e); approximately, a task starting near tau - P in one period and on the other side of it in
 * the next splits no period unlike the next. *n = 0 when that task has no twin. 0: twins, none
 * repeating. */
static int stream_period(const exec_graph *g, const htae_result *r, uint32_t i, double tau,
                         double P, int d, double e, uint32_t *at, uint32_t *n, int *host_gains)
{
    uint32_t first, last;
    stream_span(g, i, &first, &last);
    uint32_t a = first;
    while (a < last && r->start[g->stream_tasks[a]] < tau - e)
        a++;
    *at = a;
    *n = 0;
    if (a == first)
        return 1;
    uint32_t t = g->stream_tasks[a - 1];
    double from = r->start[t] - P - e;
    int twins = 0;
    for (uint32_t j = a - 1; j-- > first && r->start[g->stream_tasks[j]] >= from;) {
        uint32_t u = g->stream_tasks[j];
        if (!same_task(g, t, g, u, d) || !shifted(r, t, u, P, e))
            continue;
        int gains = 0;
        if (repeats(g, r, first, a, a - 1 - j, P, d, e, &gains)) {
            *n = a - 1 - j;
            *host_gains |= gains;
            return 1;
        }
        if (++twins == STEADY_TWINS)
            break;
    }
    return twins == 0;
}

/* Every stream repeats over the three periods before tau (stream_period: stream i's split into
 * at[i], n[i]), and nothing begun before them still runs after the first. */
static int streams_periodic(const exec_graph *g, const htae_result *r, double tau, double P, int d,
                            double e, int *host_gains, uint32_t *at, uint32_t *n)
{
    uint32_t n_streams = (uint32_t)g->n_ranks * (uint32_t)g->n_streams;
    for (uint32_t i = 0; i < n_streams; i++) {
        if (!stream_period(g, r, i, tau, P, d, e, &at[i], &n[i], host_gains))
            return 0;
        uint32_t before = at[i] - 3 * n[i];
        if (before > g->stream_first[i] && r->end[g->stream_tasks[before - 1]] > tau - 2 * P + e)
            return 0;
    }
    return 1;
}

/* Every link's bytes and busy time grow alike over the three periods (snapshots k - 3d, k - 2d,
 * k - d, k). */
static int links_periodic(const htae_result *r, int k, int d)
{
    for (int j = 0; j < r->n_links; j++) {
        double b[4], u[4];
        for (int q = 0; q < 4; q++) {
            size_t at = (size_t)(k - (3 - q) * d) * (size_t)r->n_links + (size_t)j;
            b[q] = r->snap_bytes[at];
            u[q] = r->snap_busy[at];
        }
        for (int q = 0; q < 2; q++) {
            double db0 = b[q + 1] - b[q], db1 = b[q + 2] - b[q + 1];
            if (fabs(db1 - db0) > 1e-9 * fmax(fabs(db0), 1.0) ||
                fabs((u[q + 2] - u[q + 1]) - (u[q + 1] - u[q])) > STEADY_EPS)
                return 0;
        }
    }
    return 1;
}

/* The window: micro-batch c's first task on rank 0's compute stream starts at tau, those of
 * c - d, c - 2d, c - 3d at tau - P, - 2P, - 3P (a period is d micro-batches: 1, or the pipeline
 * degree of an interleaved schedule, which runs them in rounds), and everything repeats over
 * them. */
typedef struct window {
    int c, d;
    double tau, P;
    double e;    /* how exactly it repeats: STEADY_EPS, or steady_approx[k] x P */
    double step; /* the period inserted: P, or approximately the median shift (median_shift) */
    /* [streams]: each stream's split (stream_period): its last period is stream_tasks[at - n ..
     * at), the tasks from at on come after tau; malloc'ed, window_free */
    uint32_t *at, *n;
} window;

static void window_free(window *w)
{
    free(w->at);
    free(w->n);
    w->at = w->n = NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over the tasks of every stream's last period of how much later each starts than
 * its twin a period earlier: a window repeating only approximately holds tasks that still
 * converge (a pipeline's round-start micro-batch drifting by a few ms a round) beside the many
 * that repeat to the nanosecond, and P, measured on one task, may be one of the drifting. */
static double median_shift(const exec_graph *g, const htae_result *r, const window *w)
{
    size_t n_all = 0, cap = 1024;
    double *v = xmalloc(cap * sizeof *v);
    uint32_t n_streams = (uint32_t)g->n_ranks * (uint32_t)g->n_streams;
    for (uint32_t i = 0; i < n_streams; i++) {
        uint32_t at = w->at[i], n = w->n[i];
        for (uint32_t k = at - n; k < at; k++) {
            if (n_all == cap)
                v = xreallocarray(v, cap *= 2, sizeof *v);
            v[n_all++] = r->start[g->stream_tasks[k]] - r->start[g->stream_tasks[k - n]];
        }
    }
    qsort(v, n_all, sizeof *v, cmp_double);
    double m = n_all ? v[n_all / 2] : w->P;
    free(v);
    return m;
}

static int find_window(const exec_graph *g, const htae_result *r, const uint32_t *flagged, int n,
                       int pp, int d, double approx, window *w)
{
    if (r->n_snaps != n)
        return 0;
    for (int k = 0; k < n; k++)
        if (r->snap_t[k] != r->start[flagged[k]] || g->tasks[flagged[k]].micro != k)
            return 0;
    int lo = pp + 3 > 3 * d ? pp + 3 : 3 * d, hi = n - 2, mid = (lo + hi) / 2, found = 0;
    double *bound = NULL; /* predecessor_ends, once, when a window needs it */
    size_t n_streams = (size_t)g->n_ranks * (size_t)g->n_streams;
    uint32_t *at = xmalloc((n_streams + 1) * sizeof *at),
             *per = xmalloc((n_streams + 1) * sizeof *per);
    for (int step = 0; step <= hi - lo && !found; step++) { /* from the middle outwards */
        int c = mid + (step % 2 ? -(step + 1) / 2 : step / 2);
        if (c < lo || c > hi)
            continue;
        double tau = r->snap_t[c], P = tau - r->snap_t[c - d];
        if (!(P > 100 * STEADY_EPS) || tau - 3 * P < STEADY_EPS)
            continue;
        double e = fmax(STEADY_EPS, approx * P);
        if (fabs(r->snap_t[c - d] - r->snap_t[c - 2 * d] - P) > e ||
            fabs(r->snap_t[c - 2 * d] - r->snap_t[c - 3 * d] - P) > e)
            continue;
        int gains = 0;
        /* approximately: a flow ending near a period's edge moves its bytes between periods, so
         * links are not compared (expand_links takes the three periods' mean) */
        if (!streams_periodic(g, r, tau, P, d, e, &gains, at, per) ||
            (e <= STEADY_EPS && !links_periodic(r, c, d)))
            continue;
        if (gains && !bound)
            bound = predecessor_ends(g, r);
        if (!gains || host_bounds_nothing(g, r, bound, tau - 3 * P)) {
            *w = (window){c, d, tau, P, e, P, at, per};
            if (e > STEADY_EPS)
                w->step = median_shift(g, r, w);
            found = 1;
        }
    }
    free(bound);
    if (!found) {
        free(at);
        free(per);
    }
    return found;
}

/* The run's window: an exact one, else the one repeating to the smallest of steady_approx. */
static int window_of(const exec_graph *g, const htae_result *r, const uint32_t *flagged, int n,
                     int pp, int d, window *w)
{
    if (find_window(g, r, flagged, n, pp, d, 0.0, w))
        return 1;
    for (size_t k = 0; k < sizeof steady_approx / sizeof *steady_approx; k++)
        if (find_window(g, r, flagged, n, pp, d, steady_approx[k], w))
            return 1;
    return 0;
}

/* One stream of the full graph from the short run's: the tasks before tau as they ran, K copies
 * of the last period's, k P later and k d micro-batches on, then the rest K P later and K d
 * micro-batches on. 0 if the graphs differ there. */
static int expand_stream(const exec_graph *g, const exec_graph *g1, const htae_result *r1,
                         uint32_t i, const window *w, int K, htae_result *out)
{
    uint32_t f0, f1, s0, s1;
    stream_span(g, i, &f0, &f1);
    stream_span(g1, i, &s0, &s1);
    uint32_t nb = w->at[i] - s0, n1 = w->n[i]; /* tasks before tau; of its last period */
    if ((uint64_t)(f1 - f0) != (uint64_t)(s1 - s0) + (uint64_t)K * n1)
        return 0;
    for (uint32_t j = 0; j < f1 - f0; j++) {
        uint32_t src;
        int dm;
        double d;
        if (j < nb) {
            src = j, dm = 0, d = 0.0;
        } else if (j < nb + (uint32_t)K * n1) {
            uint32_t k = (j - nb) / n1 + 1, q = (j - nb) % n1;
            src = nb - n1 + q, dm = (int)k * w->d, d = k * w->step;
        } else {
            src = j - (uint32_t)K * n1, dm = K * w->d, d = K * w->step;
        }
        uint32_t t = g->stream_tasks[f0 + j], t1 = g1->stream_tasks[s0 + src];
        if (!same_task(g, t, g1, t1, dm))
            return 0;
        out->start[t] = r1->start[t1] + d;
        out->end[t] = r1->end[t1] + d;
    }
    return 1;
}

/* Every edge's source ends before its destination starts in the expanded timeline (to e). */
static int edges_hold(const exec_graph *g, const htae_result *r, double e)
{
    for (uint32_t t = 0; t < g->n_tasks; t++)
        for (uint32_t k = 0; k < g->tasks[t].n_succ; k++)
            if (r->end[t] > r->start[g->succ[g->tasks[t].succ_first + k]] + e)
                return 0;
    return 1;
}

/* Links of the full run: the short run's plus K times one period's growth. */
static void expand_links(const htae_result *r1, const window *w, int K, htae_result *out)
{
    out->n_links = r1->n_links;
    out->links = xcalloc((size_t)r1->n_links + 1, sizeof *out->links);
    for (int j = 0; j < r1->n_links; j++) {
        size_t a = (size_t)w->c * (size_t)r1->n_links + (size_t)j;
        size_t b = (size_t)(w->c - w->d) * (size_t)r1->n_links + (size_t)j;
        htae_link_stat *s = &out->links[j];
        *s = r1->links[j];
        s->name = xstrdup(r1->links[j].name);
        s->rate = NULL;
        s->n_rate = 0;
        if (w->e > STEADY_EPS) /* approximately periodic: the three periods' mean */
            b = (size_t)(w->c - 3 * w->d) * (size_t)r1->n_links + (size_t)j;
        double n = w->e > STEADY_EPS ? 3.0 : 1.0;
        s->bytes += K * (r1->snap_bytes[a] - r1->snap_bytes[b]) / n;
        s->busy_s += K * (r1->snap_busy[a] - r1->snap_busy[b]) / n;
    }
    qsort(out->links, (size_t)out->n_links, sizeof *out->links, htae_link_stat_cmp);
}

/* The full plan's result from the short run's, 0 if the graphs do not line up. */
static int expand(const exec_graph *g, const exec_graph *g1, const htae_result *r1, const window *w,
                  int K, htae_result *out)
{
    memset(out, 0, sizeof *out);
    out->start = xmalloc(((size_t)g->n_tasks + 1) * sizeof *out->start);
    out->end = xmalloc(((size_t)g->n_tasks + 1) * sizeof *out->end);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        out->start[t] = out->end[t] = NAN;
    uint32_t n_streams = (uint32_t)g->n_ranks * (uint32_t)g->n_streams;
    int ok = g->n_ranks == g1->n_ranks && g->n_streams == g1->n_streams;
    for (uint32_t i = 0; ok && i < n_streams; i++)
        ok = expand_stream(g, g1, r1, i, w, K, out);
    for (uint32_t t = 0; ok && t < g->n_tasks; t++) {
        ok = !isnan(out->start[t]);
        if (ok && out->end[t] > out->makespan)
            out->makespan = out->end[t];
    }
    ok = ok && fabs(out->makespan - (r1->makespan + K * w->step)) <= w->e &&
         edges_hold(g, out, w->e);
    if (!ok) {
        htae_result_free(out);
        return 0;
    }
    out->activities = r1->activities;
    out->lean_colls = r1->lean_colls;
    out->timed_colls = r1->timed_colls;
    out->inlined_colls = r1->inlined_colls;
    out->solo_acts = r1->solo_acts;
    out->solo_turned = r1->solo_turned;
    out->solo_left_out = r1->solo_left_out;
    out->pruned = r1->pruned;
    out->wall_s = r1->wall_s;
    return 1;
}

/* A shorter run whose window was found, kept until the full plan's graph is there to expand it
 * into (steady_finish). */
struct steady_prepared {
    compiled_plan p1; /* the shorter plan: m1 micro-batches (its figures the whole plan's) */
    htae_result r1;
    window w;
    int m1, K;          /* K: the periods to insert */
    int attempt, spent; /* its attempt; micro-batches the attempts before it simulated */
    double makespan2;   /* steady_window_expand: the one-period-longer timeline's own makespan */
};

void steady_prepared_free(steady_prepared *pr)
{
    if (!pr)
        return;
    window_free(&pr->w);
    htae_result_free(&pr->r1);
    compiled_plan_free(&pr->p1);
    free(pr);
}

/* copt (NULL: the defaults) with a graph of m micro-batches. */
static compile_options graph_options(const compile_options *copt, int m)
{
    compile_options o;
    if (copt)
        o = *copt;
    else
        compile_default_options(&o);
    o.graph_micro_batches = m;
    return o;
}

/* The shorter plan of attempt `attempt` (m1 micro-batches, after `spent` simulated by the
 * attempts before it), compiled: the prepared run to be, or NULL with info->why. */
static steady_prepared *short_plan(const strategy *s, const cluster *c, const compile_options *copt,
                                   int attempt, int m1, int spent, steady_info *info)
{
    compile_options o1 = graph_options(copt, m1);
    steady_prepared *pr = xcalloc(1, sizeof *pr);
    pr->m1 = m1;
    pr->attempt = attempt;
    pr->spent = spent;
    ps_error e;
    ps_error_clear(&e);
    if (compile_plan(s, c, &o1, &pr->p1, &e)) {
        snprintf(info->why, sizeof info->why, "the shorter plan: %.70s", e.message);
        free(pr);
        return NULL;
    }
    return pr;
}

/* The shorter plan simulated and its window found: 1, or 0 with info->why (pr kept for the
 * caller to free). */
static int short_run(const strategy *s, const cluster *c, const htae_options *hopt,
                     steady_prepared *pr, steady_info *info)
{
    uint32_t *flagged;
    int n_flagged;
    unsigned char *flags = snapshot_flags(pr->p1.graph, &flagged, &n_flagged);
    htae_options o;
    if (hopt)
        o = *hopt;
    else
        htae_default_options(&o);
    o.snapshot_tasks = flags;
    ps_error e;
    ps_error_clear(&e);
    int ran = htae_run(pr->p1.graph, c, &o, &pr->r1, &e) == 0;
    int found = ran && window_of(pr->p1.graph, &pr->r1, flagged, n_flagged, s->pp,
                                 period_micro_batches(s), &pr->w);
    if (!ran)
        snprintf(info->why, sizeof info->why, "the shorter run: %.72s", e.message);
    else if (!found)
        snprintf(info->why, sizeof info->why, "no period found");
    else
        pr->K = (info->micro_batches - pr->m1) / pr->w.d;
    info->short_wall_s += ran ? pr->r1.wall_s : 0.0;
    free(flags);
    free(flagged);
    return found;
}

int steady_attempt_pays(int m, int spent, int m1)
{
    return spent + m1 < m;
}

/* Attempt `attempt`'s shorter plan, compiled, when it may be tried after `spent` micro-batches
 * simulated: NULL with info->why (kept from the attempt before when there is no other) when
 * not. */
static steady_prepared *attempt_plan(const strategy *s, const cluster *c,
                                     const compile_options *copt, const htae_options *hopt,
                                     int allow, int attempt, int spent, steady_info *info)
{
    int m = info->micro_batches, il = s->schedule == SCHED_INTERLEAVED;
    int m1 = steady_short_micro_batches(s->pp, il, attempt);
    const char *why = m1 ? ineligible(s, copt, hopt, allow, m, m1) : NULL;
    if (!m1 || why || !steady_attempt_pays(m, spent, m1)) {
        if (why) /* else the last attempt's reason stays */
            snprintf(info->why, sizeof info->why, "%s", why);
        return NULL;
    }
    return short_plan(s, c, copt, attempt, m1, spent, info);
}

steady_prepared *steady_begin(const strategy *s, const cluster *c, const compile_options *copt,
                              const htae_options *hopt, int allow, steady_info *info)
{
    memset(info, 0, sizeof *info);
    info->micro_batches = info->simulated = strategy_micro_batches(s);
    return attempt_plan(s, c, copt, hopt, allow, 0, 0, info);
}

const compiled_plan *steady_begun_plan(const steady_prepared *pr)
{
    return &pr->p1;
}

steady_prepared *steady_prepare_run(const strategy *s, const cluster *c,
                                    const compile_options *copt, const htae_options *hopt,
                                    int allow, steady_prepared *pr, steady_info *info)
{
    while (pr) {
        const char *why = ineligible(s, copt, hopt, allow, info->micro_batches, pr->m1);
        if (why) { /* a gate asked for link counters since steady_begin */
            snprintf(info->why, sizeof info->why, "%s", why);
            steady_prepared_free(pr);
            return NULL;
        }
        if (short_run(s, c, hopt, pr, info)) {
            info->simulated = pr->m1;
            return pr;
        }
        int attempt = pr->attempt + 1, spent = pr->spent + pr->m1;
        steady_prepared_free(pr);
        if (strcmp(info->why, "no period found") != 0)
            return NULL; /* a longer run would not change that */
        pr = attempt_plan(s, c, copt, hopt, allow, attempt, spent, info);
    }
    return NULL;
}

steady_prepared *steady_prepare(const strategy *s, const cluster *c, const compile_options *copt,
                                const htae_options *hopt, int allow, steady_info *info)
{
    steady_prepared *pr = steady_begin(s, c, copt, hopt, allow, info);
    return steady_prepare_run(s, c, copt, hopt, allow, pr, info);
}

/* The prepared run's window is used: the report says so. */
static void window_used(const steady_prepared *pr, steady_info *info)
{
    info->used = 1;
    info->period_s = pr->w.step;
    info->approx_s = pr->w.e > STEADY_EPS ? pr->w.e : 0.0;
    info->inserted = pr->K;
}

int steady_finish(const cluster *c, const htae_options *hopt, const compiled_plan *plan,
                  steady_prepared *pr, htae_result *out, steady_info *info, ps_error *err)
{
    assert(!pr || plan->micro_batches == info->micro_batches);
    info->micro_batches = plan->micro_batches; /* a recommendation model's, counted its own way */
    if (pr && expand(plan->graph, pr->p1.graph, &pr->r1, &pr->w, pr->K, out)) {
        expand_links(&pr->r1, &pr->w, pr->K, out);
        window_used(pr, info);
    } else if (pr) {
        snprintf(info->why, sizeof info->why, "the plans' graphs differ");
    }
    steady_prepared_free(pr);
    if (info->used)
        return 0;
    info->simulated = info->micro_batches;
    return htae_run(plan->graph, c, hopt, out, err);
}

int steady_window_plan(const strategy *s, const cluster *c, const compile_options *copt,
                       int micro_batches, compiled_plan *plan, ps_error *err)
{
    compile_options o = graph_options(copt, micro_batches);
    return compile_plan(s, c, &o, plan, err);
}

int steady_window_micro_batches(const strategy *s, const steady_prepared *pr)
{
    return pr->m1 + period_micro_batches(s);
}

int steady_window_expand(steady_prepared *pr, const compiled_plan *plan, htae_result *out,
                         steady_info *info)
{
    assert(plan->micro_batches == info->micro_batches);
    if (!expand(plan->graph, pr->p1.graph, &pr->r1, &pr->w, 1, out)) {
        snprintf(info->why, sizeof info->why, "the plans' graphs differ");
        return 0;
    }
    pr->makespan2 = out->makespan;
    /* the whole plan's makespan: its last task is the shorter run's, K periods later (as
     * expand has it) */
    out->makespan = pr->r1.makespan + pr->K * pr->w.step;
    expand_links(&pr->r1, &pr->w, pr->K, out);
    window_used(pr, info);
    return 1;
}

void steady_window_summarize(const steady_prepared *pr, const compiled_plan *plan,
                             const htae_result *out, report_summary *sum)
{
    report_plan rp1 = run_report_plan(&pr->p1), rp2 = run_report_plan(plan);
    htae_result r2 = *out; /* its own timeline: one period inserted */
    r2.makespan = pr->makespan2;
    report_summarize_periodic(&rp1, &pr->r1, &rp2, &r2, pr->K, out->makespan, sum);
}

int steady_window_path(const steady_prepared *pr, const compiled_plan *plan, const htae_result *out,
                       report_critical_path *path)
{
    htae_result r2 = *out;
    r2.makespan = pr->makespan2;
    return report_critical_path_periodic(pr->p1.graph, &pr->r1, plan->graph, &r2, pr->K,
                                         fmax(STEADY_EPS, pr->w.e), path);
}

uint64_t steady_window_tasks(const steady_prepared *pr, const compiled_plan *plan)
{
    uint64_t n1 = pr->p1.graph->n_tasks, n2 = plan->graph->n_tasks;
    assert(n2 > n1);
    return n1 + (uint64_t)pr->K * (n2 - n1);
}

int steady_run(const strategy *s, const cluster *c, const compile_options *copt,
               const htae_options *hopt, int allow, const compiled_plan *plan, htae_result *out,
               steady_info *info, ps_error *err)
{
    steady_prepared *pr = steady_prepare(s, c, copt, hopt, allow, info);
    return steady_finish(c, hopt, plan, pr, out, info, err);
}
