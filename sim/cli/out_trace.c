/* out_trace.c: the Chrome trace event format of a simulated run (Perfetto opens it): one
 * process per GPU, one thread per stream, one complete event per task, a flow arrow from each
 * point-to-point transfer to the task on its peer that consumes it. run --trace-ranks and
 * --trace-steps cut it down to some GPUs and the first micro-batches. */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "cli.h"

#define RANKS_EXPECTED "ranks and inclusive ranges separated by commas, e.g. 0-7 or 0,3,8-11"

/* One entry of a rank list, "R" or "LO-HI": 0 with *lo <= *hi, or -1. */
static int parse_range(const char *tok, int *lo, int *hi)
{
    char buf[32];
    size_t n = strlen(tok);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, tok, n + 1);
    char *dash = strchr(buf, '-');
    if (dash)
        *dash = '\0';
    if (cli_parse_int(buf, lo))
        return -1;
    *hi = *lo;
    if (dash && cli_parse_int(dash + 1, hi))
        return -1;
    return *lo <= *hi ? 0 : -1;
}

int out_trace_ranks(const char *spec, int n_ranks, unsigned char *keep, ps_error *err)
{
    char *copy = xstrdup(spec);
    int rc = 0;
    for (char *tok = copy, *next; tok && !rc; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        int lo, hi;
        if (parse_range(tok, &lo, &hi))
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--trace-ranks: bad rank list '%s' (expected " RANKS_EXPECTED ")",
                              spec);
        else if (n_ranks >= 0 && hi >= n_ranks)
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--trace-ranks: rank %d is not in the plan (it has %d GPUs, ranks "
                              "0-%d)",
                              hi, n_ranks, n_ranks - 1);
        else if (keep)
            memset(keep + lo, 1, (size_t)(hi - lo + 1));
    }
    free(copy);
    return rc;
}

/* Labels are ours (op paths and fixed names) but escape anyway: the trace must parse. */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* What is written: keep_rank[r] for each rank, and the micro-batch bound. */
typedef struct trace_ctx {
    FILE *f;
    const htae_graph *g;
    const htae_result *r;
    unsigned char *keep_rank; /* [n_ranks], owned */
    int steps;                /* 0: every micro-batch */
} trace_ctx;

static int task_kept(const trace_ctx *x, uint32_t t)
{
    const htae_task *k = &x->g->tasks[t];
    return x->keep_rank[k->rank] && (x->steps <= 0 || k->micro < x->steps);
}

/* process_name, process_sort_index and the stream's thread_name events of each kept rank. */
static void put_metadata(const trace_ctx *x, const cluster *c, const compiled_plan *p)
{
    int first = 1;
    for (int k = 0; k < x->g->n_ranks; k++) {
        if (!x->keep_rank[k])
            continue;
        fprintf(x->f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":",
                first ? "" : ",\n", k);
        first = 0;
        char name[160];
        snprintf(name, sizeof name, "GPU %d (%s, stage %d)", k, c->host_names[k],
                 p->stage_of_rank[k]);
        put_json_string(x->f, name);
        fputs("}}", x->f);
        fprintf(x->f,
                ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,"
                "\"args\":{\"sort_index\":%d}}",
                k, k);
        for (int s = 0; s < STREAM_COUNT; s++)
            fprintf(x->f,
                    ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"%s\"}}",
                    k, s, stream_name(s));
    }
    if (first) /* no rank kept cannot happen (a rank list names one), but stay valid JSON */
        fputs("{\"ph\":\"M\",\"name\":\"trace_empty\",\"pid\":0,\"args\":{}}", x->f);
}

static void put_task(const trace_ctx *x, uint32_t t)
{
    const htae_task *k = &x->g->tasks[t];
    fputs(",\n{\"ph\":\"X\",\"name\":", x->f);
    put_json_string(x->f, x->g->labels[k->label]);
    fprintf(x->f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
            task_category_name(k->category), k->rank, k->stream, x->r->start[t] * 1e6,
            (x->r->end[t] - x->r->start[t]) * 1e6);
    fputs(",\"args\":{", x->f);
    fprintf(x->f, "\"micro_batch\":%d", k->micro);
    if (k->kind != TASK_COMPUTE)
        fprintf(x->f, ",\"bytes\":%.0f", k->bytes);
    if (k->kind == TASK_TRANSFER)
        fprintf(x->f, ",\"to\":%d", k->peer);
    fputs("}}", x->f);
}

/* The first task on the transfer's peer that depends on it (earliest start, then lowest id),
 * or UINT32_MAX when there is none. */
static uint32_t consumer_of(const trace_ctx *x, uint32_t t)
{
    const htae_graph *g = x->g;
    const htae_task *k = &g->tasks[t];
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < k->n_succ; i++) {
        uint32_t s = g->succ[k->succ_first + i];
        if (g->tasks[s].rank != k->peer)
            continue;
        if (best == UINT32_MAX || x->r->start[s] < x->r->start[best] ||
            (x->r->start[s] == x->r->start[best] && s < best))
            best = s;
    }
    return best;
}

/* A flow arrow (id: the transfer's task id) from the transfer's end to its consumer's start,
 * when both are written. */
static void put_flow(const trace_ctx *x, uint32_t t)
{
    const htae_task *k = &x->g->tasks[t];
    uint32_t s = consumer_of(x, t);
    if (s == UINT32_MAX || !task_kept(x, s))
        return;
    const htae_task *d = &x->g->tasks[s];
    fprintf(x->f,
            ",\n{\"ph\":\"s\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%u,\"pid\":%d,"
            "\"tid\":%d,\"ts\":%.3f}",
            t, k->rank, k->stream, x->r->end[t] * 1e6);
    fprintf(x->f,
            ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%u,"
            "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
            t, d->rank, d->stream, x->r->start[s] * 1e6);
}

/* Chrome trace event format (Perfetto opens it): one process per GPU, one thread per stream.
 * Streamed with fprintf: a trace holds millions of events, too many for a cJSON tree. */
int out_run_trace(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                  const out_trace_filter *filter, ps_error *err)
{
    const htae_graph *g = p->graph;
    trace_ctx x = {NULL, g, r, xcalloc((size_t)g->n_ranks, 1), filter ? filter->steps : 0};
    if (filter && filter->ranks) {
        if (out_trace_ranks(filter->ranks, g->n_ranks, x.keep_rank, err)) {
            free(x.keep_rank);
            return err->code;
        }
    } else {
        memset(x.keep_rank, 1, (size_t)g->n_ranks);
    }
    x.f = fopen(path, "w");
    if (!x.f) {
        free(x.keep_rank);
        return out_write_error(path, err);
    }
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", x.f);
    put_metadata(&x, c, p);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        if (!task_kept(&x, t))
            continue;
        put_task(&x, t);
        if (g->tasks[t].kind == TASK_TRANSFER && x.keep_rank[g->tasks[t].peer])
            put_flow(&x, t);
    }
    fputs("\n]}\n", x.f);
    free(x.keep_rank);
    if (fclose(x.f) != 0)
        return out_write_error(path, err);
    return 0;
}
