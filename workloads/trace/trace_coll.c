/* trace_coll.c: NCCL kernels as collectives (kind, bytes and communicator size from the
 * annotations PyTorch puts around the launch), and cross-stream waits inferred from the
 * timing. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

/* Bytes per element of a PyTorch scalar type as the profiler names it; 0 if unknown. */
static double dtype_bytes(const char *t)
{
    static const struct {
        const char *name;
        double bytes;
    } table[] = {{"float", 4},
                 {"double", 8},
                 {"c10::Half", 2},
                 {"c10::BFloat16", 2},
                 {"long int", 8},
                 {"long", 8},
                 {"int", 4},
                 {"short int", 2},
                 {"short", 2},
                 {"unsigned char", 1},
                 {"signed char", 1},
                 {"char", 1},
                 {"bool", 1},
                 {"c10::Float8_e4m3fn", 1},
                 {"c10::Float8_e5m2", 1},
                 {"Half", 2},
                 {"BFloat16", 2},
                 {"Float", 4}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(t, table[i].name) == 0)
            return table[i].bytes;
    return 0;
}

/* A collective's name as PyTorch writes it ("nccl:_all_gather_base", "allreduce",
 * "ncclDevKernel_AllGather_RING_LL") -> its coll_kind; -1 for kinds the executor does not model
 * (broadcast, reduce, send/recv, barrier). Underscores and case do not matter. */
static int coll_kind_of(const char *name)
{
    char k[64];
    int n = 0;
    for (const char *s = name; *s && n < 63; s++)
        if (*s != '_')
            k[n++] = (char)tolower((unsigned char)*s);
    k[n] = '\0';
    const char *p = k;
    if (strncmp(p, "nccl:", 5) == 0)
        p += 5;
    else if (strncmp(p, "nccldevkernel", 13) == 0)
        p += 13;
    else if (strncmp(p, "ncclkernel", 10) == 0)
        p += 10;
    static const struct {
        const char *prefix;
        int kind;
    } table[] = {{"allreduce", COLL_ALLREDUCE},
                 {"allgather", COLL_ALLGATHER},
                 {"reducescatter", COLL_REDUCE_SCATTER},
                 {"alltoall", COLL_ALLTOALL}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strncmp(p, table[i].prefix, strlen(table[i].prefix)) == 0)
            return table[i].kind;
    return -1;
}

/* Elements of an event's n-th "Input Dims" entry, -1 if it has none. */
static double input_elems(const trace_ev *e, int n)
{
    const cJSON *dims = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input Dims") : NULL;
    const cJSON *d = cJSON_IsArray(dims) ? cJSON_GetArrayItem(dims, n) : NULL;
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) == 0)
        return -1;
    double v = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, d) v *= cJSON_IsNumber(x) ? x->valuedouble : NAN;
    return isfinite(v) ? v : -1;
}

static const char *arg_string(const trace_ev *e, const char *key)
{
    const cJSON *v = e && e->args ? cJSON_GetObjectItemCaseSensitive(e->args, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *input_type(const trace_ev *e)
{
    const cJSON *t = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input type") : NULL;
    const cJSON *f = cJSON_IsArray(t) ? cJSON_GetArrayItem(t, 0) : NULL;
    return cJSON_IsString(f) ? f->valuestring : "";
}

/* The CPU events of the launch's thread that enclose it: the innermost "nccl:" annotation,
 * record_param_comms and the c10d op (from the trace's few communication events, listed once). */
static void enclosing(build *b, const trace_ev *rt, const trace_ev **nccl, const trace_ev **param,
                      const trace_ev **c10d)
{
    if (!b->comm_ev) {
        b->comm_ev = xmalloc(((size_t)b->te->n + 1) * sizeof *b->comm_ev);
        for (int i = 0; i < b->te->n; i++) {
            const trace_ev *e = &b->te->ev[i];
            if ((e->kind == EV_CPU_OP || e->kind == EV_ANNOTATION) &&
                (strncmp(e->name, "nccl:", 5) == 0 || strcmp(e->name, "record_param_comms") == 0 ||
                 strncmp(e->name, "c10d::", 6) == 0))
                b->comm_ev[b->n_comm_ev++] = i;
        }
    }
    *nccl = *param = *c10d = NULL;
    for (int k = 0; k < b->n_comm_ev; k++) {
        const trace_ev *e = &b->te->ev[b->comm_ev[k]];
        if (e->thread != rt->thread || e->ts > rt->ts || e->ts + e->dur < rt->ts + rt->dur)
            continue;
        if (strncmp(e->name, "nccl:", 5) == 0 && (!*nccl || e->ts >= (*nccl)->ts))
            *nccl = e;
        else if (strcmp(e->name, "record_param_comms") == 0 && (!*param || e->ts >= (*param)->ts))
            *param = e;
        else if (strncmp(e->name, "c10d::", 6) == 0 && (!*c10d || e->ts >= (*c10d)->ts))
            *c10d = e;
    }
}

/* What the trace says of one collective: kind (-1: not modelled), bytes of the executor's S
 * (-1: unknown), communicator size (NAN: unknown) and its members (a "[0, 1, ...]" string or
 * NULL). */
typedef struct coll_desc {
    int kind;
    double bytes, group;
    const char *ranks;
    char what[64];
} coll_desc;

/* Newer PyTorch: record_param_comms carries "Collective name", "In msg nelems", "Out msg
 * nelems", "dtype", "Group size" and "Process Group Ranks". */
static int from_param_comms(const trace_ev *param, coll_desc *d)
{
    const char *name = arg_string(param, "Collective name");
    const char *dtype = arg_string(param, "dtype");
    if (!name)
        return 0;
    snprintf(d->what, sizeof d->what, "%s", name);
    d->kind = coll_kind_of(name);
    double in = trace_arg_number(param, "In msg nelems");
    double out = trace_arg_number(param, "Out msg nelems");
    double size = dtype ? dtype_bytes(dtype) : 0;
    double elems = d->kind == COLL_ALLGATHER ? out : in;
    d->bytes = size > 0 && elems >= 0 ? elems * size : -1;
    d->group = trace_arg_number(param, "Group size");
    d->ranks = arg_string(param, "Process Group Ranks");
    return 1;
}

/* Older PyTorch: the nccl:* annotation's input, the c10d op's output/input ratio for the
 * communicator of a gather or scatter. */
static int from_annotation(const trace_ev *nccl, const trace_ev *param, const trace_ev *c10d,
                           coll_desc *d)
{
    if (!nccl)
        return 0;
    snprintf(d->what, sizeof d->what, "%s", nccl->name + 5);
    d->kind = coll_kind_of(nccl->name);
    double elems = input_elems(nccl, 0), size = dtype_bytes(input_type(nccl));
    d->group = param ? trace_arg_number(param, "Group size") : NAN;
    if (isnan(d->group) && c10d && (d->kind == COLL_ALLGATHER || d->kind == COLL_REDUCE_SCATTER)) {
        double out = input_elems(c10d, 0), in = input_elems(c10d, 1);
        if (out > 0 && in > 0)
            d->group = d->kind == COLL_ALLGATHER ? out / in : in / out;
    }
    d->bytes = elems >= 0 && size > 0 ? elems * size : -1;
    if (d->kind == COLL_ALLGATHER && d->bytes >= 0) /* S: the gathered buffer */
        d->bytes = isnan(d->group) ? -1 : d->bytes * d->group;
    return 1;
}

static double count_numbers(const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++)
        if (isdigit((unsigned char)*p) && (p == s || !isdigit((unsigned char)p[-1])))
            n++;
    return n;
}

/* "[0, 1, 2]" -> ascending members in the rank's pool; its offset, or -1 if malformed. */
static int parse_ranks(build *b, const char *s, int n, int rank)
{
    trace_rank *r = b->r;
    int at = r->n_group_ranks, m = 0, has_rank = 0;
    r->group_ranks = xreallocarray(r->group_ranks, (size_t)at + (size_t)n + 1, sizeof(int));
    for (const char *p = s; *p && m <= n;) {
        if (!isdigit((unsigned char)*p)) {
            p++;
            continue;
        }
        char *end;
        long v = strtol(p, &end, 10);
        if (m == n || v < 0 || v >= b->te->world_size || (m > 0 && v <= r->group_ranks[at + m - 1]))
            return -1;
        r->group_ranks[at + m++] = (int)v;
        has_rank |= v == rank;
        p = end;
    }
    if (m != n || !has_rank)
        return -1;
    r->n_group_ranks += n;
    return at;
}

int tb_coll_info(build *b, int kernel, trace_op *op, ps_error *err)
{
    const trace_ev *k = &b->te->ev[kernel];
    const trace_ev *nccl, *param, *c10d;
    enclosing(b, &b->te->ev[b->launch_of[kernel]], &nccl, &param, &c10d);
    coll_desc d = {coll_kind_of(k->name), -1, NAN, NULL, ""};
    snprintf(d.what, sizeof d.what, "%.60s", k->name);
    if (!(param && from_param_comms(param, &d)))
        from_annotation(nccl, param, c10d, &d);
    if (isnan(d.group) && d.ranks) /* the members without their count */
        d.group = count_numbers(d.ranks);
    if (isnan(d.group))
        d.group = b->te->world_size;
    char f[48];
    trace_event_field(f, sizeof f, k->idx);
    if (d.group < 1 || d.group != floor(d.group) || d.group > b->te->world_size)
        return ps_error_set(err, PS_EINPUT, b->path, 0, 0, f,
                            "NCCL kernel's communicator of %g ranks does not fit a world of %d",
                            d.group, b->te->world_size);
    trace_rank *r = b->r;
    if (d.kind < 0 || d.bytes < 0) { /* not modelled, or of unknown size: measured */
        op->kind = TRACE_COMM_MEASURED;
        if (r->n_comm_measured++ == 0)
            snprintf(r->comm_measured_what, sizeof r->comm_measured_what, "%s", d.what);
        return 0;
    }
    op->kind = TRACE_COLL;
    op->coll = (uint8_t)d.kind;
    op->group_n = (int)d.group;
    op->bytes = d.bytes;
    op->group_at = d.ranks ? parse_ranks(b, d.ranks, op->group_n, b->te->rank) : -1;
    if (d.ranks && op->group_at < 0)
        return ps_error_set(err, PS_EINPUT, b->path, 0, 0, f,
                            "Process Group Ranks '%.60s' is not %d distinct ascending ranks of "
                            "the world holding rank %d",
                            d.ranks, op->group_n, b->te->rank);
    return 0;
}

typedef struct by_start {
    double start;
    uint32_t op;
} by_start;

static int cmp_start(const void *x, const void *y)
{
    const by_start *p = x, *q = y;
    if (p->start != q->start)
        return p->start < q->start ? -1 : 1;
    return p->op < q->op ? -1 : p->op > q->op;
}

/* In traces that record no stream waits: a GPU op that started INFER_GAP later than both its
 * launch and its stream allowed waited for the op of another stream that ended last before it,
 * within that gap. */
void tb_infer_waits(build *b, double gap_us)
{
    trace_rank *r = b->r;
    const trace_events *te = b->te;
    double *prev_end = xmalloc(((size_t)r->n_lanes + 1) * sizeof *prev_end);
    int *last_op = xmalloc(((size_t)r->n_lanes + 1) * sizeof *last_op);
    for (int l = 0; l <= r->n_lanes; l++) {
        prev_end[l] = -INFINITY;
        last_op[l] = -1;
    }
    /* GPU ops by measured start (ties: op order) */
    by_start *v = xmalloc(((size_t)r->n_ops + 1) * sizeof *v);
    int n = 0;
    for (uint32_t i = 0; i < r->n_ops; i++)
        if (b->ev_of_op[i] >= 0) {
            v[n].start = r->ops[i].start;
            v[n++].op = i;
        }
    qsort(v, (size_t)n, sizeof *v, cmp_start);
    uint32_t *order = xmalloc(((size_t)n + 1) * sizeof *order);
    for (int a = 0; a < n; a++)
        order[a] = v[a].op;
    free(v);
    for (int a = 0; a < n; a++) {
        uint32_t o = order[a];
        const trace_ev *e = &te->ev[b->ev_of_op[o]];
        int launch = b->launch_of[b->ev_of_op[o]]; /* < 0: queued before the trace */
        int lane = r->ops[o].lane;
        double ready = launch >= 0 ? fmax(te->ev[launch].ts + te->ev[launch].dur, prev_end[lane])
                                   : prev_end[lane];
        int best = -1;
        double best_end = -INFINITY;
        if (e->ts - ready > gap_us)
            for (int m = 0; m < r->n_lanes; m++)
                if (m != lane && last_op[m] >= 0 && prev_end[m] <= e->ts + 1e-3 &&
                    e->ts - prev_end[m] <= gap_us && prev_end[m] > best_end) {
                    best = last_op[m];
                    best_end = prev_end[m];
                }
        if (best >= 0) {
            tb_add_edge(b, (uint32_t)best, o);
            r->n_inferred++;
        }
        prev_end[lane] = e->ts + e->dur;
        last_op[lane] = (int)o;
    }
    free(order);
    free(prev_end);
    free(last_op);
}
