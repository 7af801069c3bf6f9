/* trace_et.c: a PyTorch execution trace (the JSON torch.profiler.ExecutionTraceObserver writes:
 * every op with its inputs and outputs, tensors by id) linked to a Kineto trace of the same run
 * (`replay --et`; docs/design-notes.md, "Execution traces beside Kineto").
 *
 * Link: an ET node's rf_id is the Kineto cpu_op's "Record function id" where the trace has them
 * (PyTorch 2.2 on, as Chakra's trace linker reads it), else its "External id" (PyTorch 2.0-2.1,
 * as HTA correlates them). Dependencies: in the linked ops' Kineto order, an op reading a tensor
 * (the first number of its input, the tensor's id) that an op on another thread wrote before it
 * started waits for it: an edge from the writer's CPU piece holding its end to the reader's
 * holding its start. Within a thread the program order already holds them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

/* A linked ET node: its Kineto event, lane and span (us). */
typedef struct et_op {
    const cJSON *node;
    int index; /* in nodes[] */
    int lane;
    double start, end;
} et_op;

static int by_start(const void *x, const void *y)
{
    const et_op *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->index - b->index;
}

static int et_error(ps_error *err, const char *path, int i, const char *key, const char *msg)
{
    char field[64];
    if (i < 0)
        snprintf(field, sizeof field, "%s", key);
    else
        snprintf(field, sizeof field, "nodes[%d]%s%s", i, key[0] ? "." : "", key);
    return ps_error_set(err, PS_EINPUT, path, 0, 0, field, "%s", msg);
}

/* The CPU piece of `lane` holding time t (us from the trace's clock), or -1: ops of a lane are
 * one run in time order, [first[lane], last[lane]]. */
static int piece_at(const build *b, const int *first, const int *last, int lane, double t)
{
    const trace_rank *r = b->r;
    int lo = first[lane], hi = last[lane];
    if (lo < 0)
        return -1;
    double s = (t - b->w0) * 1e-6;
    int best = -1;
    while (lo <= hi) { /* the last piece starting at or before s */
        int mid = (lo + hi) / 2;
        if (r->ops[mid].start <= s) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

/* The Kineto key of event e under the trace's rule (rf: "Record function id"), or -1. */
static long long kineto_key(const trace_ev *e, int rf)
{
    double v = trace_arg_number(e, rf ? "Record function id" : "External id");
    return isnan(v) || v < 0 || v > 9e15 || v != floor(v) ? -1 : (long long)v;
}

/* Tensor ids an op's inputs or outputs hold: values whose type starts with "Tensor(". */
static int tensor_ids(const cJSON *node, const char *values, const char *types, long long *out,
                      int cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, values);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, types);
    int n = 0;
    if (!cJSON_IsArray(v) || !cJSON_IsArray(t))
        return 0;
    const cJSON *vi = v->child, *ti = t->child;
    for (; vi && ti && n < cap; vi = vi->next, ti = ti->next)
        if (cJSON_IsString(ti) && !strncmp(ti->valuestring, "Tensor(", 7) && cJSON_IsArray(vi) &&
            cJSON_IsNumber(vi->child) && vi->child->valuedouble >= 0 &&
            vi->child->valuedouble < 9e15)
            out[n++] = (long long)vi->child->valuedouble;
    return n;
}

/* The ET's linked nodes (with their Kineto spans), sorted by start. */
static int link_nodes(build *b, const cJSON *nodes, const char *path, et_op **out, int *n_out,
                      ps_error *err)
{
    trace_events *te = b->te;
    int rf = 0;
    for (int i = 0; i < te->n && !rf; i++)
        rf = (te->ev[i].kind == EV_CPU_OP || te->ev[i].kind == EV_ANNOTATION) &&
             !isnan(trace_arg_number(&te->ev[i], "Record function id"));
    tb_map keys;
    tb_map_init(&keys, (size_t)te->n + 1);
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        long long k = (e->kind == EV_CPU_OP || e->kind == EV_ANNOTATION) ? kineto_key(e, rf) : -1;
        if (k >= 0 && tb_map_get(&keys, k) < 0)
            tb_map_put(&keys, k, i);
    }
    int n = cJSON_GetArraySize(nodes), m = 0, rc = 0, i = 0;
    et_op *v = xcalloc((size_t)n + 1, sizeof *v);
    const cJSON *node;
    cJSON_ArrayForEach(node, nodes)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(node, "rf_id");
        if (!cJSON_IsObject(node)) {
            rc = et_error(err, path, i, "", "an ET node must be an object");
            break;
        }
        if (id && !cJSON_IsNull(id) &&
            !(cJSON_IsNumber(id) && id->valuedouble >= 0 &&
              id->valuedouble == floor(id->valuedouble))) {
            rc = et_error(err, path, i, "rf_id", "must be a whole number of at least 0, or null");
            break;
        }
        int ev = cJSON_IsNumber(id) && id->valuedouble < 9e15
                     ? tb_map_get(&keys, (long long)id->valuedouble)
                     : -1;
        const trace_ev *e = ev >= 0 ? &te->ev[ev] : NULL;
        int lane =
            e && e->thread >= 0 && e->thread < te->n_tids ? b->lane_of_thread[e->thread] : -1;
        b->r->et_nodes++;
        if (lane >= 0)
            v[m++] = (et_op){node, i, lane, e->ts, e->ts + e->dur};
        i++;
    }
    tb_map_free(&keys);
    qsort(v, (size_t)m, sizeof *v, by_start);
    b->r->et_linked = m;
    *out = v;
    *n_out = m;
    return rc;
}

/* A tensor's last writer so far: its lane and end (us), and the piece holding that end. */
typedef struct writer {
    int lane, piece;
    double end;
} writer;

int tb_et_link(build *b, const char *et_path, ps_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = trace_file_read(et_path, &text, &len, err);
    if (rc)
        return rc;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    if (!cJSON_IsObject(root) || !cJSON_IsArray(nodes)) {
        cJSON_Delete(root);
        return et_error(err, et_path, -1, "nodes",
                        "not a PyTorch execution trace (a JSON object with a nodes array)");
    }
    et_op *v = NULL;
    int n = 0;
    rc = link_nodes(b, nodes, et_path, &v, &n, err);
    int *first = xmalloc(((size_t)b->r->n_lanes + 1) * sizeof *first);
    int *lastop = xmalloc(((size_t)b->r->n_lanes + 1) * sizeof *lastop);
    for (int l = 0; l < b->r->n_lanes; l++)
        first[l] = lastop[l] = -1;
    for (uint32_t i = 0; i < b->r->n_ops; i++) {
        int l = b->r->ops[i].lane;
        if (first[l] < 0)
            first[l] = (int)i;
        lastop[l] = (int)i;
    }
    tb_map last; /* tensor id -> index into w */
    tb_map_init(&last, (size_t)n * 4 + 1);
    writer *w = xcalloc((size_t)n * 16 + 1, sizeof *w);
    int n_w = 0;
    long long ids[16];
    for (int k = 0; k < n && !rc; k++) {
        int reads = tensor_ids(v[k].node, "inputs", "input_types", ids, 16);
        int to = piece_at(b, first, lastop, v[k].lane, v[k].start);
        for (int q = 0; q < reads && to >= 0; q++) {
            int x = tb_map_get(&last, ids[q]);
            if (x < 0 || w[x].lane == v[k].lane || w[x].end > v[k].start || w[x].piece < 0)
                continue;
            tb_add_edge(b, (uint32_t)w[x].piece, (uint32_t)to);
            b->r->et_edges++;
        }
        int writes = tensor_ids(v[k].node, "outputs", "output_types", ids, 16);
        int from = piece_at(b, first, lastop, v[k].lane, v[k].end - 1e-3);
        for (int q = 0; q < writes; q++) {
            int x = tb_map_get(&last, ids[q]);
            if (x < 0) {
                x = n_w++;
                tb_map_put(&last, ids[q], x);
            }
            w[x] = (writer){v[k].lane, from, v[k].end};
        }
    }
    tb_map_free(&last);
    free(first);
    free(lastop);
    free(w);
    free(v);
    cJSON_Delete(root);
    return rc;
}
