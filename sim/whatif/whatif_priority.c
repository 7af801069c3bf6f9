/* whatif_priority.c: the what-if priority:gradients (P3, Jayarajan et al., as Daydream models
 * it): the traced step and a copy of it, the copy's forward ops waiting only for the gradient
 * collectives (and the update) of their own parameters, the collectives first-needed first. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "whatif.h"

static const uint32_t NONE = UINT32_MAX;

static int refuse(ps_error *err, const whatif_spec *s, const trace_rank *r, const char *why)
{
    return ps_error_set(err, PS_EINPUT, "", 0, 0, "", "--what-if '%s': %.300s: %s", s->text,
                        r->file, why);
}

static void add_edge(trace_rank *r, uint32_t from, uint32_t to)
{
    xgrow(&r->edges, sizeof *r->edges, 2 * ((size_t)r->n_edges + 1), &r->cap_edges);
    r->edges[2 * r->n_edges] = from;
    r->edges[2 * r->n_edges + 1] = to;
    r->n_edges++;
}

static void add_need(trace_rank *r, uint32_t gpu, uint32_t coll)
{
    xgrow(&r->needs, sizeof *r->needs, 2 * ((size_t)r->n_needs + 1), &r->cap_needs);
    r->needs[2 * r->n_needs] = gpu;
    r->needs[2 * r->n_needs + 1] = coll;
    r->n_needs++;
}

/* ---- the steady state: the last step, then a copy of it ---- */

/* Rank r's last step copied after it (its ops appended, so each lane's copy follows the
 * original; its edges and needs copied: a copied op needs the original's collective). */
static void steady_rank(trace_rank *r)
{
    if (r->steady)
        return;
    int last = r->n_steps - 1;
    uint32_t n = r->n_ops, ne = r->n_edges, nn = r->n_needs;
    uint32_t *copy = xmalloc(((size_t)n + 1) * sizeof *copy);
    double shift = r->measured_step[last];
    for (uint32_t i = 0; i < n; i++) {
        copy[i] = NONE;
        if (r->ops[i].step != last)
            continue;
        trace_op op = r->ops[i];
        op.step = last + 1;
        op.start += shift;
        xgrow(&r->ops, sizeof *r->ops, (size_t)r->n_ops + 1, &r->cap_ops);
        copy[i] = r->n_ops;
        r->ops[r->n_ops++] = op;
    }
    for (uint32_t e = 0; e < ne; e++) {
        uint32_t a = r->edges[2 * e], b = r->edges[2 * e + 1];
        if (copy[a] != NONE && copy[b] != NONE)
            add_edge(r, copy[a], copy[b]);
    }
    for (uint32_t k = 0; k < nn; k++)
        if (copy[r->needs[2 * k]] != NONE)
            add_need(r, copy[r->needs[2 * k]], r->needs[2 * k + 1]);
    r->measured_step =
        xreallocarray(r->measured_step, (size_t)r->n_steps + 1, sizeof *r->measured_step);
    r->measured_step[last + 1] = r->measured_step[last];
    r->n_steps++;
    r->first_reported = r->n_steps - 1;
    r->steady = 1;
    free(copy);
}

void whatif_steady_state(trace_job *j)
{
    for (int i = 0; i < j->n_ranks; i++)
        steady_rank(&j->ranks[i]);
}

int whatif_wants_steady_state(const whatif_spec *v, int n, const trace_job *j)
{
    int grads = 0;
    for (int i = 0; i < j->n_ranks; i++)
        grads += j->ranks[i].n_grad_colls;
    for (int i = 0; i < n && grads > 0; i++)
        if (v[i].kind == WHATIF_PRIORITY_GRADIENTS)
            return 1;
    return 0;
}

/* ---- P3 ---- */

/* A gradient collective of the traced step (A) and what P3 makes of it. */
typedef struct grad {
    uint32_t op;       /* in step A */
    uint32_t need_op;  /* its first consumer in step B (measured start order) */
    double first_need; /* that consumer's measured start */
    int rank;          /* its priority: 0 first */
    uint32_t update;   /* its update task (new index) */
} grad;

static int is_grad(const trace_rank *r, uint32_t i, int step)
{
    return r->ops[i].kind == TRACE_COLL && r->ops[i].grad && r->ops[i].step == step;
}

/* The ordinal of gradient collective i among those of its step (index order). */
static int grad_ordinal(const trace_rank *r, uint32_t i)
{
    int k = 0;
    for (uint32_t x = 0; x < i; x++)
        k += is_grad(r, x, r->ops[i].step);
    return k;
}

/* The GPU op (not a collective) launched last from the collective c's launching thread before
 * c: ProcessGroupNCCL makes its stream wait for the thread's current stream at that point.
 * NONE if none. */
static uint32_t stream_before(const trace_rank *r, const uint32_t *launch, uint32_t c)
{
    if (launch[c] == NONE)
        return NONE;
    uint32_t best = NONE;
    for (uint32_t g = 0; g < r->n_ops; g++) {
        uint32_t l = launch[g];
        if (r->ops[g].kind != TRACE_GPU || l == NONE || r->ops[l].lane != r->ops[launch[c]].lane ||
            l >= launch[c])
            continue;
        if (best == NONE || l > launch[best])
            best = g;
    }
    return best;
}

/* The edges of the rebuilt rank, pairs (from, to). */
typedef struct edge_list {
    uint32_t *v, n;
    size_t cap;
} edge_list;

static void push_edge(edge_list *e, uint32_t from, uint32_t to)
{
    xgrow(&e->v, sizeof *e->v, 2 * ((size_t)e->n + 1), &e->cap);
    e->v[2 * e->n] = from;
    e->v[2 * e->n + 1] = to;
    e->n++;
}

typedef struct rebuild {
    trace_op *ops;
    uint32_t n, cap;
    uint32_t *first, *count; /* old op -> its new ops [first, first + count) */
} rebuild;

static uint32_t emit(rebuild *b, trace_op op)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->ops = xreallocarray(b->ops, b->cap, sizeof *b->ops);
    }
    b->ops[b->n] = op;
    return b->n++;
}

/* Old op i emitted: a gradient collective of the two steps (prioritized) as its slices
 * (floating), any other op as it is. */
static void emit_op(rebuild *b, const trace_rank *r, uint32_t i, int prioritized, double slice)
{
    trace_op op = r->ops[i];
    int n = 1;
    if (prioritized) {
        if (slice > 0 && op.bytes > slice)
            n = (int)ceil(op.bytes / slice);
        op.bytes /= n;
        op.floating = 1;
    }
    b->first[i] = b->n;
    b->count[i] = (uint32_t)n;
    for (int k = 0; k < n; k++)
        emit(b, op);
}

/* Sort gradient collectives (old indices) by their priority rank. */
static void sort_by_rank(uint32_t *v, int n, const int *rank_of)
{
    for (int p = 1; p < n; p++)
        for (int q = p; q > 0 && rank_of[v[q]] < rank_of[v[q - 1]]; q--) {
            uint32_t t = v[q];
            v[q] = v[q - 1];
            v[q - 1] = t;
        }
}

/* The state of one P3 rewrite of rank r: step A (traced) and B (its copy). */
typedef struct p3 {
    const whatif_spec *s;
    trace_job *j;
    trace_rank *r;
    int A, B;
    double opt_s;      /* the optimizer's GPU time in step A */
    int32_t opt_event; /* its first kernel's event */
    grad *g;           /* the gradient collectives of A */
    int n;
    double bytes;     /* their bytes */
    int *rank_of;     /* old op -> its priority, -1 if not a gradient collective of A or B */
    uint32_t *launch; /* old op -> its launch (runtime op), NONE if none */
    rebuild nb;       /* the new ops */
    edge_list ne;     /* the new edges */
} p3;

static void p3_free(p3 *p)
{
    free(p->g);
    free(p->rank_of);
    free(p->launch);
    free(p->nb.first);
    free(p->nb.count);
    free(p->nb.ops);
    free(p->ne.v);
}

/* What P3 cannot rewrite: several traces, a rank without its parameters' records, an optimizer
 * that runs collectives. */
static int p3_check(const whatif_spec *s, const trace_job *j, ps_error *err)
{
    if (j->n_ranks > 1)
        return refuse(err, s, &j->ranks[0],
                      "several traces: each rank would choose its own order of the collectives; "
                      "replay one trace (SPMD)");
    const trace_rank *r = &j->ranks[0];
    if (r->steady == 2)
        return refuse(err, s, r, "given twice");
    int a_step = r->steady ? r->n_steps - 2 : r->n_steps - 1;
    if (r->params_why[0])
        return refuse(err, s, r, r->params_why);
    for (uint32_t i = 0; i < r->n_ops; i++) {
        const trace_op *op = &r->ops[i];
        if (op->step == a_step && op->optimizer &&
            (op->kind == TRACE_COLL || op->kind == TRACE_COMM_MEASURED)) {
            char why[200];
            snprintf(why, sizeof why,
                     "its optimizer step runs a collective (traceEvents[%d]): the update of one "
                     "bucket's parameters cannot be told from the others'",
                     op->event);
            return refuse(err, s, r, why);
        }
    }
    return 0;
}

/* The optimizer's GPU work of both steps goes (it moves into the next forward, bucket by
 * bucket); step A's time is kept in p->opt_s. */
static int p3_take_optimizer(p3 *p, whatif_effect *eff, ps_error *err)
{
    trace_rank *r = p->r;
    int found = 0;
    p->opt_event = -1;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        trace_op *op = &r->ops[i];
        if (op->kind != TRACE_GPU || !op->optimizer || (op->step != p->A && op->step != p->B))
            continue;
        if (op->step == p->A) {
            p->opt_s += op->seconds;
            eff->kernel_s_before += op->seconds;
            if (!found)
                p->opt_event = op->event;
            found = 1;
        }
        op->seconds = 0.0;
        op->lag = 0.0; /* measured after the wait for every bucket, which goes */
    }
    if (!found)
        return refuse(err, p->s, r,
                      "no optimizer step (an Optimizer.step# span launching GPU work) in its "
                      "last step: the parameters' update cannot be placed");
    eff->kernel_s_after = p->opt_s;
    return 0;
}

/* The gradient collectives of A, their first consumer in B and their priority; B's copies
 * take their originals' ranks. */
static int p3_priorities(p3 *p, int n_grads, ps_error *err)
{
    trace_rank *r = p->r;
    p->g = xcalloc((size_t)n_grads, sizeof *p->g);
    p->rank_of = xmalloc(((size_t)r->n_ops + 1) * sizeof *p->rank_of);
    grad *g = p->g;
    int n = 0;
    for (uint32_t i = 0; i < r->n_ops; i++)
        if (is_grad(r, i, p->A)) {
            g[n].op = i;
            g[n].need_op = NONE;
            g[n++].first_need = INFINITY;
            p->bytes += r->ops[i].bytes;
        }
    p->n = n;
    for (uint32_t k = 0; k < r->n_needs; k++) {
        uint32_t c = r->needs[2 * k + 1], x = r->needs[2 * k];
        if (r->ops[x].step != p->B)
            continue;
        for (int q = 0; q < n; q++)
            if (g[q].op == c && r->ops[x].start < g[q].first_need) {
                g[q].first_need = r->ops[x].start;
                g[q].need_op = x;
            }
    }
    for (int q = 0; q < n; q++) {
        if (g[q].need_op == NONE) {
            char why[200];
            snprintf(why, sizeof why,
                     "the gradient collective at traceEvents[%d] carries parameters that no GPU "
                     "op of the forward uses",
                     r->ops[g[q].op].event);
            return refuse(err, p->s, r, why);
        }
        g[q].rank = 0;
        for (int x = 0; x < n; x++)
            if (g[x].first_need < g[q].first_need || (g[x].first_need == g[q].first_need && x < q))
                g[q].rank++;
    }
    for (uint32_t i = 0; i < r->n_ops; i++) {
        p->rank_of[i] = -1;
        if (r->ops[i].kind == TRACE_COLL && r->ops[i].grad &&
            (r->ops[i].step == p->A || r->ops[i].step == p->B)) {
            int k = grad_ordinal(r, i);
            assert(k < n);
            p->rank_of[i] = g[k].rank;
        }
    }
    return 0;
}

/* Each op's launch, for the streams the collectives wait for. */
static void p3_launches(p3 *p)
{
    const trace_rank *r = p->r;
    p->launch = xmalloc(((size_t)r->n_ops + 1) * sizeof *p->launch);
    for (uint32_t i = 0; i < r->n_ops; i++)
        p->launch[i] = NONE;
    for (uint32_t e = 0; e < r->n_edges; e++) {
        uint32_t a = r->edges[2 * e], b = r->edges[2 * e + 1];
        if (r->ops[a].kind == TRACE_RUNTIME && r->ops[b].kind != TRACE_CPU &&
            r->ops[b].kind != TRACE_RUNTIME)
            p->launch[b] = a;
    }
}

/* The new order: updates before their first consumer, each lane's runs of gradient
 * collectives of one step in priority order, sliced. */
static void p3_order(p3 *p)
{
    const trace_rank *r = p->r;
    rebuild *nb = &p->nb;
    nb->first = xmalloc(((size_t)r->n_ops + 1) * sizeof *nb->first);
    nb->count = xcalloc((size_t)r->n_ops + 1, sizeof *nb->count);
    uint32_t *run_head = xmalloc(((size_t)r->n_ops + 1) * sizeof *run_head);
    uint32_t *prev = xmalloc(((size_t)r->n_lanes + 1) * sizeof *prev);
    for (int l = 0; l < r->n_lanes; l++)
        prev[l] = NONE;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        uint32_t q = prev[r->ops[i].lane];
        run_head[i] = NONE;
        if (p->rank_of[i] >= 0)
            run_head[i] = q != NONE && p->rank_of[q] >= 0 && r->ops[q].step == r->ops[i].step
                              ? run_head[q]
                              : i;
        prev[r->ops[i].lane] = i;
    }
    int32_t update_name = trace_job_name(p->j, "optimizer update of one gradient bucket (P3)");
    uint32_t *run = xmalloc(((size_t)r->n_ops + 1) * sizeof *run);
    for (uint32_t i = 0; i < r->n_ops; i++) {
        for (int q = 0; q < p->n; q++)
            if (p->g[q].need_op == i) {
                const trace_op *need = &r->ops[i];
                trace_op u = {.kind = TRACE_GPU,
                              .lane = need->lane,
                              .name = update_name,
                              .op = -1,
                              .op_seq = -1,
                              .step = p->B,
                              .event = p->opt_event,
                              .start = need->start,
                              .seconds = p->opt_s * r->ops[p->g[q].op].bytes / p->bytes,
                              .group_at = -1,
                              .optimizer = 1};
                p->g[q].update = emit(nb, u);
            }
        if (run_head[i] == NONE) {
            emit_op(nb, r, i, 0, p->s->factor);
        } else if (run_head[i] == i) {
            int m = 0;
            for (uint32_t x = i; x < r->n_ops; x++)
                if (run_head[x] == i)
                    run[m++] = x;
            sort_by_rank(run, m, p->rank_of);
            for (int k = 0; k < m; k++)
                emit_op(nb, r, run[k], 1, p->s->factor);
        }
    }
    free(run_head);
    free(run);
    free(prev);
}

/* The new edges: every new op of each end; a gradient collective's edges into GPU ops go (the
 * optimizer's wait for every bucket); the stream each waits for; the updates'. */
static void p3_edges(p3 *p)
{
    const trace_rank *r = p->r;
    const rebuild *nb = &p->nb;
    edge_list *ne = &p->ne;
    for (uint32_t e = 0; e < r->n_edges; e++) {
        uint32_t a = r->edges[2 * e], b = r->edges[2 * e + 1];
        if (p->rank_of[a] >= 0 && !r->lanes[r->ops[b].lane].is_cpu)
            continue;
        for (uint32_t x = 0; x < nb->count[a]; x++)
            for (uint32_t y = 0; y < nb->count[b]; y++)
                push_edge(ne, nb->first[a] + x, nb->first[b] + y);
    }
    for (uint32_t i = 0; i < r->n_ops; i++) {
        if (p->rank_of[i] < 0)
            continue;
        uint32_t w = stream_before(r, p->launch, i);
        for (uint32_t y = 0; w != NONE && y < nb->count[i]; y++)
            push_edge(ne, nb->first[w], nb->first[i] + y);
    }
    for (int q = 0; q < p->n; q++) {
        uint32_t c = p->g[q].op;
        for (uint32_t x = 0; x < nb->count[c]; x++)
            push_edge(ne, nb->first[c] + x, p->g[q].update);
        for (uint32_t k = 0; k < r->n_needs; k++)
            if (r->needs[2 * k + 1] == c && r->ops[r->needs[2 * k]].step == p->B)
                push_edge(ne, p->g[q].update, nb->first[r->needs[2 * k]]);
    }
}

/* The rank takes the new ops and edges (p's become empty). */
static void p3_install(p3 *p)
{
    trace_rank *r = p->r;
    free(r->ops);
    r->ops = p->nb.ops;
    r->n_ops = p->nb.n;
    r->cap_ops = p->nb.cap;
    free(r->edges);
    r->edges = p->ne.v;
    r->n_edges = p->ne.n;
    r->cap_edges = p->ne.cap;
    r->n_needs = 0; /* consumed */
    r->steady = 2;
    p->nb.ops = NULL;
    p->ne.v = NULL;
}

int whatif_priority_gradients(const whatif_spec *s, trace_job *j, whatif_effect *eff, ps_error *err)
{
    int all = 0;
    for (int k = 0; k < j->n_ranks; k++) {
        const trace_rank *x = &j->ranks[k];
        int last = x->steady ? x->n_steps - 2 : x->n_steps - 1;
        for (uint32_t i = 0; i < x->n_ops; i++)
            all += is_grad(x, i, last);
    }
    if (all == 0)
        return 0; /* nothing to reorder: the replay says so (kernels 0) */
    int rc = p3_check(s, j, err);
    if (rc)
        return rc;
    p3 p = {.s = s, .j = j, .r = &j->ranks[0]};
    steady_rank(p.r);
    p.A = p.r->n_steps - 2;
    p.B = p.r->n_steps - 1;
    rc = p3_take_optimizer(&p, eff, err);
    if (rc == 0)
        rc = p3_priorities(&p, all, err);
    if (rc == 0) {
        p3_launches(&p);
        p3_order(&p);
        p3_edges(&p);
        eff->kernels = p.n;
        p3_install(&p);
    }
    p3_free(&p);
    return rc;
}
