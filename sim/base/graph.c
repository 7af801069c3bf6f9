/* graph.c: building the execution graph: growing arrays while the compiler adds tasks, then
 * one finalize pass into flat successor lists and per-stream orders (checked acyclic). */
#include "graph.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

exec_graph *graph_create(int n_ranks)
{
    assert(n_ranks > 0);
    exec_graph *g = xcalloc(1, sizeof *g);
    g->n_ranks = n_ranks;
    g->n_streams = STREAM_COUNT;
    g->stream_kinds = xcalloc(STREAM_COUNT, 1); /* all STREAM_KIND_GPU */
    return g;
}

exec_graph *graph_create_streams(int n_ranks, int n_streams, const stream_kind *kinds,
                                 const char *const *names)
{
    assert(n_ranks > 0 && n_streams >= 1 && n_streams <= UINT8_MAX);
    exec_graph *g = xcalloc(1, sizeof *g);
    g->n_ranks = n_ranks;
    g->n_streams = n_streams;
    g->stream_kinds = xmalloc((size_t)n_streams);
    g->stream_names = xmalloc((size_t)n_streams * sizeof *g->stream_names);
    for (int s = 0; s < n_streams; s++) {
        assert(kinds[s] == STREAM_KIND_GPU || kinds[s] == STREAM_KIND_CPU);
        g->stream_kinds[s] = (uint8_t)kinds[s];
        g->stream_names[s] = xstrdup(names[s]);
    }
    return g;
}

void graph_free(exec_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_labels; i++)
        free(g->labels[i]);
    free(g->labels);
    if (g->stream_names)
        for (int s = 0; s < g->n_streams; s++)
            free(g->stream_names[s]);
    free(g->stream_names);
    free(g->stream_kinds);
    free(g->lag);
    free(g->floating);
    free(g->group_invariant);
    free(g->set_invariant);
    free(g->pair_ranks);
    free(g->pair_first);
    free(g->companion);
    free(g->comp_groups);
    free(g->comp_span);
    free(g->tasks);
    free(g->edges);
    free(g->succ);
    free(g->groups);
    free(g->group_ranks);
    for (uint32_t i = 0; i < g->n_colls; i++)
        free(g->colls[i].matrix);
    free(g->colls);
    free(g->coll_tasks);
    free(g->stream_first);
    free(g->stream_tasks);
    free(g);
}

int graph_label(exec_graph *g, const char *name)
{
    for (int i = 0; i < g->n_labels; i++) /* few distinct labels: a scan is fine */
        if (strcmp(g->labels[i], name) == 0)
            return i;
    xgrow(&g->labels, sizeof *g->labels, (size_t)g->n_labels + 1, &g->cap_labels);
    g->labels[g->n_labels] = xstrdup(name);
    return g->n_labels++;
}

/* A duration or a size the executor can use: finite and not negative. */
static inline int is_amount(double v)
{
    return isfinite(v) && v >= 0.0;
}

static uint32_t add_task(exec_graph *g, task_kind kind, int rank, int stream, task_category cat,
                         int label, int micro)
{
    assert(!g->finalized);
    assert(g->n_tasks < UINT32_MAX);
    assert(rank >= 0 && rank < g->n_ranks);
    assert(stream >= 0 && stream < g->n_streams && (unsigned)cat < CAT_COUNT);
    assert(kind == TASK_COMPUTE || g->stream_kinds[stream] == STREAM_KIND_GPU);
    assert(label >= 0 && label < g->n_labels);
    assert(micro >= -1);
    xgrow(&g->tasks, sizeof *g->tasks, (size_t)g->n_tasks + 1, &g->cap_tasks);
    graph_task *t = &g->tasks[g->n_tasks];
    memset(t, 0, sizeof *t);
    t->kind = (uint8_t)kind;
    t->stream = (uint8_t)stream;
    t->category = (uint8_t)cat;
    t->rank = rank;
    t->peer = -1;
    t->coll = -1;
    t->label = label;
    t->micro = micro;
    return g->n_tasks++;
}

uint32_t graph_add_compute(exec_graph *g, int rank, task_category cat, double seconds, int label,
                           int micro)
{
    return graph_add_compute_on(g, rank, STREAM_COMPUTE, cat, seconds, label, micro);
}

uint32_t graph_add_compute_on(exec_graph *g, int rank, int stream, task_category cat,
                              double seconds, int label, int micro)
{
    assert(is_amount(seconds));
    uint32_t id = add_task(g, TASK_COMPUTE, rank, stream, cat, label, micro);
    g->tasks[id].seconds = seconds;
    return id;
}

uint32_t graph_add_transfer(exec_graph *g, int src, int dst, stream_id stream, double bytes,
                            task_category cat, int label, int micro)
{
    assert(is_amount(bytes));
    assert(dst >= 0 && dst < g->n_ranks && dst != src);
    uint32_t id = add_task(g, TASK_TRANSFER, src, stream, cat, label, micro);
    g->tasks[id].peer = dst;
    g->tasks[id].bytes = bytes;
    return id;
}

void graph_set_lag(exec_graph *g, uint32_t t, double lag)
{
    assert(!g->finalized && t < g->n_tasks && is_amount(lag));
    if (t >= g->n_lag) {
        xgrow(&g->lag, sizeof *g->lag, (size_t)t + 1, &g->cap_lag);
        memset(g->lag + g->n_lag, 0, ((size_t)t + 1 - g->n_lag) * sizeof *g->lag);
        g->n_lag = t + 1;
    }
    g->lag[t] = lag;
}

void graph_set_floating(exec_graph *g, uint32_t t)
{
    assert(!g->finalized && t < g->n_tasks && !g->tasks[t].host);
    if (t >= g->n_floating) {
        xgrow(&g->floating, sizeof *g->floating, (size_t)t + 1, &g->cap_floating);
        memset(g->floating + g->n_floating, 0, (size_t)t + 1 - g->n_floating);
        g->n_floating = t + 1;
    }
    g->floating[t] = 1;
}

/* Mark index i of a flag array (grown to i + 1, zeros in between). */
static void set_flag(uint8_t **flags, uint32_t *n, size_t *cap, uint32_t i)
{
    if (i >= *n) {
        xgrow(flags, sizeof **flags, (size_t)i + 1, cap);
        memset(*flags + *n, 0, (size_t)i + 1 - *n);
        *n = i + 1;
    }
    (*flags)[i] = 1;
}

void graph_set_group_invariant(exec_graph *g, int gi)
{
    assert(!g->finalized && gi >= 0 && (uint32_t)gi < g->n_groups);
    set_flag(&g->group_invariant, &g->n_group_invariant, &g->cap_group_invariant, (uint32_t)gi);
}

void graph_set_pair_set_invariant(exec_graph *g, int set)
{
    assert(!g->finalized && set >= 0 && (uint32_t)set < g->n_pair_sets);
    set_flag(&g->set_invariant, &g->n_set_invariant, &g->cap_set_invariant, (uint32_t)set);
}

int graph_group_invariant(const exec_graph *g, int gi)
{
    return gi >= 0 && (uint32_t)gi < g->n_group_invariant && g->group_invariant[gi];
}

int graph_pair_set_invariant(const exec_graph *g, int set)
{
    return set >= 0 && (uint32_t)set < g->n_set_invariant && g->set_invariant[set];
}

int graph_add_pair_set(exec_graph *g, const int *src, const int *dst, int n)
{
    assert(!g->finalized && n > 0);
    if (!g->pair_first) {
        xgrow(&g->pair_first, sizeof *g->pair_first, 1, &g->cap_pair_first);
        g->pair_first[0] = 0;
    }
    xgrow(&g->pair_ranks, sizeof *g->pair_ranks, (size_t)g->n_pair_ranks + 2 * (size_t)n,
          &g->cap_pair_ranks);
    for (int i = 0; i < n; i++) {
        assert(src[i] >= 0 && src[i] < g->n_ranks && dst[i] >= 0 && dst[i] < g->n_ranks);
        assert(src[i] != dst[i]);
        g->pair_ranks[g->n_pair_ranks++] = src[i];
        g->pair_ranks[g->n_pair_ranks++] = dst[i];
    }
    xgrow(&g->pair_first, sizeof *g->pair_first, (size_t)g->n_pair_sets + 2, &g->cap_pair_first);
    g->pair_first[++g->n_pair_sets] = g->n_pair_ranks / 2;
    return (int)g->n_pair_sets - 1;
}

void graph_set_companions(exec_graph *g, uint32_t t, int set)
{
    assert(!g->finalized && t < g->n_tasks && g->tasks[t].kind == TASK_TRANSFER);
    assert(set >= 0 && (uint32_t)set < g->n_pair_sets);
    if (t >= g->n_companion) {
        xgrow(&g->companion, sizeof *g->companion, (size_t)t + 1, &g->cap_companion);
        for (uint32_t i = g->n_companion; i <= t; i++)
            g->companion[i] = -1;
        g->n_companion = t + 1;
    }
    g->companion[t] = set;
}

int graph_companions(const exec_graph *g, uint32_t t, const int32_t **pairs)
{
    if (t >= g->n_companion || g->companion[t] < 0)
        return 0;
    uint32_t set = (uint32_t)g->companion[t];
    *pairs = g->pair_ranks + 2 * (size_t)g->pair_first[set];
    return (int)(g->pair_first[set + 1] - g->pair_first[set]);
}

void graph_set_coll_companions(exec_graph *g, int c, const int *groups, int n)
{
    assert(!g->finalized && c >= 0 && (uint32_t)c < g->n_colls && n > 0);
    assert(!g->colls[c].matrix);
    uint32_t size = g->groups[g->colls[c].group].n;
    if ((uint32_t)c >= g->n_coll_comp) {
        xgrow(&g->comp_span, 2 * sizeof *g->comp_span, (size_t)c + 1, &g->cap_coll_comp);
        memset(g->comp_span + 2 * (size_t)g->n_coll_comp, 0,
               2 * ((size_t)c + 1 - g->n_coll_comp) * sizeof *g->comp_span);
        g->n_coll_comp = (uint32_t)c + 1;
    }
    xgrow(&g->comp_groups, sizeof *g->comp_groups, (size_t)g->n_comp_groups + (size_t)n,
          &g->cap_comp_groups);
    g->comp_span[2 * (size_t)c] = (uint32_t)n;
    g->comp_span[2 * (size_t)c + 1] = g->n_comp_groups;
    for (int i = 0; i < n; i++) {
        assert(groups[i] >= 0 && (uint32_t)groups[i] < g->n_groups);
        assert(g->groups[groups[i]].n == size);
        g->comp_groups[g->n_comp_groups++] = groups[i];
    }
}

int graph_coll_companions(const exec_graph *g, uint32_t c, const int32_t **groups)
{
    if (c >= g->n_coll_comp || g->comp_span[2 * (size_t)c] == 0)
        return 0;
    *groups = g->comp_groups + g->comp_span[2 * (size_t)c + 1];
    return (int)g->comp_span[2 * (size_t)c];
}

void graph_set_host(exec_graph *g, uint32_t t, unsigned flags, double host_s, double span)
{
    assert(!g->finalized && t < g->n_tasks);
    assert(is_amount(host_s) && is_amount(span));
    assert(flags == 0 || (flags & HOST_ISSUE));
    assert((flags & ~(unsigned)(HOST_ISSUE | HOST_WAIT)) == 0);
    g->tasks[t].host = (uint8_t)flags;
    g->tasks[t].host_s = host_s;
    g->tasks[t].span = span;
}

#ifndef NDEBUG
/* Ranks of a group: each in range, none twice. */
static int ranks_distinct_in_range(const exec_graph *g, const int *ranks, int n)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->n_ranks)
            return 0;
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return 0;
    }
    return 1;
}
#endif

int graph_add_group(exec_graph *g, const int *ranks, int n)
{
    return graph_add_group_stand_ins(g, ranks, n, n);
}

int graph_add_group_stand_ins(exec_graph *g, const int *ranks, int n, int tasked)
{
    assert(!g->finalized);
    assert(n >= 1 && n <= g->n_ranks && tasked >= 1 && tasked <= n);
    assert(ranks_distinct_in_range(g, ranks, n));
    xgrow(&g->groups, sizeof *g->groups, (size_t)g->n_groups + 1, &g->cap_groups);
    xgrow(&g->group_ranks, sizeof *g->group_ranks, (size_t)g->n_group_ranks + (size_t)n,
          &g->cap_group_ranks);
    graph_group *gr = &g->groups[g->n_groups];
    gr->first = g->n_group_ranks;
    gr->n = (uint32_t)n;
    gr->tasked = (uint32_t)tasked;
    for (int i = 0; i < n; i++)
        g->group_ranks[g->n_group_ranks++] = ranks[i];
    return (int)g->n_groups++;
}

int graph_add_collective(exec_graph *g, coll_kind kind, int group, stream_id stream, double bytes,
                         task_category cat, int label, int micro, uint32_t *task_ids)
{
    assert(!g->finalized);
    assert(kind >= COLL_ALLREDUCE && kind <= COLL_ALLTOALL);
    assert(group >= 0 && (uint32_t)group < g->n_groups && is_amount(bytes));
    const graph_group *gr = &g->groups[group];
    xgrow(&g->colls, sizeof *g->colls, (size_t)g->n_colls + 1, &g->cap_colls);
    xgrow(&g->coll_tasks, sizeof *g->coll_tasks, (size_t)g->n_coll_tasks + gr->tasked,
          &g->cap_coll_tasks);
    int c = (int)g->n_colls++;
    graph_collective *col = &g->colls[c];
    col->kind = kind;
    col->group = group;
    col->bytes = bytes;
    col->first_task = g->n_coll_tasks;
    col->matrix = NULL;
    for (uint32_t i = 0; i < gr->tasked; i++) {
        int rank = g->group_ranks[gr->first + i];
        uint32_t id = add_task(g, TASK_COLLECTIVE, rank, stream, cat, label, micro);
        g->tasks[id].coll = c;
        g->tasks[id].bytes = bytes;
        g->coll_tasks[g->n_coll_tasks++] = id;
        if (task_ids)
            task_ids[i] = id;
    }
    return c;
}

int graph_add_alltoallv(exec_graph *g, int group, stream_id stream, const double *matrix,
                        task_category cat, int label, int micro, uint32_t *task_ids)
{
    assert(group >= 0 && (uint32_t)group < g->n_groups);
    size_t n = g->groups[group].n;
    double widest = 0.0;
    for (size_t i = 0; i < n; i++) {
        double row = 0.0;
        for (size_t j = 0; j < n; j++) {
            assert(is_amount(matrix[i * n + j]));
            if (j != i)
                row += matrix[i * n + j];
        }
        if (row > widest)
            widest = row;
    }
    int c =
        graph_add_collective(g, COLL_ALLTOALL, group, stream, widest, cat, label, micro, task_ids);
    g->colls[c].matrix = xmalloc(n * n * sizeof *matrix);
    memcpy(g->colls[c].matrix, matrix, n * n * sizeof *matrix);
    return c;
}

void graph_add_edge(exec_graph *g, uint32_t from, uint32_t to)
{
    assert(!g->finalized && from < g->n_tasks && to < g->n_tasks && from != to);
    assert(g->n_edges < UINT32_MAX);
    xgrow(&g->edges, sizeof *g->edges, 2 * ((size_t)g->n_edges + 1), &g->cap_edges);
    g->edges[2 * g->n_edges] = from;
    g->edges[2 * g->n_edges + 1] = to;
    g->n_edges++;
}

/* Release t's successors (explicit edges, then the next task of its stream) into the queue. */
static void kahn_release(const exec_graph *g, uint32_t t, const uint32_t *pos, uint32_t *indeg,
                         uint32_t *queue, uint32_t *tail)
{
    const graph_task *k = &g->tasks[t];
    for (uint32_t j = 0; j < k->n_succ; j++) {
        uint32_t s = g->succ[k->succ_first + j];
        if (--indeg[s] == 0)
            queue[(*tail)++] = s;
    }
    uint32_t si = (uint32_t)k->rank * (uint32_t)g->n_streams + k->stream;
    uint32_t next = g->stream_first[si] + pos[t] + 1;
    if (next < g->stream_first[si + 1]) {
        uint32_t s = g->stream_tasks[next];
        if (--indeg[s] == 0)
            queue[(*tail)++] = s;
    }
}

/* Kahn's algorithm over explicit edges plus each stream's program order, where a collective's
 * member tasks complete only once all of them are ready (as the executor runs them): this also
 * catches members reaching collectives in inconsistent orders. What it leaves: done[t] 1 for a
 * released task, indeg[t] the dependencies still open for the others (pos: each task's place
 * on its stream). */
static void kahn_leftover(const exec_graph *g, const uint32_t *pos, uint8_t *done, uint32_t *indeg)
{
    uint32_t n = g->n_tasks;
    uint32_t *queue = xmalloc(((size_t)n + 1) * sizeof *queue);
    uint32_t *ready = xcalloc((size_t)g->n_colls + 1, sizeof *ready);
    for (uint32_t i = 0; i < n; i++)
        indeg[i] = g->tasks[i].n_pred + (pos[i] > 0);
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        uint32_t t = queue[head++];
        const graph_task *k = &g->tasks[t];
        if (k->kind != TASK_COLLECTIVE) {
            done[t] = 1;
            kahn_release(g, t, pos, indeg, queue, &tail);
            continue;
        }
        const graph_collective *c = &g->colls[k->coll];
        if (++ready[k->coll] < g->groups[c->group].tasked)
            continue;
        for (uint32_t m = 0; m < g->groups[c->group].tasked; m++) {
            done[g->coll_tasks[c->first_task + m]] = 1;
            kahn_release(g, g->coll_tasks[c->first_task + m], pos, indeg, queue, &tail);
        }
    }
    free(queue);
    free(ready);
}

/* 0 when Kahn's pass releases every task, -1 on a cycle. */
static int check_acyclic(const exec_graph *g, const uint32_t *pos)
{
    uint8_t *done = xcalloc((size_t)g->n_tasks + 1, 1);
    uint32_t *indeg = xmalloc(((size_t)g->n_tasks + 1) * sizeof *indeg);
    kahn_leftover(g, pos, done, indeg);
    uint32_t seen = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        seen += done[t];
    free(done);
    free(indeg);
    return seen == g->n_tasks ? 0 : -1;
}

/* Successor lists (CSR) by counting sort on the edges' sources; the edge pairs are freed. */
static void build_successors(exec_graph *g)
{
    uint32_t n = g->n_tasks;
    g->succ = xmalloc((size_t)g->n_edges * sizeof *g->succ);
    for (uint32_t i = 0; i < n; i++)
        g->tasks[i].n_succ = g->tasks[i].n_pred = 0;
    for (uint32_t e = 0; e < g->n_edges; e++) {
        g->tasks[g->edges[2 * e]].n_succ++;
        g->tasks[g->edges[2 * e + 1]].n_pred++;
    }
    uint32_t acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        g->tasks[i].succ_first = acc;
        acc += g->tasks[i].n_succ;
        g->tasks[i].n_succ = 0;
    }
    for (uint32_t e = 0; e < g->n_edges; e++) {
        graph_task *f = &g->tasks[g->edges[2 * e]];
        g->succ[f->succ_first + f->n_succ++] = g->edges[2 * e + 1];
    }
    free(g->edges);
    g->edges = NULL;
    g->cap_edges = 0;
}

/* Per-stream task lists keeping insertion (program) order; pos[t]: t's place in its stream. */
static void build_stream_orders(exec_graph *g, uint32_t *pos)
{
    uint32_t n = g->n_tasks;
    uint32_t per = (uint32_t)g->n_streams, n_streams = (uint32_t)g->n_ranks * per;
    g->stream_first = xcalloc((size_t)n_streams + 1, sizeof *g->stream_first);
    g->stream_tasks = xmalloc((size_t)n * sizeof *g->stream_tasks);
    for (uint32_t i = 0; i < n; i++)
        g->stream_first[(uint32_t)g->tasks[i].rank * per + g->tasks[i].stream + 1]++;
    for (uint32_t s = 0; s < n_streams; s++)
        g->stream_first[s + 1] += g->stream_first[s];
    uint32_t *fill = xcalloc((size_t)n_streams, sizeof *fill);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = (uint32_t)g->tasks[i].rank * per + g->tasks[i].stream;
        pos[i] = fill[s];
        g->stream_tasks[g->stream_first[s] + fill[s]++] = i;
    }
    free(fill);
}

#ifndef NDEBUG
/* A transfer is received: something waits for it (on its peer, or a folded peer's twin, which
 * may be the source itself). */
static int has_receiver(const exec_graph *g, const graph_task *k)
{
    (void)g;
    return k->n_succ > 0;
}

/* What the executor relies on, task by task (the builders asserted most of it already; this
 * also catches fields written after the fact). */
static void assert_tasks_valid(const exec_graph *g)
{
    for (uint32_t i = 0; i < g->n_tasks; i++) {
        const graph_task *k = &g->tasks[i];
        assert(k->rank >= 0 && k->rank < g->n_ranks);
        assert(k->stream < g->n_streams && k->category < CAT_COUNT);
        assert(k->label >= 0 && k->label < g->n_labels);
        assert(is_amount(k->seconds) && is_amount(k->bytes));
        assert(is_amount(k->host_s) && is_amount(k->span));
        assert(k->host == 0 || (k->host & HOST_ISSUE));
        assert(k->succ_first + k->n_succ <= g->n_edges);
        for (uint32_t j = 0; j < k->n_succ; j++)
            assert(g->succ[k->succ_first + j] < g->n_tasks && g->succ[k->succ_first + j] != i);
        switch ((task_kind)k->kind) {
        case TASK_COMPUTE: assert(k->peer == -1); break;
        case TASK_TRANSFER:
            assert(g->stream_kinds[k->stream] == STREAM_KIND_GPU);
            assert(k->peer >= 0 && k->peer < g->n_ranks && k->peer != k->rank);
            assert(has_receiver(g, k));
            break;
        case TASK_COLLECTIVE:
            assert(g->stream_kinds[k->stream] == STREAM_KIND_GPU);
            assert(k->coll >= 0 && (uint32_t)k->coll < g->n_colls);
            break;
        default: assert(!"task kind out of range");
        }
    }
}

/* Each collective has exactly one task per tasked group member, in group order, on its rank
 * (graph_add_group asserted the members distinct and in range). */
static void assert_collectives_valid(const exec_graph *g)
{
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const graph_collective *col = &g->colls[c];
        assert(col->group >= 0 && (uint32_t)col->group < g->n_groups);
        const graph_group *gr = &g->groups[col->group];
        assert(gr->n >= 1 && gr->first + gr->n <= g->n_group_ranks);
        assert(gr->tasked >= 1 && gr->tasked <= gr->n);
        assert(col->first_task + gr->tasked <= g->n_coll_tasks);
        for (uint32_t m = 0; m < gr->tasked; m++) {
            uint32_t t = g->coll_tasks[col->first_task + m];
            assert(t < g->n_tasks);
            const graph_task *k = &g->tasks[t];
            assert(k->kind == TASK_COLLECTIVE && k->coll == (int32_t)c);
            assert(k->rank == g->group_ranks[gr->first + m]);
        }
    }
}
#endif

int graph_finalize(exec_graph *g, ps_error *err)
{
    assert(!g->finalized);
    build_successors(g);
    uint32_t *pos = xmalloc((size_t)g->n_tasks * sizeof *pos);
    build_stream_orders(g, pos);
    g->finalized = 1;
#ifndef NDEBUG
    assert_tasks_valid(g);
    assert_collectives_valid(g);
#endif

    int rc = check_acyclic(g, pos);
    free(pos);
    if (rc != 0)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "execution graph has a cycle (a schedule or dependency bug)");
    return 0;
}

/* A dependency of leftover task t that is itself left over: its stream predecessor or an edge's
 * source with a dependency open, or (a collective member with none open) a member of its
 * collective not yet ready. Every leftover task has one, so walking them finds a cycle. */
static uint32_t leftover_dependency(const exec_graph *g, uint32_t t, const uint32_t *pred_first,
                                    const uint32_t *preds, const uint32_t *prev,
                                    const uint8_t *done, const uint32_t *indeg)
{
    if (prev[t] != UINT32_MAX && !done[prev[t]])
        return prev[t];
    for (uint32_t i = pred_first[t]; i < pred_first[t + 1]; i++)
        if (!done[preds[i]])
            return preds[i];
    const graph_task *k = &g->tasks[t];
    assert(k->kind == TASK_COLLECTIVE);
    const graph_collective *c = &g->colls[k->coll];
    for (uint32_t m = 0; m < g->groups[c->group].tasked; m++) {
        uint32_t u = g->coll_tasks[c->first_task + m];
        if (u != t && indeg[u] > 0)
            return u;
    }
    assert(!"a leftover task without a leftover dependency");
    return t;
}

void graph_predecessors(const exec_graph *g, uint32_t **first, uint32_t **preds, uint32_t **prev)
{
    assert(g->finalized);
    uint32_t n = g->n_tasks;
    uint32_t *f = xcalloc((size_t)n + 2, sizeof *f), *v, *p = xmalloc(((size_t)n + 1) * sizeof *p);
    for (uint32_t t = 0; t < n; t++)
        f[t + 1] = f[t] + g->tasks[t].n_pred;
    v = xmalloc(((size_t)f[n] + 1) * sizeof *v);
    uint32_t *fill = xcalloc((size_t)n + 1, sizeof *fill);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t i = 0; i < g->tasks[t].n_succ; i++) {
            uint32_t s = g->succ[g->tasks[t].succ_first + i];
            v[f[s] + fill[s]++] = t;
        }
    free(fill);
    for (size_t s = 0; s < (size_t)g->n_ranks * (size_t)g->n_streams; s++)
        for (uint32_t j = g->stream_first[s]; j < g->stream_first[s + 1]; j++)
            p[g->stream_tasks[j]] = j > g->stream_first[s] ? g->stream_tasks[j - 1] : UINT32_MAX;
    *first = f;
    *preds = v;
    *prev = p;
}

uint32_t graph_find_cycle(const exec_graph *g, uint32_t *out, uint32_t max)
{
    assert(g->finalized);
    uint32_t n = g->n_tasks;
    uint32_t *pred_first, *preds, *prev;
    graph_predecessors(g, &pred_first, &preds, &prev);
    uint32_t *pos = xmalloc(((size_t)n + 1) * sizeof *pos);
    for (uint32_t t = 0; t < n; t++) /* its place on its stream */
        pos[t] = prev[t] == UINT32_MAX ? 0 : pos[prev[t]] + 1;
    uint32_t *step = xcalloc((size_t)n + 1, sizeof *step); /* a walked task's step + 1 */
    uint8_t *done = xcalloc((size_t)n + 1, 1);
    uint32_t *indeg = xmalloc(((size_t)n + 1) * sizeof *indeg);
    kahn_leftover(g, pos, done, indeg);
    uint32_t len = 0, start = UINT32_MAX;
    for (uint32_t t = 0; t < n && start == UINT32_MAX; t++)
        if (!done[t])
            start = t;
    if (start != UINT32_MAX) {
        /* walk back along leftover dependencies until a task repeats */
        uint32_t *path = xmalloc(((size_t)n + 1) * sizeof *path), steps = 0, t = start;
        while (!step[t]) {
            path[steps] = t;
            step[t] = ++steps;
            t = leftover_dependency(g, t, pred_first, preds, prev, done, indeg);
        }
        /* path[step[t] - 1 .. steps) is the cycle, each task waiting for the next: reversed,
         * each finishes before the next */
        len = steps - (step[t] - 1);
        for (uint32_t i = 0; i < len && i < max; i++)
            out[i] = path[steps - 1 - i];
        free(path);
    }
    free(pos), free(prev), free(pred_first), free(preds), free(step), free(done), free(indeg);
    return len;
}

static const char *const category_table[CAT_COUNT] = {
    "forward", "backward", "recompute", "optimizer", "tp-comm", "pp-comm", "dp-comm",
    "cp-comm", "ep-comm",  "emb-comm",  "host",      "kernel",  "comm"};
static const char *const stream_table[STREAM_COUNT] = {"compute", "tp-comm", "pp-comm",
                                                       "dp-comm", "cp-comm", "ep-comm"};
static const char *const coll_table[] = {"all-reduce", "reduce-scatter", "all-gather",
                                         "all-to-all"};
const enum_names task_category_names = ENUM_NAMES(category_table);
const enum_names stream_names = ENUM_NAMES(stream_table);
const enum_names coll_kind_names = ENUM_NAMES(coll_table);

const char *task_category_name(task_category c)
{
    return enum_name(task_category_names, (int)c);
}

const char *stream_name(stream_id s)
{
    return enum_name(stream_names, (int)s);
}

const char *graph_stream_name(const exec_graph *g, int s)
{
    assert(s >= 0 && s < g->n_streams);
    return g->stream_names ? g->stream_names[s] : stream_name((stream_id)s);
}

int graph_stream_is_cpu(const exec_graph *g, int s)
{
    assert(s >= 0 && s < g->n_streams);
    return g->stream_kinds[s] == STREAM_KIND_CPU;
}

const char *coll_kind_name(coll_kind k)
{
    return enum_name(coll_kind_names, (int)k);
}

/* ---- digests ---- */

/* splitmix64's finalizer: a bijection on 64 bits that spreads every input bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void digest_word(graph_digest *d, uint64_t w)
{
    d->a = mix64(d->a ^ w);
    d->b = mix64((d->b ^ (w << 32 | w >> 32)) + 0x9e3779b97f4a7c15ULL);
}

void graph_digest_init(graph_digest *d)
{
    d->a = 0x6a09e667f3bcc908ULL;
    d->b = 0xbb67ae8584caa73bULL;
}

void graph_digest_add(graph_digest *d, const void *data, size_t n)
{
    const unsigned char *p = data;
    digest_word(d, (uint64_t)n);
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        digest_word(d, w);
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        digest_word(d, w);
    }
}

/* The fields below are exec_graph's; a new one changes its size (64-bit builds). */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(exec_graph) == 440 && sizeof(graph_task) == 72 &&
                   sizeof(graph_collective) == 32 && sizeof(graph_group) == 12,
               "a graph field was added or changed: digest it in graph_digest_graph");
#endif

void graph_digest_graph(graph_digest *d, const exec_graph *g)
{
    assert(g->finalized);
    int32_t head[2] = {g->n_ranks, g->n_streams};
    graph_digest_add(d, head, sizeof head);
    graph_digest_add(d, g->stream_kinds, (size_t)g->n_streams);
    for (int s = 0; s < g->n_streams; s++) {
        const char *name = graph_stream_name(g, s);
        graph_digest_add(d, name, strlen(name));
    }
    /* tasks whole: add_task zeroes each one, padding included */
    graph_digest_add(d, g->tasks, (size_t)g->n_tasks * sizeof *g->tasks);
    graph_digest_add(d, g->succ, (size_t)g->n_edges * sizeof *g->succ);
    size_t n_lists = (size_t)g->n_ranks * (size_t)g->n_streams;
    graph_digest_add(d, g->stream_first, (n_lists + 1) * sizeof *g->stream_first);
    graph_digest_add(d, g->stream_tasks, (size_t)g->n_tasks * sizeof *g->stream_tasks);
    for (uint32_t i = 0; i < g->n_groups; i++) {
        uint32_t grp[3] = {g->groups[i].first, g->groups[i].n, g->groups[i].tasked};
        graph_digest_add(d, grp, sizeof grp);
    }
    graph_digest_add(d, g->group_ranks, (size_t)g->n_group_ranks * sizeof *g->group_ranks);
    for (uint32_t i = 0; i < g->n_colls; i++) {
        const graph_collective *c = &g->colls[i];
        int32_t kg[2] = {(int32_t)c->kind, c->group};
        graph_digest_add(d, kg, sizeof kg);
        graph_digest_add(d, &c->bytes, sizeof c->bytes);
        graph_digest_add(d, &c->first_task, sizeof c->first_task);
        uint32_t n = g->groups[c->group].n;
        if (c->matrix)
            graph_digest_add(d, c->matrix, (size_t)n * n * sizeof *c->matrix);
        else
            graph_digest_add(d, NULL, 0);
    }
    graph_digest_add(d, g->coll_tasks, (size_t)g->n_coll_tasks * sizeof *g->coll_tasks);
    for (int i = 0; i < g->n_labels; i++)
        graph_digest_add(d, g->labels[i], strlen(g->labels[i]));
    graph_digest_add(d, g->lag, (size_t)g->n_lag * sizeof *g->lag);
    graph_digest_add(d, g->floating, (size_t)g->n_floating);
    graph_digest_add(d, g->pair_ranks, (size_t)g->n_pair_ranks * sizeof *g->pair_ranks);
    graph_digest_add(d, g->pair_first,
                     (g->pair_first ? (size_t)g->n_pair_sets + 1 : 0) * sizeof *g->pair_first);
    graph_digest_add(d, g->companion, (size_t)g->n_companion * sizeof *g->companion);
    graph_digest_add(d, g->comp_groups, (size_t)g->n_comp_groups * sizeof *g->comp_groups);
    graph_digest_add(d, g->comp_span, 2 * (size_t)g->n_coll_comp * sizeof *g->comp_span);
    graph_digest_add(d, g->group_invariant, (size_t)g->n_group_invariant);
    graph_digest_add(d, g->set_invariant, (size_t)g->n_set_invariant);
}
