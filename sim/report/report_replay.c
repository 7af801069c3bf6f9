/* report_replay.c: the summary of a replayed trace: predicted steps read off the main thread's
 * tasks like ProfilerStep spans, the GPU's busy time, and the host overheads by type. */
#include "report_replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"

typedef struct span {
    double a, b;
} span;

static int by_start(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Length of the union of v[0..n) clipped to [lo, hi]. */
static double union_len(span *v, int n, double lo, double hi)
{
    qsort(v, (size_t)n, sizeof *v, by_start);
    double total = 0, a = -INFINITY, b = -INFINITY;
    for (int i = 0; i <= n; i++) {
        if (i < n && v[i].a <= b) {
            b = fmax(b, v[i].b);
            continue;
        }
        if (b > a)
            total += fmax(0.0, fmin(b, hi) - fmax(a, lo));
        if (i < n) {
            a = v[i].a;
            b = v[i].b;
        }
    }
    return total;
}

/* The predicted steps of job rank i into p[n_steps]; the reported steps' span into [*lo, *hi]. */
static void predicted_steps(const trace_job *j, int i, uint32_t *const *task_of,
                            const htae_result *r, double *p, double *lo, double *hi)
{
    const trace_rank *tr = &j->ranks[i];
    int n = tr->n_steps;
    double *a = xmalloc((size_t)n * sizeof *a), *b = xmalloc((size_t)n * sizeof *b);
    for (int s = 0; s < n; s++) {
        a[s] = INFINITY;
        b[s] = -INFINITY;
    }
    for (uint32_t k = 0; k < tr->n_ops; k++) {
        const trace_op *op = &tr->ops[k];
        if (tr->has_steps && op->lane != tr->main_lane)
            continue;
        int s = tr->has_steps || tr->steady ? op->step : 0;
        uint32_t t = task_of[i][k];
        a[s] = fmin(a[s], tr->has_steps ? r->start[t] : 0.0);
        b[s] = fmax(b[s], r->end[t]);
    }
    *lo = INFINITY;
    *hi = -INFINITY;
    if (tr->steady) { /* the period: the copy's end after the traced step's */
        for (int s = 0; s < n; s++)
            p[s] = b[s] > a[s] ? b[s] - a[s] : 0.0;
        p[n - 1] = b[n - 1] - b[n - 2];
        *lo = b[n - 2];
        *hi = b[n - 1];
        free(a);
        free(b);
        return;
    }
    for (int s = 0; s < n; s++) {
        p[s] = b[s] > a[s] ? b[s] - a[s] : 0.0;
        if (s >= tr->first_reported) {
            *lo = fmin(*lo, a[s]);
            *hi = fmax(*hi, b[s]);
        }
    }
    free(a);
    free(b);
}

static void breakdown(const trace_job *j, int i, const exec_graph *g, uint32_t *const *task_of,
                      const htae_result *r, double lo, double hi, replay_summary *s)
{
    const trace_rank *tr = &j->ranks[i];
    span *gpu = xmalloc(((size_t)tr->n_ops + 1) * sizeof *gpu);
    span *comm = xmalloc(((size_t)tr->n_ops + 1) * sizeof *comm);
    int ng = 0, nc = 0;
    memset(s->overheads, 0, sizeof s->overheads);
    for (uint32_t k = 0; k < tr->n_ops; k++) {
        const trace_op *op = &tr->ops[k];
        uint32_t t = task_of[i][k];
        span v = {r->start[t], r->end[t]};
        if (op->step < tr->first_reported - (tr->steady ? 1 : 0))
            continue; /* a period also holds the work the step before left in flight */
        if (op->kind == TRACE_CPU || op->kind == TRACE_RUNTIME) {
            if (op->step < tr->first_reported)
                continue;
            if (op->overhead < TRACE_OVH_COUNT)
                s->overheads[op->overhead] += op->seconds;
        } else {
            gpu[ng++] = v;
        }
        if (op->kind == TRACE_COLL || op->kind == TRACE_COMM_MEASURED)
            comm[nc++] = v;
    }
    (void)g;
    double steps = s->steps;
    double window = hi - lo;
    s->gpu_active_s = union_len(gpu, ng, lo, hi) / steps;
    s->comm_s = union_len(comm, nc, lo, hi) / steps;
    s->gpu_idle_s = fmax(0.0, window / steps - s->gpu_active_s);
    for (int k = 0; k < TRACE_OVH_COUNT; k++)
        s->overheads[k] /= steps;
    free(gpu);
    free(comm);
}

void report_replay_summarize(const trace_job *j, const exec_graph *g, uint32_t *const *task_of,
                             const htae_result *r, replay_summary *out)
{
    memset(out, 0, sizeof *out);
    double best_lo = 0, best_hi = 0;
    for (int i = 0; i < j->n_ranks; i++) {
        const trace_rank *tr = &j->ranks[i];
        double *p = xmalloc((size_t)tr->n_steps * sizeof *p), lo, hi;
        predicted_steps(j, i, task_of, r, p, &lo, &hi);
        int f = tr->first_reported, m_steps = tr->n_steps - f;
        double it = trace_step_median(p + f, m_steps);
        if (i == 0 || it > out->iteration_s) {
            free(out->predicted);
            out->predicted = xmalloc((size_t)m_steps * sizeof *out->predicted);
            memcpy(out->predicted, p + f, (size_t)m_steps * sizeof *p);
            out->rank = i;
            out->steps = m_steps;
            out->iteration_s = it;
            best_lo = lo;
            best_hi = hi;
        }
        free(p);
        double m = trace_step_median(tr->measured_step + f, m_steps);
        out->measured_step_s = fmax(out->measured_step_s, m);
    }
    breakdown(j, out->rank, g, task_of, r, best_lo, best_hi, out);
}

void report_replay_free(replay_summary *s)
{
    free(s->predicted);
    s->predicted = NULL;
}

static int by_total(const void *x, const void *y)
{
    const replay_op_overheads *p = x, *q = y;
    double a = 0, b = 0;
    for (int k = 0; k < TRACE_OVH_COUNT; k++) {
        a += p->s[k];
        b += q->s[k];
    }
    return a > b ? -1 : a < b;
}

replay_op_overheads *report_replay_overheads(const trace_job *j, int rank, int *n)
{
    const trace_rank *tr = &j->ranks[rank];
    replay_op_overheads *v = xcalloc((size_t)j->n_names + 1, sizeof *v); /* by name, then -1 */
    for (int k = 0; k <= j->n_names; k++)
        v[k].name = k < j->n_names ? k : -1;
    int *next = xmalloc(((size_t)tr->n_lanes + 1) * sizeof *next); /* next op's name per lane */
    int *seq = xmalloc(((size_t)tr->n_lanes + 1) * sizeof *seq);
    for (int l = 0; l < tr->n_lanes; l++)
        next[l] = seq[l] = -1;
    for (uint32_t k = tr->n_ops; k-- > 0;) { /* backwards: the op after a gap is known */
        const trace_op *op = &tr->ops[k];
        if ((op->kind != TRACE_CPU && op->kind != TRACE_RUNTIME) ||
            op->overhead >= TRACE_OVH_COUNT || op->step < tr->first_reported)
            continue;
        int who = op->op >= 0 ? op->op : next[op->lane];
        replay_op_overheads *o = &v[who >= 0 ? who : j->n_names];
        o->s[op->overhead] += op->seconds;
        if (op->kind == TRACE_RUNTIME && op->op >= 0)
            o->launches += 1;
        if (op->op >= 0 && op->op_seq != seq[op->lane]) {
            o->count += 1;
            seq[op->lane] = op->op_seq;
        }
        if (op->op >= 0)
            next[op->lane] = op->op;
    }
    int m = 0, steps = tr->n_steps - tr->first_reported;
    for (int k = 0; k <= j->n_names; k++) {
        double total = v[k].count;
        for (int t = 0; t < TRACE_OVH_COUNT; t++)
            total += v[k].s[t];
        if (total > 0) {
            v[m] = v[k];
            for (int t = 0; t < TRACE_OVH_COUNT; t++)
                v[m].s[t] /= steps;
            v[m].count /= steps;
            v[m].launches /= steps;
            m++;
        }
    }
    qsort(v, (size_t)m, sizeof *v, by_total);
    free(next);
    free(seq);
    *n = m;
    return v;
}
