/* out_chakra.c: a compiled plan's execution graph as Chakra execution traces (`run --chakra DIR`;
 * docs/design-notes.md, "Chakra out"): DIR/protosim.<rank>.et for every rank and
 * DIR/comm_group.json, each process group's ranks, as ASTRA-sim reads them.
 *
 * A rank's tasks become its nodes in task order: a compute task a COMP_NODE lasting its modelled
 * time on an idle GPU (rounded to the microsecond, Chakra's unit), a collective task a
 * COMM_COLL_NODE (type, per-rank bytes, process group = the graph's group index), a transfer a
 * COMM_SEND_NODE on its sender and a COMM_RECV_NODE on its receiver, placed just before the
 * receiver's first task that consumes it (sender, receiver, a tag shared by the two, bytes).
 * Every dependency is a data dependency, as Chakra's feeder follows them: the task before it on
 * its stream, and each edge into it (a transfer from another rank through its receive node). */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chakra.pb-c.h"

#include "../sim/base/xalloc.h"
#include "output.h"

/* The Chakra schema version the nodes follow (workloads/trace/chakra.proto). */
static const char *const CHAKRA_VERSION = "0.0.4";

/* What writing one rank's file needs, shared by its nodes. */
typedef struct chakra_ctx {
    const exec_graph *g;
    uint32_t *pred_first, *preds; /* CSR of each task's predecessors */
    uint32_t *stream_prev;        /* the task before it on its stream, UINT32_MAX: first */
    uint32_t *recv_head;          /* transfers received just before task t: a list per task */
    uint32_t *recv_next;          /* [n_tasks] the list's links, UINT32_MAX ends */
    uint64_t *node_id;            /* [n_tasks] the task's node on its rank */
    uint64_t *recv_id;            /* [n_tasks] a transfer's receive node on the receiver */
    int32_t *tag;                 /* [n_tasks] a transfer's tag */
    FILE *f;
    int rank;
} chakra_ctx;

/* The message's length as a base-128 varint, then the message. */
static int put_message(FILE *f, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = xmalloc(n ? n : 1), len[10];
    protobuf_c_message_pack(m, buf);
    int k = 0;
    for (uint64_t v = n; k == 0 || v; v >>= 7)
        len[k++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    int ok = fwrite(len, 1, (size_t)k, f) == (size_t)k && fwrite(buf, 1, n, f) == n;
    free(buf);
    return ok ? 0 : -1;
}

static void attr_int64(ChakraProtoMsg__AttributeProto *a, const char *name, int64_t v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}

static void attr_int32(ChakraProtoMsg__AttributeProto *a, const char *name, int32_t v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
    a->int32_val = v;
}

static void attr_string(ChakraProtoMsg__AttributeProto *a, const char *name, const char *v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)v;
}

static void attr_bool(ChakraProtoMsg__AttributeProto *a, const char *name, int v)
{
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v != 0;
}

/* Chakra's collective type of a graph collective. */
static int64_t comm_type(coll_kind k)
{
    switch (k) {
    case COLL_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case COLL_REDUCE_SCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
    case COLL_ALLGATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case COLL_ALLTOALL: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    }
    return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER; /* not reached */
}

/* One node: its id, name, type, dependencies and attributes (n_attr of attr). */
static int put_node(chakra_ctx *x, uint64_t id, const char *name, ChakraProtoMsg__NodeType type,
                    uint64_t *deps, size_t n_deps, uint64_t duration_us,
                    ChakraProtoMsg__AttributeProto *attr, size_t n_attr)
{
    ChakraProtoMsg__AttributeProto *ptr[8];
    assert(n_attr <= 8);
    for (size_t i = 0; i < n_attr; i++)
        ptr[i] = &attr[i];
    ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
    node.id = id;
    node.name = (char *)name;
    node.type = type;
    node.n_data_deps = n_deps;
    node.data_deps = deps;
    node.duration_micros = duration_us;
    node.n_attr = n_attr;
    node.attr = ptr;
    return put_message(x->f, &node.base);
}

/* Bytes as Chakra's int64 comm_size. */
static int64_t size_of(double bytes)
{
    assert(bytes >= 0 && bytes < 9.2e18);
    return (int64_t)llround(bytes);
}

/* The receive node of transfer t on this rank: after the tasks of this rank the transfer waits
 * for (the receiver ready for it: a pipeline's blocking exchange). */
static int put_recv(chakra_ctx *x, uint32_t t, uint64_t *deps)
{
    const graph_task *k = &x->g->tasks[t];
    size_t n = 0;
    for (uint32_t i = x->pred_first[t]; i < x->pred_first[t + 1]; i++)
        if (x->g->tasks[x->preds[i]].rank == x->rank)
            deps[n++] = x->node_id[x->preds[i]];
    ChakraProtoMsg__AttributeProto a[6];
    attr_bool(&a[0], "is_cpu_op", 0);
    attr_int32(&a[1], "stream", k->stream); /* the sender's stream: the pair's kind of traffic */
    attr_int32(&a[2], "comm_src", k->rank);
    attr_int32(&a[3], "comm_dst", k->peer);
    attr_int32(&a[4], "comm_tag", x->tag[t]);
    attr_int64(&a[5], "comm_size", size_of(k->bytes));
    return put_node(x, x->recv_id[t], x->g->labels[k->label],
                    CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE, deps, n, 0, a, 6);
}

/* Task t of this rank, after its receive nodes. */
static int put_task(chakra_ctx *x, uint32_t t, uint64_t *deps, char *pg)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
    size_t n = 0;
    if (x->stream_prev[t] != UINT32_MAX)
        deps[n++] = x->node_id[x->stream_prev[t]];
    for (uint32_t i = x->pred_first[t]; i < x->pred_first[t + 1]; i++) {
        uint32_t p = x->preds[i];
        const graph_task *q = &g->tasks[p];
        if (q->rank == x->rank)
            deps[n++] = x->node_id[p];
        else if (q->kind == TASK_TRANSFER && q->peer == x->rank)
            deps[n++] = x->recv_id[p];
        else if (k->kind == TASK_TRANSFER && q->rank == k->peer)
            continue; /* the receiver's side: a dependency of its receive node */
        else
            return -2; /* not expressible: out_run_chakra reports it */
    }
    ChakraProtoMsg__AttributeProto a[6];
    attr_bool(&a[0], "is_cpu_op", 0);
    attr_int32(&a[1], "stream", k->stream); /* protosim's: its replay keeps each stream's order */
    const char *name = g->labels[k->label];
    if (k->kind == TASK_COMPUTE)
        return put_node(x, x->node_id[t], name, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE, deps, n,
                        (uint64_t)llround(k->seconds * 1e6), a, 2);
    if (k->kind == TASK_TRANSFER) {
        attr_int32(&a[2], "comm_src", k->rank);
        attr_int32(&a[3], "comm_dst", k->peer);
        attr_int32(&a[4], "comm_tag", x->tag[t]);
        attr_int64(&a[5], "comm_size", size_of(k->bytes));
        return put_node(x, x->node_id[t], name, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE, deps,
                        n, 0, a, 6);
    }
    const graph_collective *c = &g->colls[k->coll];
    snprintf(pg, 16, "%d", c->group);
    attr_int64(&a[2], "comm_type", comm_type(c->kind));
    attr_int64(&a[3], "comm_size", size_of(c->bytes));
    attr_string(&a[4], "pg_name", pg);
    return put_node(x, x->node_id[t], name, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE, deps, n, 0,
                    a, 5);
}

/* Predecessor lists, each task's stream predecessor, the transfers' tags and receive points. */
static void chakra_index(chakra_ctx *x)
{
    const exec_graph *g = x->g;
    uint32_t n = g->n_tasks;
    graph_predecessors(g, &x->pred_first, &x->preds, &x->stream_prev);
    x->recv_head = xcalloc((size_t)n + 1, sizeof *x->recv_head);
    x->recv_next = xcalloc((size_t)n + 1, sizeof *x->recv_next);
    x->tag = xcalloc((size_t)n + 1, sizeof *x->tag);
    for (uint32_t t = 0; t < n; t++)
        x->recv_head[t] = x->recv_next[t] = UINT32_MAX;
    int32_t tags = 0;
    for (uint32_t t = 0; t < n; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->kind != TASK_TRANSFER)
            continue;
        assert(tags < INT32_MAX);
        x->tag[t] = tags++;
        uint32_t first = UINT32_MAX; /* its earliest consumer on the receiver */
        for (uint32_t i = 0; i < k->n_succ; i++) {
            uint32_t s = g->succ[k->succ_first + i];
            if (g->tasks[s].rank == k->peer && s < first)
                first = s;
        }
        assert(first != UINT32_MAX); /* graph_finalize: a transfer has a consumer */
        x->recv_next[t] = x->recv_head[first];
        x->recv_head[first] = t;
    }
    /* node ids per rank in the order the file lists them: a task's receive nodes, then it */
    x->node_id = xcalloc((size_t)n + 1, sizeof *x->node_id);
    x->recv_id = xcalloc((size_t)n + 1, sizeof *x->recv_id);
    uint64_t *next = xcalloc((size_t)g->n_ranks, sizeof *next);
    for (uint32_t t = 0; t < n; t++) {
        int r = g->tasks[t].rank;
        for (uint32_t v = x->recv_head[t]; v != UINT32_MAX; v = x->recv_next[v])
            x->recv_id[v] = next[r]++;
        x->node_id[t] = next[r]++;
    }
    free(next);
}

/* DIR/protosim.<rank>.et: the metadata, then the rank's nodes. */
static int put_rank(chakra_ctx *x, const char *dir, int rank, ps_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/protosim.%d.et", dir, rank);
    x->f = fopen(path, "wb");
    if (!x->f)
        return out_write_error(path, err);
    x->rank = rank;
    const exec_graph *g = x->g;
    ChakraProtoMsg__AttributeProto a[1], *ap[1] = {&a[0]};
    attr_string(&a[0], "generator", "protosim");
    ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    meta.version = (char *)CHAKRA_VERSION;
    meta.n_attr = 1;
    meta.attr = ap;
    int rc = put_message(x->f, &meta.base);
    size_t cap = 16;
    uint64_t *deps = xcalloc(cap, sizeof *deps);
    char pg[16];
    for (uint32_t t = 0; t < g->n_tasks && !rc; t++) {
        if (g->tasks[t].rank != rank)
            continue;
        size_t need = (size_t)g->tasks[t].n_pred + 1;
        for (uint32_t r = x->recv_head[t]; r != UINT32_MAX; r = x->recv_next[r])
            if ((size_t)g->tasks[r].n_pred > need)
                need = g->tasks[r].n_pred;
        if (need > cap) {
            cap = need;
            deps = xreallocarray(deps, cap, sizeof *deps);
        }
        for (uint32_t r = x->recv_head[t]; r != UINT32_MAX && !rc; r = x->recv_next[r])
            rc = put_recv(x, r, deps);
        if (!rc)
            rc = put_task(x, t, deps, pg);
    }
    free(deps);
    if (rc == -2) {
        fclose(x->f);
        return ps_error_set(err, PS_EINTERNAL, "", 0, 0, "--chakra",
                            "the execution graph has a dependency across GPUs that is not a "
                            "transfer: Chakra cannot express it");
    }
    if (fclose(x->f) || rc)
        return out_write_error(path, err);
    return 0;
}

/* DIR/comm_group.json: {"<group>": [ranks in ring order], ...}. */
static int put_groups(const exec_graph *g, const char *dir, ps_error *err)
{
    char path[4096], key[16];
    snprintf(path, sizeof path, "%s/comm_group.json", dir);
    cJSON *root = cJSON_CreateObject();
    for (uint32_t i = 0; i < g->n_groups; i++) {
        const graph_group *gr = &g->groups[i];
        cJSON *ranks = cJSON_CreateArray();
        for (uint32_t j = 0; j < gr->n; j++)
            cJSON_AddItemToArray(ranks, cJSON_CreateNumber(g->group_ranks[gr->first + j]));
        snprintf(key, sizeof key, "%u", i);
        cJSON_AddItemToObject(root, key, ranks);
    }
    return out_json_file(path, root, err);
}

/* Every group's members take part with a task (no folded stand-ins, no companion flows): what
 * run --chakra's unfolded compile gives. */
static int graph_is_unfolded(const exec_graph *g)
{
    for (uint32_t i = 0; i < g->n_groups; i++)
        if (g->groups[i].tasked != g->groups[i].n)
            return 0;
    return g->n_companion == 0 && g->n_coll_comp == 0;
}

int out_run_chakra(const char *dir, const compiled_plan *p, ps_error *err)
{
    const exec_graph *g = p->graph;
    assert(g && g->finalized && graph_is_unfolded(g));
    if (mkdir(dir, 0777) && errno != EEXIST)
        return ps_error_set(err, PS_EINPUT, dir, 0, 0, "--chakra", "cannot create: %s",
                            strerror(errno));
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return ps_error_set(err, PS_EINPUT, dir, 0, 0, "--chakra", "not a directory");
    chakra_ctx x;
    memset(&x, 0, sizeof x);
    x.g = g;
    chakra_index(&x);
    int rc = 0;
    for (int r = 0; r < g->n_ranks && !rc; r++)
        rc = put_rank(&x, dir, r, err);
    if (!rc)
        rc = put_groups(g, dir, err);
    free(x.pred_first);
    free(x.preds);
    free(x.stream_prev);
    free(x.recv_head);
    free(x.recv_next);
    free(x.tag);
    free(x.node_id);
    free(x.recv_id);
    return rc;
}
