/* trace_read.c: a Kineto trace file (plain or gzip: zlib reads both) parsed by cJSON, its
 * events classified by category, its threads and streams numbered. */
#include "trace_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../sim/base/limits.h"
#include "../../sim/base/xalloc.h"

const char *trace_event_field(char *buf, size_t cap, int idx)
{
    snprintf(buf, cap, "traceEvents[%d]", idx);
    return buf;
}

double trace_arg_number(const trace_ev *e, const char *key)
{
    const cJSON *v = e->args ? cJSON_GetObjectItemCaseSensitive(e->args, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* cJSON's nodes and strings, from big blocks while a trace is parsed: one malloc per node was
 * the parse's largest cost (40% of it). The tree is freed with its blocks, never node by node. */
typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block;

static arena_block *parse_arena; /* the blocks of the tree being parsed */

static void *arena_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    arena_block *b = parse_arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ((size_t)1 << 22) ? n : (size_t)1 << 22;
        arena_block *nb = xmalloc(sizeof *nb + cap);
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        parse_arena = b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static void arena_free(void *p)
{
    (void)p; /* with the blocks */
}

static void arena_release(void *blocks)
{
    for (arena_block *b = blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
}

/* cJSON_ParseWithLength with the arena's hooks; the blocks into *blocks (also on failure). */
static cJSON *parse_in_arena(const char *text, size_t len, void **blocks)
{
    cJSON_Hooks hooks = {arena_alloc, arena_free};
    parse_arena = NULL;
    cJSON_InitHooks(&hooks);
    cJSON *root = cJSON_ParseWithLength(text, len);
    cJSON_InitHooks(NULL);
    *blocks = parse_arena;
    parse_arena = NULL;
    return root;
}

int trace_file_head(const char *path, char *buf, int cap)
{
    if (cap < 1)
        return -1;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return -1;
    int n = gzread(f, buf, (unsigned)cap - 1);
    gzclose(f);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

int trace_file_read(const char *path, char **out, size_t *len, ps_error *err)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot open the trace");
    gzbuffer(f, 1 << 20);
    size_t cap = 1 << 22, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (cap - n < (1 << 20)) {
            cap *= 2;
            buf = xreallocarray(buf, cap, 1);
        }
        int got = gzread(f, buf + n, (unsigned)(cap - n - 1));
        if (got < 0) {
            int code;
            const char *msg = gzerror(f, &code);
            ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot read the trace: %s", msg);
            gzclose(f);
            free(buf);
            return PS_EINPUT;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    gzclose(f);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Line and column of byte `at` of text, 1-based. */
static void locate(const char *text, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int ev_kind_of(const char *cat, int *kind)
{
    static const struct {
        const char *cat;
        int kind;
    } table[] = {{"cpu_op", EV_CPU_OP},        {"user_annotation", EV_ANNOTATION},
                 {"cuda_runtime", EV_RUNTIME}, {"cuda_driver", EV_RUNTIME},
                 {"kernel", EV_KERNEL},        {"gpu_memcpy", EV_COPY},
                 {"gpu_memset", EV_COPY},      {"cuda_sync", EV_GPU_SYNC},
                 {"Kernel", EV_KERNEL},        {"Memcpy", EV_COPY},
                 {"Memset", EV_COPY},          {"Runtime", EV_RUNTIME},
                 {"Operator", EV_CPU_OP}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(cat, table[i].cat) == 0) {
            *kind = table[i].kind;
            return 1;
        }
    return 0;
}

static int index_of(long long **v, int *n, long long id)
{
    for (int i = 0; i < *n; i++)
        if ((*v)[i] == id)
            return i;
    *v = xreallocarray(*v, (size_t)*n + 1, sizeof **v);
    (*v)[*n] = id;
    return (*n)++;
}

/* A whole number in [lo, hi], read from its double (cJSON's valueint saturates at INT_MAX). */
static int whole_in(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= lo &&
           v->valuedouble <= hi;
}

/* distributedInfo (world size, rank) and deviceProperties (the GPU's name). A world size or
 * rank that is there must be a whole number: 1..PS_MAX_GPUS, and 0..world size - 1. */
static int read_header(const cJSON *root, trace_events *t, const char *path, ps_error *err)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "distributedInfo");
    t->world_size = 1;
    if (cJSON_IsObject(d)) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(d, "world_size");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(d, "rank");
        if (w && !whole_in(w, 1, PS_MAX_GPUS))
            return ps_error_set(err, PS_EINPUT, path, 0, 0, "distributedInfo.world_size",
                                "must be a whole number from 1 to %d", PS_MAX_GPUS);
        if (w)
            t->world_size = (int)w->valuedouble;
        if (r && !whole_in(r, 0, t->world_size - 1))
            return ps_error_set(err, PS_EINPUT, path, 0, 0, "distributedInfo.rank",
                                "must be a whole number from 0 to world_size - 1 (%d)",
                                t->world_size - 1);
        if (r)
            t->rank = (int)r->valuedouble;
        t->has_distributed = 1;
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "deviceProperties");
    const cJSON *first = cJSON_IsArray(p) ? p->child : NULL;
    const cJSON *name = first ? cJSON_GetObjectItemCaseSensitive(first, "name") : NULL;
    if (cJSON_IsString(name))
        snprintf(t->device, sizeof t->device, "%s", name->valuestring);
    return 0;
}

/* A GPU event on a device deviceProperties does not list (when it lists devices). */
static int device_known(const cJSON *root, const trace_ev *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "deviceProperties");
    double dev = trace_arg_number(e, "device");
    if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) == 0 || isnan(dev))
        return 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, p)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "id");
        if (cJSON_IsNumber(id) && id->valuedouble == dev)
            return 1;
    }
    return 0;
}

/* A CPU thread's id: a number, or a string (some exporters write "tid": "main"). */
static long long thread_id(const cJSON *tid)
{
    if (cJSON_IsNumber(tid))
        return (long long)tid->valuedouble;
    char *end;
    long long v = strtoll(tid->valuestring, &end, 10);
    if (*tid->valuestring && *end == '\0')
        return v;
    unsigned long long h = 1469598103934665603ull; /* FNV-1a, kept apart from numeric ids */
    for (const char *c = tid->valuestring; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return (long long)(h | (1ull << 62));
}

/* Identifiers the reader turns into integers: the event's tid when a number, and these args
 * (streams, devices, correlations, sequence numbers). Each must be an integer of magnitude at
 * most 2^53 (a double holds it exactly), else the event is refused naming the field. */
static const char *const ID_ARGS[] = {"correlation",    "stream",
                                      "device",         "Sequence number",
                                      "wait_on_stream", "wait_on_cuda_event_record_corr_id"};

static int check_ids(const cJSON *e, const char *path, int idx, ps_error *err)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    int n = (int)(sizeof ID_ARGS / sizeof *ID_ARGS);
    for (int k = -1; k < n; k++) {
        const cJSON *v = k < 0                  ? cJSON_GetObjectItemCaseSensitive(e, "tid")
                         : cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, ID_ARGS[k])
                                                : NULL;
        double x = cJSON_IsNumber(v) ? v->valuedouble : 0.0;
        if (x == floor(x) && fabs(x) <= 9007199254740992.0) /* NaN and infinities fail */
            continue;
        char f[96];
        snprintf(f, sizeof f, "traceEvents[%d].%s%s", idx, k < 0 ? "" : "args.",
                 k < 0 ? "tid" : ID_ARGS[k]);
        return ps_error_set(err, PS_EINPUT, path, 0, 0, f,
                            "an identifier must be an integer of at most 2^53 (got %g)", x);
    }
    return 0;
}

/* One complete ("X") event of a category we read into t->ev; others are skipped. */
static int take_event(trace_events *t, const cJSON *e, int idx, const char *path, ps_error *err)
{
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
    int kind;
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 || !cJSON_IsString(cat) ||
        !ev_kind_of(cat->valuestring, &kind))
        return 0;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
    char f[48];
    /* a dur is bounded: 1e400 parses as inf (fuzzing found it reach the graph builder) */
    if (!cJSON_IsString(name) || !cJSON_IsNumber(ts) || !cJSON_IsNumber(dur) ||
        !(dur->valuedouble >= 0 && dur->valuedouble <= PS_MAX_TRACE_DUR_US) ||
        !isfinite(ts->valuedouble))
        return ps_error_set(err, PS_EINPUT, path, 0, 0, trace_event_field(f, sizeof f, idx),
                            "a '%s' event needs a name, a ts and a dur from 0 to %g us",
                            cat->valuestring, PS_MAX_TRACE_DUR_US);
    if (check_ids(e, path, idx, err))
        return err->code;
    trace_ev ev = {kind,
                   idx,
                   -1,
                   ts->valuedouble,
                   dur->valuedouble,
                   -1,
                   name->valuestring,
                   cJSON_GetObjectItemCaseSensitive(e, "args")};
    double corr = trace_arg_number(&ev, "correlation");
    if (!isnan(corr))
        ev.corr = (long long)corr;
    if (kind == EV_KERNEL || kind == EV_COPY || kind == EV_GPU_SYNC) {
        double stream = trace_arg_number(&ev, "stream");
        if (isnan(stream))
            stream = cJSON_IsNumber(tid) ? tid->valuedouble : -1;
        if (kind != EV_GPU_SYNC && !device_known(t->root, &ev))
            return ps_error_set(err, PS_EINPUT, path, 0, 0, trace_event_field(f, sizeof f, idx),
                                "GPU event on device %g, which deviceProperties does not list",
                                trace_arg_number(&ev, "device"));
        ev.thread = index_of(&t->streams, &t->n_streams, (long long)stream);
    } else {
        if (!cJSON_IsNumber(tid) && !cJSON_IsString(tid))
            return ps_error_set(err, PS_EINPUT, path, 0, 0, trace_event_field(f, sizeof f, idx),
                                "a '%s' event needs a tid", cat->valuestring);
        ev.thread = index_of(&t->tids, &t->n_tids, thread_id(tid));
    }
    t->ev[t->n++] = ev;
    return 0;
}

int trace_events_read(const char *path, trace_events *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    int rc = trace_file_read(path, &text, &len, err);
    if (rc)
        return rc;
    out->root = parse_in_arena(text, len, &out->arena);
    if (!out->root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 0, col = 0;
        if (at && at >= text && at <= text + len)
            locate(text, (size_t)(at - text), &line, &col);
        free(text);
        arena_release(out->arena);
        out->arena = NULL;
        return ps_error_set(err, PS_EINPUT, path, line, col, NULL, "not JSON: a syntax error");
    }
    free(text);
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(out->root, "traceEvents");
    if (!cJSON_IsObject(out->root) || !cJSON_IsArray(evs)) {
        trace_events_free(out);
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "traceEvents",
                            "not a Kineto trace: no traceEvents array");
    }
    rc = read_header(out->root, out, path, err);
    if (rc) {
        trace_events_free(out);
        return rc;
    }
    out->ev = xmalloc(((size_t)cJSON_GetArraySize(evs) + 1) * sizeof *out->ev);
    int idx = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        rc = take_event(out, e, idx++, path, err);
        if (rc) {
            trace_events_free(out);
            return rc;
        }
    }
    return 0;
}

void trace_events_free(trace_events *t)
{
    arena_release(t->arena); /* the tree's nodes live there */
    free(t->ev);
    free(t->tids);
    free(t->streams);
    memset(t, 0, sizeof *t);
}
