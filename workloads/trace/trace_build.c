/* trace_build.c: the tools every pass of the trace reader shares on its build state: ops, edges
 * and calls added to the rank, the step of a time, events in time order, the correlation-id
 * map and the job's name table. It calls none of the passes (trace.c, trace_cpu.c,
 * trace_coll.c, trace_params.c); they call it. And the GEMM a call's recorded shapes describe
 * (trace_call_gemm), which the what-ifs and compare read. */
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

uint32_t tb_add_op(build *b, trace_op op)
{
    trace_rank *r = b->r;
    xgrow(&r->ops, sizeof *r->ops, (size_t)r->n_ops + 1, &r->cap_ops);
    xgrow(&b->end_s, sizeof *b->end_s, (size_t)r->n_ops + 1, &b->cap_end);
    r->ops[r->n_ops] = op;
    b->end_s[r->n_ops] = op.start + op.seconds; /* still the measured length */
    return r->n_ops++;
}

void tb_add_edge(build *b, uint32_t from, uint32_t to)
{
    trace_rank *r = b->r;
    if (from == to)
        return;
    xgrow(&r->edges, sizeof *r->edges, 2 * ((size_t)r->n_edges + 1), &r->cap_edges);
    r->edges[2 * r->n_edges] = from;
    r->edges[2 * r->n_edges + 1] = to;
    r->n_edges++;
}

int32_t tb_call(build *b, const trace_ev *e)
{
    if (!e)
        return 0;
    trace_rank *r = b->r;
    trace_call c;
    memset(&c, 0, sizeof c);
    c.name = tb_name(b, e->name);
    const cJSON *dims = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input Dims") : NULL;
    const cJSON *types = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input type") : NULL;
    for (int i = 0; i < TRACE_CALL_INPUTS; i++) {
        c.type[i] = -1;
        const cJSON *d = cJSON_IsArray(dims) ? cJSON_GetArrayItem(dims, i) : NULL;
        const cJSON *t = cJSON_IsArray(types) ? cJSON_GetArrayItem(types, i) : NULL;
        if (!cJSON_IsArray(d))
            break;
        c.n_in = i + 1;
        int k = 0;
        for (const cJSON *x = d->child; x && k < TRACE_CALL_DIMS; x = x->next)
            c.dims[i][k++] = cJSON_IsNumber(x) ? x->valuedouble : 0.0;
        c.rank[i] = cJSON_GetArraySize(d);
        if (cJSON_IsString(t))
            c.type[i] = tb_name(b, t->valuestring);
    }
    xgrow(&r->calls, sizeof *r->calls, (size_t)r->n_calls + 1, &r->cap_calls);
    r->calls[r->n_calls] = c;
    return r->n_calls++;
}

static int call_is(const trace_job *j, const trace_call *c, const char *name)
{
    return c->name >= 0 && strcmp(j->names[c->name], name) == 0;
}

int trace_call_gemm(const trace_job *j, const trace_call *c, int *a, int *w, double *b, double *m,
                    double *n, double *k)
{
    int conv = 0;
    *a = *w = -1;
    if (call_is(j, c, "aten::mm") || call_is(j, c, "aten::bmm"))
        *a = 0, *w = 1;
    else if (call_is(j, c, "aten::addmm") || call_is(j, c, "aten::baddbmm"))
        *a = 1, *w = 2;
    else if (call_is(j, c, "aten::cudnn_convolution") || call_is(j, c, "aten::convolution") ||
             call_is(j, c, "aten::_convolution") || call_is(j, c, "aten::conv2d"))
        *a = 0, *w = 1, conv = 1;
    else if (call_is(j, c, "aten::convolution_backward"))
        *a = 1, *w = 2, conv = 1;
    if (*a < 0 || *w >= c->n_in)
        return 0;
    const double *x = c->dims[*a], *y = c->dims[*w];
    if (conv) {
        if (c->rank[*a] != 4 || c->rank[*w] != 4)
            return 0;
        *b = 1, *m = x[0] * x[2] * x[3], *n = y[0], *k = y[1] * y[2] * y[3];
    } else if (c->rank[*a] == 2 && c->rank[*w] == 2) {
        *b = 1, *m = x[0], *k = x[1], *n = y[1];
    } else if (c->rank[*a] == 3 && c->rank[*w] == 3) {
        *b = x[0], *m = x[1], *k = x[2], *n = y[2];
    } else {
        return 0;
    }
    return *b > 0 && *m > 0 && *n > 0 && *k > 0;
}

int tb_step_of(const build *b, double ts)
{
    int s = 0;
    while (s + 1 < b->n_steps && b->step_start[s + 1] <= ts)
        s++;
    return s;
}

static int by_ts(const void *x, const void *y)
{
    const trace_ev *p = *(trace_ev *const *)x, *q = *(trace_ev *const *)y;
    if (p->ts != q->ts)
        return p->ts < q->ts ? -1 : 1;
    if (p->dur != q->dur) /* the enclosing one first */
        return p->dur > q->dur ? -1 : 1;
    return p->idx - q->idx;
}

void tb_sort_events(trace_ev **v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_ts);
}

int tb_is_module_call(const char *name)
{
    return strcmp(name, "forward") == 0 || name[0] == '<' ||
           strncmp(name, "ProfilerStep#", 13) == 0;
}

void tb_map_init(tb_map *m, size_t n)
{
    m->cap = 16;
    while (m->cap < 2 * n)
        m->cap *= 2;
    m->keys = xmalloc(m->cap * sizeof *m->keys);
    m->vals = xmalloc(m->cap * sizeof *m->vals);
    for (size_t i = 0; i < m->cap; i++)
        m->vals[i] = -1;
}

static size_t slot_of(const tb_map *m, long long key)
{
    unsigned long long h = (unsigned long long)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (m->cap - 1);
    while (m->vals[i] >= 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

void tb_map_put(tb_map *m, long long key, int val)
{
    size_t i = slot_of(m, key);
    if (m->vals[i] < 0) { /* the first call with an id wins */
        m->keys[i] = key;
        m->vals[i] = val;
    }
}

int tb_map_get(const tb_map *m, long long key)
{
    return m->vals[slot_of(m, key)];
}

void tb_map_free(tb_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Names: a string hash table over the job's name list. */
typedef struct trace_names {
    int *slot; /* name index or -1 */
    size_t cap;
} trace_names;

static unsigned long name_hash(const char *s)
{
    unsigned long h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

int tb_name(build *b, const char *name)
{
    return trace_job_name(b->j, name);
}

int trace_job_name(trace_job *j, const char *name)
{
    if (!j->index) {
        j->index = xcalloc(1, sizeof *j->index);
        j->index->cap = 1024;
        j->index->slot = xmalloc(j->index->cap * sizeof *j->index->slot);
        memset(j->index->slot, 0xff, j->index->cap * sizeof *j->index->slot);
    }
    trace_names *t = j->index;
    if ((size_t)j->n_names * 2 >= t->cap) { /* grow and rehash */
        free(t->slot);
        t->cap *= 2;
        t->slot = xmalloc(t->cap * sizeof *t->slot);
        memset(t->slot, 0xff, t->cap * sizeof *t->slot);
        for (int k = 0; k < j->n_names; k++) {
            size_t i = name_hash(j->names[k]) & (t->cap - 1);
            while (t->slot[i] >= 0)
                i = (i + 1) & (t->cap - 1);
            t->slot[i] = k;
        }
    }
    size_t i = name_hash(name) & (t->cap - 1);
    while (t->slot[i] >= 0) {
        if (strcmp(j->names[t->slot[i]], name) == 0)
            return t->slot[i];
        i = (i + 1) & (t->cap - 1);
    }
    xgrow(&j->names, sizeof *j->names, (size_t)j->n_names + 1, &j->cap_names);
    j->names[j->n_names] = xstrdup(name);
    t->slot[i] = j->n_names;
    return j->n_names++;
}

void tb_names_free(trace_job *j)
{
    for (int i = 0; i < j->n_names; i++)
        free(j->names[i]);
    free(j->names);
    if (j->index)
        free(j->index->slot);
    free(j->index);
}
