/* trace_chakra.c: Chakra execution traces (protobuf, workloads/trace/chakra.proto; what `run
 * --chakra` writes and MLCommons' Chakra tools convert PyTorch traces into) read into job ranks
 * for `protosim replay` (docs/design-notes.md, "Chakra in").
 *
 * A file is one rank's nodes. Compute nodes become measured-time ops (a GPU kernel, or host work
 * when is_cpu_op), collective nodes the executor's collectives over their process group
 * (comm_group.json beside the files, ASTRA-sim's map of pg_name to ranks; without a pg_name,
 * every rank), send and receive nodes a transfer and its arrival, paired by (sender, receiver,
 * tag). Lanes: a node's `stream` attribute (what protosim writes) or one per kind: compute,
 * communication, point-to-point, host. A lane runs its nodes in a dependency order, the file's
 * where it can (Kahn's, first ready first); data_deps and ctrl_deps are edges. Nothing in a
 * Chakra trace is measured: the replay predicts, and compares with nothing. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chakra.pb-c.h"

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

int tb_is_chakra_file(const char *path)
{
    char buf[64];
    int got = trace_file_head(path, buf, (int)sizeof buf); /* -1: the Kineto reader reports it */
    for (int i = 0; i < got; i++)
        if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r')
            return buf[i] != '{' && buf[i] != '[';
    return 0;
}

/* The rank a Chakra file's name gives (NAME.RANK.et, optionally .gz), -1 if none. */
static int rank_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 3 && !strcmp(base + n - 3, ".gz"))
        n -= 3;
    if (n < 5 || strncmp(base + n - 3, ".et", 3))
        return -1;
    size_t end = n - 3, start = end;
    while (start > 0 && base[start - 1] >= '0' && base[start - 1] <= '9')
        start--;
    if (start == end || start == 0 || base[start - 1] != '.' || end - start > 6)
        return -1;
    return atoi(base + start);
}

/* A base-128 varint at *pos; -1 if it runs past the end or beyond 64 bits. */
static int read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = buf[(*pos)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* The file's messages: [pos, pos + n) of each, the metadata first. */
typedef struct et_msgs {
    size_t *at, *n;
    int count;
} et_msgs;

static int split_messages(const uint8_t *buf, size_t len, const char *path, et_msgs *m,
                          ps_error *err)
{
    memset(m, 0, sizeof *m);
    size_t pos = 0, cap = 0;
    while (pos < len) {
        uint64_t n;
        size_t at = pos;
        if (read_varint(buf, len, &pos, &n) || n > len - pos)
            return ps_error_set(err, PS_EINPUT, path, 0, 0, m->count ? "nodes" : "metadata",
                                "message %d at byte %zu: its length runs past the end of the "
                                "file (not a Chakra execution trace, or a truncated one)",
                                m->count, at);
        xgrow(&m->at, sizeof *m->at, (size_t)m->count + 1, &cap);
        m->n = xreallocarray(m->n, cap, sizeof *m->n);
        m->at[m->count] = pos;
        m->n[m->count++] = (size_t)n;
        pos += n;
    }
    if (m->count == 0)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "metadata", "an empty file");
    return 0;
}

/* comm_group.json beside the first file: process group name -> ranks. NULL if there is none. */
static cJSON *read_groups(const char *first_path, char *gpath, size_t cap, ps_error *err)
{
    const char *slash = strrchr(first_path, '/');
    int dir = slash ? (int)(slash - first_path) : 0;
    snprintf(gpath, cap, "%.*s%scomm_group.json", dir, first_path, slash ? "/" : "");
    char *text = NULL;
    size_t len = 0;
    FILE *f = fopen(gpath, "rb");
    if (!f)
        return NULL;
    fclose(f);
    if (trace_file_read(gpath, &text, &len, err))
        return NULL;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        ps_error_set(err, PS_EINPUT, gpath, 0, 0, NULL,
                     "not a JSON object of process group names and their ranks");
        return NULL;
    }
    return root;
}

/* What reading one rank's nodes needs. */
typedef struct chakra_rd {
    build b;
    const char *path;
    int world;
    const cJSON *groups; /* may be NULL */
    const char *gpath;
    int lane_of_kind[4]; /* compute, communication, point-to-point, host: -1 until used */
    int *stream_lane;    /* a `stream` attribute's lane, -1 until used */
    int n_stream_lanes;
} chakra_rd;

static const ChakraProtoMsg__AttributeProto *attr(const ChakraProtoMsg__Node *n, const char *k)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && !strcmp(n->attr[i]->name, k))
            return n->attr[i];
    return NULL;
}

/* An integer attribute of any integer kind, 0 (and *ok 0) if absent or of another kind. */
static int64_t int_attr(const ChakraProtoMsg__Node *n, const char *k, int *ok)
{
    const ChakraProtoMsg__AttributeProto *a = attr(n, k);
    *ok = 1;
    if (a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL)
        return a->int64_val;
    if (a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL)
        return a->int32_val;
    if (a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL &&
        a->uint64_val <= INT64_MAX)
        return (int64_t)a->uint64_val;
    *ok = 0;
    return 0;
}

static int lane_named(chakra_rd *c, const char *name, int is_cpu)
{
    trace_rank *r = c->b.r;
    r->lanes = xreallocarray(r->lanes, (size_t)r->n_lanes + 1, sizeof *r->lanes);
    r->lanes[r->n_lanes].is_cpu = is_cpu;
    snprintf(r->lanes[r->n_lanes].name, sizeof r->lanes[r->n_lanes].name, "%s", name);
    return r->n_lanes++;
}

/* Stream attributes taken (0 to this - 1; others fall back to the kind's lane): with the four
 * kinds' lanes, well inside the executor's 255 streams. */
enum { CHAKRA_MAX_STREAMS = 64 };

/* The node's lane: its `stream` attribute's, else its kind's (0 compute, 1 communication, 2
 * point-to-point, 3 host). */
static int lane_of(chakra_rd *c, const ChakraProtoMsg__Node *n, int kind)
{
    static const char *const names[4] = {"gpu compute", "gpu communication", "gpu p2p", "cpu"};
    int ok;
    int64_t s = int_attr(n, "stream", &ok);
    if (ok && kind != 3 && s >= 0 && s < CHAKRA_MAX_STREAMS) {
        if (s >= c->n_stream_lanes) {
            c->stream_lane = xreallocarray(c->stream_lane, (size_t)s + 1, sizeof *c->stream_lane);
            for (int i = c->n_stream_lanes; i <= s; i++)
                c->stream_lane[i] = -1;
            c->n_stream_lanes = (int)s + 1;
        }
        if (c->stream_lane[s] < 0) {
            char name[32];
            snprintf(name, sizeof name, "gpu stream %d", (int)s);
            c->stream_lane[s] = lane_named(c, name, 0);
        }
        return c->stream_lane[s];
    }
    if (c->lane_of_kind[kind] < 0)
        c->lane_of_kind[kind] = lane_named(c, names[kind], kind == 3);
    return c->lane_of_kind[kind];
}

/* An input error at nodes[k] of the file (its position, the metadata not counted). */
static int node_error(const chakra_rd *c, ps_error *err, int k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int node_error(const chakra_rd *c, ps_error *err, int k, const char *fmt, ...)
{
    char field[32], msg[512];
    snprintf(field, sizeof field, "nodes[%d]", k);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ps_error_set(err, PS_EINPUT, c->path, 0, 0, field, "%s", msg);
}

/* A collective's group: its pg_name's ranks in comm_group.json (ascending, into
 * r->group_ranks), or every rank without a pg_name. */
static int coll_group(chakra_rd *c, const ChakraProtoMsg__Node *n, int k, trace_op *op,
                      ps_error *err)
{
    trace_rank *r = c->b.r;
    const ChakraProtoMsg__AttributeProto *pg = attr(n, "pg_name");
    if (!pg) {
        op->group_n = c->world;
        op->group_at = -1;
        return 0;
    }
    if (pg->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return node_error(c, err, k, "pg_name must be a string");
    const cJSON *ranks =
        c->groups ? cJSON_GetObjectItemCaseSensitive(c->groups, pg->string_val) : NULL;
    if (!c->groups)
        return node_error(c, err, k,
                          "process group '%.40s' needs %s (each group's ranks; `run --chakra` "
                          "writes it beside the traces)",
                          pg->string_val, c->gpath);
    int m = cJSON_GetArraySize(ranks);
    if (!cJSON_IsArray(ranks) || m < 1 || m > c->world)
        return node_error(c, err, k, "process group '%.40s' is not a list of 1 to %d ranks in %s",
                          pg->string_val, c->world, c->gpath);
    int at = r->n_group_ranks, mine = 0;
    r->group_ranks = xreallocarray(r->group_ranks, (size_t)at + (size_t)m, sizeof *r->group_ranks);
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, ranks)
    {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
            v->valuedouble >= c->world)
            return node_error(c, err, k, "process group '%.40s' in %s: ranks are 0 to %d",
                              pg->string_val, c->gpath, c->world - 1);
        int x = (int)v->valuedouble, q = at + i++;
        while (q > at && r->group_ranks[q - 1] > x) { /* insertion: ascending */
            r->group_ranks[q] = r->group_ranks[q - 1];
            q--;
        }
        r->group_ranks[q] = x;
        mine |= x == r->rank;
    }
    for (int q = at + 1; q < at + m; q++)
        if (r->group_ranks[q] == r->group_ranks[q - 1])
            return node_error(c, err, k, "process group '%.40s' in %s names rank %d twice",
                              pg->string_val, c->gpath, r->group_ranks[q]);
    if (!mine)
        return node_error(c, err, k, "process group '%.40s' in %s does not hold this rank (%d)",
                          pg->string_val, c->gpath, r->rank);
    r->n_group_ranks = at + m;
    op->group_n = m;
    op->group_at = at;
    return 0;
}

/* The executor's collective of a comm_type. */
static int coll_kind_of(int64_t t, uint8_t *out)
{
    switch (t) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE: *out = COLL_ALLREDUCE; return 1;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER: *out = COLL_ALLGATHER; return 1;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
        *out = COLL_REDUCE_SCATTER;
        return 1;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL: *out = COLL_ALLTOALL; return 1;
    default: return 0;
    }
}

/* Node k as an op of the rank (not added yet): kind, lane, time, bytes, peers. */
static int node_op(chakra_rd *c, const ChakraProtoMsg__Node *n, int k, trace_op *op, ps_error *err)
{
    memset(op, 0, sizeof *op);
    op->event = k;
    op->op = op->op_seq = -1;
    op->name = tb_name(&c->b, n->name && n->name[0] ? n->name : "(unnamed)");
    op->start = n->start_time_micros * 1e-6;
    int ok;
    switch (n->type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE: {
        const ChakraProtoMsg__AttributeProto *cpu = attr(n, "is_cpu_op");
        int host = cpu && cpu->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL &&
                   cpu->bool_val;
        if (n->duration_micros > (uint64_t)1e12)
            return node_error(c, err, k, "duration_micros %llu is over 1e12 (11 days)",
                              (unsigned long long)n->duration_micros);
        op->kind = host ? TRACE_CPU : TRACE_GPU;
        op->overhead = TRACE_OVH_BEFORE_FIRST_LAUNCH; /* host work that launches nothing */
        op->seconds = n->duration_micros * 1e-6;
        op->lane = lane_of(c, n, host ? 3 : 0);
        return 0;
    }
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE: {
        int64_t t = int_attr(n, "comm_type", &ok);
        if (!ok || !coll_kind_of(t, &op->coll))
            return node_error(c, err, k,
                              "comm_type %lld: only ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and "
                              "ALL_TO_ALL collectives are modelled",
                              (long long)t);
        int64_t bytes = int_attr(n, "comm_size", &ok);
        if (!ok || bytes < 0 || bytes > (int64_t)1e15)
            return node_error(c, err, k, "comm_size must be an integer of 0 to 1e15 bytes");
        op->kind = TRACE_COLL;
        op->bytes = (double)bytes;
        op->lane = lane_of(c, n, 1);
        return coll_group(c, n, k, op, err);
    }
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE: {
        int send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
        int ok_src, ok_dst, ok_tag, ok_size;
        int64_t src = int_attr(n, "comm_src", &ok_src), dst = int_attr(n, "comm_dst", &ok_dst);
        int64_t tag = int_attr(n, "comm_tag", &ok_tag), bytes = int_attr(n, "comm_size", &ok_size);
        if (!ok_src || !ok_dst || !ok_tag || !ok_size)
            return node_error(c, err, k,
                              "a %s node needs comm_src, comm_dst, comm_tag and "
                              "comm_size",
                              send ? "send" : "receive");
        if ((send ? src : dst) != c->b.r->rank || src == dst || src < 0 || dst < 0 ||
            src >= c->world || dst >= c->world)
            return node_error(c, err, k,
                              "comm_src %lld, comm_dst %lld: a %s of rank %d to another of the "
                              "%d ranks",
                              (long long)src, (long long)dst, send ? "send" : "receive",
                              c->b.r->rank, c->world);
        if (tag < INT32_MIN || tag > INT32_MAX || bytes < 0 || bytes > (int64_t)1e15)
            return node_error(c, err, k, "comm_tag must fit 32 bits, comm_size 0 to 1e15 bytes");
        op->kind = send ? TRACE_SEND : TRACE_RECV;
        op->peer = (int32_t)(send ? dst : src);
        op->tag = (int32_t)tag;
        op->bytes = (double)bytes;
        op->lane = lane_of(c, n, 2);
        return 0;
    }
    default:
        return node_error(c, err, k,
                          "node type %d is not modelled (compute, collective, send and receive "
                          "nodes are)",
                          (int)n->type);
    }
}

/* Nodes in a dependency order, the file's where it can: Kahn's, the ready nodes first ready
 * first, in file order. dep_first/deps: each node's dependencies (indices). 0, or the index of a
 * node its dependencies lead back to (a cycle) + 1 as a negative. */
static int dependency_order(int n, const int *dep_first, const int *deps, int *order)
{
    int *indeg = xcalloc((size_t)n + 1, sizeof *indeg),
        *succ_first = xcalloc((size_t)n + 2, sizeof *succ_first);
    for (int k = 0; k < n; k++)
        for (int i = dep_first[k]; i < dep_first[k + 1]; i++) {
            indeg[k]++;
            succ_first[deps[i] + 1]++;
        }
    for (int k = 0; k < n; k++)
        succ_first[k + 1] += succ_first[k];
    int *succ = xmalloc(((size_t)dep_first[n] + 1) * sizeof *succ),
        *fill = xcalloc((size_t)n + 1, sizeof *fill);
    for (int k = 0; k < n; k++)
        for (int i = dep_first[k]; i < dep_first[k + 1]; i++)
            succ[succ_first[deps[i]] + fill[deps[i]]++] = k;
    int head = 0, tail = 0;
    for (int k = 0; k < n; k++)
        if (indeg[k] == 0)
            order[tail++] = k;
    while (head < tail) {
        int k = order[head++];
        for (int i = succ_first[k]; i < succ_first[k + 1]; i++)
            if (--indeg[succ[i]] == 0)
                order[tail++] = succ[i];
    }
    int stuck = -1;
    for (int k = 0; k < n && stuck < 0 && tail < n; k++)
        if (indeg[k] > 0)
            stuck = k;
    free(indeg), free(succ_first), free(succ), free(fill);
    return stuck < 0 ? 0 : -(stuck + 1);
}

/* The nodes' dependencies (data_deps and ctrl_deps) as node indices. */
static int node_deps(chakra_rd *c, ChakraProtoMsg__Node **nodes, int n, int **dep_first_out,
                     int **deps_out, ps_error *err)
{
    tb_map ids;
    tb_map_init(&ids, (size_t)n + 1);
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        if (nodes[k]->id > (uint64_t)INT64_MAX)
            rc = node_error(c, err, k, "id %llu is over 2^63", (unsigned long long)nodes[k]->id);
        else if (tb_map_get(&ids, (long long)nodes[k]->id) >= 0)
            rc = node_error(c, err, k, "id %llu is also nodes[%d]'s",
                            (unsigned long long)nodes[k]->id,
                            tb_map_get(&ids, (long long)nodes[k]->id));
        else
            tb_map_put(&ids, (long long)nodes[k]->id, k);
    }
    int *dep_first = xcalloc((size_t)n + 1, sizeof *dep_first);
    for (int k = 0; k < n; k++)
        dep_first[k + 1] = dep_first[k] + (int)(nodes[k]->n_data_deps + nodes[k]->n_ctrl_deps);
    int *deps = xmalloc(((size_t)dep_first[n] + 1) * sizeof *deps);
    for (int k = 0; k < n && !rc; k++) {
        const ChakraProtoMsg__Node *nd = nodes[k];
        for (size_t i = 0; i < nd->n_data_deps + nd->n_ctrl_deps && !rc; i++) {
            uint64_t id =
                i < nd->n_data_deps ? nd->data_deps[i] : nd->ctrl_deps[i - nd->n_data_deps];
            int d = id <= (uint64_t)INT64_MAX ? tb_map_get(&ids, (long long)id) : -1;
            if (d < 0)
                rc = node_error(c, err, k, "depends on node id %llu, which the file lacks",
                                (unsigned long long)id);
            else if (d == k)
                rc = node_error(c, err, k, "depends on itself");
            deps[dep_first[k] + (int)i] = d;
        }
    }
    tb_map_free(&ids);
    *dep_first_out = dep_first;
    *deps_out = deps;
    return rc;
}

/* One file's nodes into job rank r: ops in dependency order, their edges. */
static int read_nodes(chakra_rd *c, ChakraProtoMsg__Node **nodes, int n, ps_error *err)
{
    int *dep_first = NULL, *deps = NULL;
    int rc = node_deps(c, nodes, n, &dep_first, &deps, err);
    int *order = xmalloc(((size_t)n + 1) * sizeof *order),
        *op_of = xmalloc(((size_t)n + 1) * sizeof *op_of);
    if (!rc) {
        int stuck = dependency_order(n, dep_first, deps, order);
        if (stuck)
            rc = node_error(c, err, -stuck - 1,
                            "its dependencies lead back to it (a cycle among the file's nodes)");
    }
    for (int i = 0; i < n && !rc; i++) {
        trace_op op;
        rc = node_op(c, nodes[order[i]], order[i], &op, err);
        if (!rc)
            op_of[order[i]] = (int)tb_add_op(&c->b, op);
    }
    for (int k = 0; k < n && !rc; k++)
        for (int i = dep_first[k]; i < dep_first[k + 1]; i++)
            tb_add_edge(&c->b, (uint32_t)op_of[deps[i]], (uint32_t)op_of[k]);
    free(dep_first), free(deps), free(order), free(op_of);
    return rc;
}

/* One Chakra file into job rank r of a world of `world`. */
static int chakra_rank(trace_job *j, trace_rank *r, const char *path, int rank, int world,
                       const cJSON *groups, const char *gpath, ps_error *err)
{
    chakra_rd c;
    memset(&c, 0, sizeof c);
    c.b.j = j;
    c.b.r = r;
    c.path = path;
    c.world = world;
    c.groups = groups;
    c.gpath = gpath;
    for (int k = 0; k < 4; k++)
        c.lane_of_kind[k] = -1;
    snprintf(r->file, sizeof r->file, "%s", path);
    r->rank = rank;
    r->chakra = 1;
    xgrow(&r->calls, sizeof *r->calls, 1, &r->cap_calls); /* calls[0]: none known */
    memset(r->calls, 0, sizeof *r->calls);
    r->calls[0].name = -1;
    r->n_calls = 1;
    r->n_steps = 1; /* the whole trace, unmeasured */
    r->measured_step = xcalloc(1, sizeof *r->measured_step);
    char *buf = NULL;
    size_t len = 0;
    int rc = trace_file_read(path, &buf, &len, err);
    et_msgs m;
    memset(&m, 0, sizeof m);
    if (!rc)
        rc = split_messages((const uint8_t *)buf, len, path, &m, err);
    ChakraProtoMsg__GlobalMetadata *meta = NULL;
    if (!rc) {
        meta =
            chakra_proto_msg__global_metadata__unpack(NULL, m.n[0], (const uint8_t *)buf + m.at[0]);
        if (!meta)
            rc = ps_error_set(err, PS_EINPUT, path, 0, 0, "metadata",
                              "not a Chakra execution trace (its first message is no "
                              "GlobalMetadata)");
    }
    int n = rc ? 0 : m.count - 1;
    ChakraProtoMsg__Node **nodes = xcalloc((size_t)n + 1, sizeof *nodes);
    for (int k = 0; k < n && !rc; k++) {
        nodes[k] =
            chakra_proto_msg__node__unpack(NULL, m.n[k + 1], (const uint8_t *)buf + m.at[k + 1]);
        if (!nodes[k])
            rc = node_error(&c, err, k, "not a Chakra node message");
    }
    if (!rc && n == 0)
        rc = ps_error_set(err, PS_EINPUT, path, 0, 0, "nodes", "no nodes");
    if (!rc)
        rc = read_nodes(&c, nodes, n, err);
    r->main_lane = c.lane_of_kind[3] >= 0 ? c.lane_of_kind[3] : 0;
    for (int k = 0; k < n; k++)
        if (nodes[k])
            chakra_proto_msg__node__free_unpacked(nodes[k], NULL);
    if (meta)
        chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
    free(nodes), free(m.at), free(m.n), free(buf), free(c.b.end_s), free(c.stream_lane);
    return rc;
}

int tb_chakra_job(trace_job *j, const char *const *paths, int n_paths, ps_error *err)
{
    char gpath[4096];
    int rc = 0;
    cJSON *groups = read_groups(paths[0], gpath, sizeof gpath, err);
    if (!groups && err->code)
        return err->code;
    j->world_size = n_paths;
    for (int i = 0; i < n_paths && !rc; i++) {
        int rank = rank_of_name(paths[i]);
        if (rank < 0 && n_paths == 1)
            rank = 0;
        if (rank < 0 || rank >= n_paths)
            rc = ps_error_set(err, PS_EINPUT, paths[i], 0, 0, NULL,
                              "a Chakra trace of several is named NAME.RANK.et with RANK from 0 "
                              "to %d (one file per rank)",
                              n_paths - 1);
        for (int k = 0; k < i && !rc; k++)
            if (j->ranks[k].rank == rank)
                rc = ps_error_set(err, PS_EINPUT, paths[i], 0, 0, NULL,
                                  "rank %d is also the rank of %s", rank, paths[k]);
        if (!rc) {
            rc = chakra_rank(j, &j->ranks[i], paths[i], rank, n_paths, groups, gpath, err);
            j->n_ranks = i + 1;
        }
    }
    cJSON_Delete(groups);
    return rc;
}
