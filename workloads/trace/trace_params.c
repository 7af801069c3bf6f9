/* trace_params.c: which gradient collective carries the gradients of which forward op's
 * parameters, inferred from autograd's records (for the what-if priority:gradients). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

static const char ACCUMULATE_GRAD[] =
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad";
static const char BACKWARD_NODE[] = "autograd::engine::evaluate_function: ";

/* A parameter whose gradient autograd accumulated and no gradient collective took yet. */
typedef struct pending {
    long long seq; /* the backward node's Sequence number, -1: none */
    int event;     /* the AccumulateGrad's index in traceEvents */
    double numel;  /* the parameter's elements (record_shapes), -1: not recorded */
} pending;

/* The elements of the first input of cpu_op e (its Input Dims), -1 if not a recorded tensor. */
static double first_input_numel(const trace_ev *e)
{
    const cJSON *dims = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input Dims") : NULL;
    const cJSON *d = cJSON_IsArray(dims) ? cJSON_GetArrayItem(dims, 0) : NULL;
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) < 1)
        return -1;
    double n = 1;
    for (const cJSON *x = d->child; x; x = x->next)
        n *= cJSON_IsNumber(x) ? x->valuedouble : 0.0;
    return n;
}

/* DDP's bucket is the flat concatenation of its gradients: its bytes are their elements x the
 * element size (1, 2, 4 or 8 bytes). */
static int bucket_size_matches(double bytes, double elements)
{
    static const double sizes[] = {1, 2, 4, 8};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (fabs(bytes - elements * sizes[k]) <= 1e-9 * bytes)
            return 1;
    return 0;
}

/* The outermost cpu_ops of one thread (trace_cpu.c's ops), and its launching calls. */
typedef struct thread_ops {
    double *os, *oe;
    int n;
    int *calls; /* runtime calls with GPU work, time order (event positions) */
    int n_calls;
} thread_ops;

static void thread_ops_build(const build *b, trace_ev **v, int n, thread_ops *o)
{
    memset(o, 0, sizeof *o);
    o->os = xmalloc(((size_t)n + 1) * sizeof *o->os);
    o->oe = xmalloc(((size_t)n + 1) * sizeof *o->oe);
    o->calls = xmalloc(((size_t)n + 1) * sizeof *o->calls);
    double cur_end = -INFINITY;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        int pos = (int)(e - b->te->ev);
        if (e->kind == EV_RUNTIME && b->gpu_of[pos] >= 0)
            o->calls[o->n_calls++] = pos;
        if (e->kind != EV_CPU_OP || e->ts < cur_end || tb_is_module_call(e->name))
            continue;
        cur_end = e->ts + e->dur;
        o->os[o->n] = e->ts;
        o->oe[o->n++] = cur_end;
    }
}

static void thread_ops_free(thread_ops *o)
{
    free(o->os);
    free(o->oe);
    free(o->calls);
}

static void add_need(trace_rank *r, uint32_t gpu, uint32_t coll)
{
    for (uint32_t k = 0; k < r->n_needs; k++)
        if (r->needs[2 * k] == gpu && r->needs[2 * k + 1] == coll)
            return;
    xgrow(&r->needs, sizeof *r->needs, 2 * ((size_t)r->n_needs + 1), &r->cap_needs);
    r->needs[2 * r->n_needs] = gpu;
    r->needs[2 * r->n_needs + 1] = coll;
    r->n_needs++;
}

/* The GPU ops launched by the outermost op around forward event fe: each needs `coll`. */
static void forward_needs(build *b, const thread_ops *o, const trace_ev *fe, uint32_t coll)
{
    int k = -1;
    for (int i = 0; i < o->n && o->os[i] <= fe->ts; i++)
        if (fe->ts < o->oe[i])
            k = i;
    double a = k >= 0 ? o->os[k] : fe->ts, z = k >= 0 ? o->oe[k] : fe->ts + fe->dur;
    for (int c = 0; c < o->n_calls; c++) {
        const trace_ev *rt = &b->te->ev[o->calls[c]];
        int g = b->gpu_of[o->calls[c]];
        if (rt->ts >= a && rt->ts < z && b->gpu_op[g] >= 0 &&
            b->r->ops[b->gpu_op[g]].kind == TRACE_GPU)
            add_need(b->r, (uint32_t)b->gpu_op[g], coll);
    }
}

static void why(build *b, const char *fmt, ...)
{
    if (b->r->params_why[0])
        return; /* the first reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->r->params_why, sizeof b->r->params_why, fmt, ap);
    va_end(ap);
}

/* One thread's backward: each AccumulateGrad takes the gradient of the backward node run just
 * before it (autograd runs an AccumulateGrad as soon as it is ready); an all-reduce launched
 * inside an AccumulateGrad is a gradient collective (DDP's bucket hook) carrying the gradients
 * accumulated since the previous one of its step. With shapes recorded, their elements must
 * make its bytes (the first op inside an AccumulateGrad copies or adds the gradient). */
static void thread_backward(build *b, trace_ev **v, int n, const tb_map *fwd, thread_ops *ops,
                            int shapes)
{
    trace_rank *r = b->r;
    pending *p = xmalloc(((size_t)n + 1) * sizeof *p);
    int n_p = 0, step = -1;
    long long last_seq = -1;
    double acc_end = -INFINITY;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        if (tb_step_of(b, e->ts) != step) {
            step = tb_step_of(b, e->ts);
            n_p = 0; /* gradients no collective took are not in any */
        }
        if (e->kind == EV_CPU_OP && strcmp(e->name, ACCUMULATE_GRAD) == 0) {
            acc_end = e->ts + e->dur;
            p[n_p].seq = last_seq;
            p[n_p].numel = -1;
            p[n_p++].event = e->idx;
            continue;
        }
        if (e->kind == EV_CPU_OP && e->ts < acc_end && n_p > 0 && p[n_p - 1].numel < 0) {
            p[n_p - 1].numel = first_input_numel(e); /* the gradient's copy or accumulation */
            continue;
        }
        if (e->kind == EV_CPU_OP &&
            strncmp(e->name, BACKWARD_NODE, sizeof BACKWARD_NODE - 1) == 0) {
            double seq = trace_arg_number(e, "Sequence number");
            last_seq = isnan(seq) ? -1 : (long long)seq;
            continue;
        }
        int pos = (int)(e - b->te->ev);
        if (e->kind != EV_RUNTIME || e->ts >= acc_end || b->gpu_of[pos] < 0 ||
            b->gpu_op[b->gpu_of[pos]] < 0)
            continue;
        uint32_t c = (uint32_t)b->gpu_op[b->gpu_of[pos]];
        if (r->ops[c].kind != TRACE_COLL || r->ops[c].coll != COLL_ALLREDUCE)
            continue;
        r->ops[c].grad = 1;
        r->n_grad_colls++;
        if (n_p == 0)
            why(b,
                "the gradient all-reduce launched at traceEvents[%d] follows no AccumulateGrad "
                "since the previous one: which parameters it carries is unknown",
                b->te->ev[b->gpu_of[pos]].idx);
        double elements = 0;
        int unknown = -1;
        for (int k = 0; k < n_p; k++) {
            elements += p[k].numel;
            if (p[k].numel < 0 && unknown < 0)
                unknown = p[k].event;
        }
        if (shapes && n_p > 0 && unknown >= 0)
            why(b,
                "the gradient all-reduce launched at traceEvents[%d]: the trace records shapes "
                "but not the size of the gradient accumulated at traceEvents[%d], so which "
                "parameters it carries cannot be checked",
                b->te->ev[b->gpu_of[pos]].idx, unknown);
        else if (shapes && n_p > 0 && !bucket_size_matches(r->ops[c].bytes, elements))
            why(b,
                "the gradient all-reduce launched at traceEvents[%d] carries %.0f bytes, but the "
                "gradients accumulated since the previous one (%d) hold %.0f elements: its "
                "bucket was not filled in the order they were accumulated",
                b->te->ev[b->gpu_of[pos]].idx, r->ops[c].bytes, n_p, elements);
        for (int k = 0; k < n_p; k++) {
            int f = p[k].seq >= 0 ? tb_map_get(fwd, p[k].seq) : -1;
            if (p[k].seq < 0)
                why(b,
                    "the AccumulateGrad at traceEvents[%d] follows no backward node with a "
                    "'Sequence number'",
                    p[k].event);
            else if (f < 0)
                why(b,
                    "the AccumulateGrad at traceEvents[%d] takes the gradient of autograd's "
                    "node %lld, and no forward cpu_op of the replayed window has that "
                    "'Sequence number'",
                    p[k].event, p[k].seq);
            else
                forward_needs(b, &ops[b->te->ev[f].thread], &b->te->ev[f], c);
        }
        n_p = 0;
    }
    free(p);
}

void tb_infer_params(build *b)
{
    trace_events *te = b->te;
    trace_ev **v = xmalloc(((size_t)te->n + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        if ((e->kind == EV_CPU_OP || e->kind == EV_RUNTIME) && e->ts >= b->w0 && e->ts < b->w1)
            v[n++] = &te->ev[i];
    }
    tb_sort_events(v, n);
    /* Sequence number -> its forward op: the last cpu_op with it outside autograd's backward
     * nodes (the ops inside a node carry its number too; an op that creates no node records
     * the number the next node will take: batch norm's num_batches_tracked.add_(1) before
     * aten::batch_norm) */
    tb_map fwd;
    tb_map_init(&fwd, (size_t)n + 1);
    double *bw_end = xmalloc(((size_t)te->n_tids + 1) * sizeof *bw_end);
    char *forward = xcalloc((size_t)n + 1, 1);
    for (int t = 0; t < te->n_tids; t++)
        bw_end[t] = -INFINITY;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        if (e->kind != EV_CPU_OP || e->ts < bw_end[e->thread])
            continue;
        if (strncmp(e->name, BACKWARD_NODE, sizeof BACKWARD_NODE - 1) == 0)
            bw_end[e->thread] = e->ts + e->dur;
        else
            forward[i] = 1;
    }
    int shapes = 0; /* record_shapes: each AccumulateGrad's size can be checked */
    for (int i = 0; i < n && !shapes; i++)
        shapes = v[i]->kind == EV_CPU_OP && first_input_numel(v[i]) >= 0;
    for (int i = n; i-- > 0;) { /* backwards: the first put of a key wins */
        double seq = forward[i] ? trace_arg_number(v[i], "Sequence number") : NAN;
        if (!isnan(seq))
            tb_map_put(&fwd, (long long)seq, (int)(v[i] - te->ev));
    }
    free(forward);
    free(bw_end);
    int *first = xcalloc((size_t)te->n_tids + 2, sizeof *first); /* each thread's events */
    for (int i = 0; i < n; i++)
        first[v[i]->thread + 1]++;
    for (int t = 0; t < te->n_tids; t++)
        first[t + 1] += first[t];
    trace_ev **tv = xmalloc(((size_t)n + 1) * sizeof *tv);
    int *fill = xcalloc((size_t)te->n_tids + 1, sizeof *fill);
    for (int i = 0; i < n; i++)
        tv[first[v[i]->thread] + fill[v[i]->thread]++] = v[i];
    thread_ops *ops = xcalloc((size_t)te->n_tids + 1, sizeof *ops);
    for (int t = 0; t < te->n_tids; t++)
        thread_ops_build(b, tv + first[t], first[t + 1] - first[t], &ops[t]);
    for (int t = 0; t < te->n_tids; t++)
        thread_backward(b, tv + first[t], first[t + 1] - first[t], &fwd, ops, shapes);
    for (int t = 0; t < te->n_tids; t++)
        thread_ops_free(&ops[t]);
    free(ops);
    free(tv);
    free(fill);
    free(first);
    tb_map_free(&fwd);
    free(v);
}
