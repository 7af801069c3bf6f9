/* out_trace.c: the Chrome trace event format of a simulated run (Perfetto opens it): one
 * process per GPU, one thread per stream, one complete event per task, a flow arrow from each
 * point-to-point transfer to the task on its peer that consumes it, and a process "links" with
 * a counter track per counted link. run --trace-ranks and --trace-steps cut it down to some
 * GPUs and the first micro-batches. */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "cli.h"

int out_trace_ranks(const char *spec, int n_ranks, unsigned char *keep, ps_error *err)
{
    int *ranks, n;
    if (cli_rank_list("--trace-ranks", spec, &ranks, &n, err))
        return err->code;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if (n_ranks >= 0 && ranks[i] >= n_ranks)
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "--trace-ranks: rank %d is not in the plan (it has %d GPUs, ranks "
                              "0-%d)",
                              ranks[i], n_ranks, n_ranks - 1);
        else if (keep)
            keep[ranks[i]] = 1;
    free(ranks);
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
    const exec_graph *g;
    const htae_result *r;
    unsigned char *keep_rank; /* [n_ranks], owned */
    int steps;                /* 0: every micro-batch */
    /* Folded GPUs drawn as copies: the kept ranks whose stream s has no task of its own take
     * those of the lowest rank of their stage that has them. copies[r * n_streams + s]: the list
     * of ranks copying rank r's stream s, at copy_first[..] .. copy_first[.. + 1] in copy_to.
     * A kept rank whose stream has tasks of its own (an expert group's collectives, say) still
     * takes part, standing in, in collectives and sends of its source's stream: part_first,
     * part_to list it the same way, and it draws those tasks only (takes_part). */
    int *copy_first, *copy_to, *part_first, *part_to;
} trace_ctx;

static int task_kept(const trace_ctx *x, uint32_t t)
{
    const graph_task *k = &x->g->tasks[t];
    return x->keep_rank[k->rank] && (x->steps <= 0 || k->micro < x->steps);
}

/* process_name, process_sort_index and the thread_name events of each kept rank: one per
 * stream some task of the plan runs on (a plan without experts has no expert stream). */
static void put_metadata(const trace_ctx *x, const cluster *c, const compiled_plan *p)
{
    int first = 1;
    unsigned char *used = xcalloc((size_t)x->g->n_streams, 1);
    for (uint32_t t = 0; t < x->g->n_tasks; t++)
        used[x->g->tasks[t].stream] = 1;
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
        for (int s = 0; s < x->g->n_streams; s++)
            if (used[s])
                fprintf(x->f,
                        ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"name\":\"%s\"}}",
                        k, s, graph_stream_name(x->g, s));
    }
    free(used);
    if (first) /* no rank kept cannot happen (a rank list names one), but stay valid JSON */
        fputs("{\"ph\":\"M\",\"name\":\"trace_empty\",\"pid\":0,\"args\":{}}", x->f);
}

/* Task t on process `pid`: its own rank's, or (pid another rank) a folded GPU's copy of it,
 * marked args.copy_of. */
static void put_task_as(const trace_ctx *x, uint32_t t, int pid)
{
    const graph_task *k = &x->g->tasks[t];
    fputs(",\n{\"ph\":\"X\",\"name\":", x->f);
    put_json_string(x->f, x->g->labels[k->label]);
    fprintf(x->f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
            task_category_name(k->category), pid, k->stream, x->r->start[t] * 1e6,
            (x->r->end[t] - x->r->start[t]) * 1e6);
    fputs(",\"args\":{", x->f);
    fprintf(x->f, "\"micro_batch\":%d", k->micro);
    if (pid != k->rank) /* folded: simulated once, on the GPU it copies */
        fprintf(x->f, ",\"copy_of\":%d", k->rank);
    if (k->kind != TASK_COMPUTE)
        fprintf(x->f, ",\"bytes\":%.0f", k->bytes);
    if (k->kind == TASK_TRANSFER)
        fprintf(x->f, ",\"to\":%d", k->peer);
    fputs("}}", x->f);
}

static void put_task(const trace_ctx *x, uint32_t t)
{
    put_task_as(x, t, x->g->tasks[t].rank);
}

/* The (rank, stream) cells' sources (src[cell], -1 none) as lists by source cell: *first
 * [cells + 1], *to the copying ranks. */
static void list_copies(const int *src, size_t cells, size_t ns, int n_ranks, int **first, int **to)
{
    *first = xcalloc(cells + 2, sizeof **first);
    for (int k = 0; k < n_ranks; k++)
        for (size_t s = 0; s < ns; s++)
            if (src[k * ns + s] >= 0)
                (*first)[(size_t)src[k * ns + s] * ns + s + 1]++;
    for (size_t i = 0; i < cells; i++)
        (*first)[i + 1] += (*first)[i];
    *to = xmalloc(((size_t)(*first)[cells] + 1) * sizeof **to);
    int *fill = xcalloc(cells + 1, sizeof *fill);
    for (int k = 0; k < n_ranks; k++)
        for (size_t s = 0; s < ns; s++) {
            int from = src[k * ns + s];
            if (from >= 0)
                (*to)[(*first)[(size_t)from * ns + s] + fill[(size_t)from * ns + s]++] = k;
        }
    free(fill);
}

/* Whether rank r takes part in task t without a task of its own: a stand-in member of its
 * collective's group or of a companion group, or the source of a companion pair of its send. */
static int takes_part(const exec_graph *g, uint32_t t, int r)
{
    const graph_task *k = &g->tasks[t];
    if (k->kind == TASK_TRANSFER) {
        const int32_t *pr;
        int n = graph_companions(g, t, &pr);
        for (int i = 0; i < n; i++)
            if (pr[2 * i] == r)
                return 1;
        return 0;
    }
    if (k->kind != TASK_COLLECTIVE)
        return 0;
    const graph_group *gr = &g->groups[g->colls[k->coll].group];
    for (uint32_t m = gr->tasked; m < gr->n; m++)
        if (g->group_ranks[gr->first + m] == r)
            return 1;
    const int32_t *comp;
    int n = graph_coll_companions(g, (uint32_t)k->coll, &comp);
    for (int i = 0; i < n; i++) {
        const graph_group *c = &g->groups[comp[i]];
        for (uint32_t m = 0; m < c->n; m++)
            if (g->group_ranks[c->first + m] == r)
                return 1;
    }
    return 0;
}

/* Which kept ranks draw copies of which rank's streams (trace_ctx.copy_first, copy_to,
 * part_first, part_to). */
static void plan_copies(trace_ctx *x, const compiled_plan *p)
{
    const exec_graph *g = x->g;
    size_t ns = (size_t)g->n_streams, cells = (size_t)g->n_ranks * ns;
    unsigned char *has = xcalloc(cells + 1, 1);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        has[(size_t)g->tasks[t].rank * ns + g->tasks[t].stream] = 1;
    int stages = 1;
    for (int k = 0; k < g->n_ranks; k++)
        if (p->stage_of_rank[k] + 1 > stages)
            stages = p->stage_of_rank[k] + 1;
    int *lowest = xmalloc(((size_t)stages * ns + 1) * sizeof *lowest); /* per (stage, stream) */
    for (size_t i = 0; i < (size_t)stages * ns; i++)
        lowest[i] = -1;
    for (int r = g->n_ranks - 1; r >= 0; r--)
        for (size_t s = 0; s < ns; s++)
            if (has[r * ns + s])
                lowest[(size_t)p->stage_of_rank[r] * ns + s] = r;
    int *src = xmalloc((cells + 1) * sizeof *src);   /* each (kept rank, stream): its source */
    int *part = xmalloc((cells + 1) * sizeof *part); /* the same when it has tasks of its own */
    for (int k = 0; k < g->n_ranks; k++)
        for (size_t s = 0; s < ns; s++) {
            /* its twin's stream (the rank whose timeline it follows), else the stage's first */
            int w = p->twin_of_rank ? p->twin_of_rank[k] : -1;
            int from = !x->keep_rank[k] ? -1
                       : w >= 0 && has[(size_t)w * ns + s]
                           ? w
                           : lowest[(size_t)p->stage_of_rank[k] * ns + s];
            int own = has[k * ns + s];
            src[k * ns + s] = own ? -1 : from;
            part[k * ns + s] = own && from != k ? from : -1;
        }
    list_copies(src, cells, ns, g->n_ranks, &x->copy_first, &x->copy_to);
    list_copies(part, cells, ns, g->n_ranks, &x->part_first, &x->part_to);
    free(part);
    free(src);
    free(lowest);
    free(has);
}

/* The first task on the transfer's peer that depends on it (earliest start, then lowest id),
 * or UINT32_MAX when there is none. */
static uint32_t consumer_of(const trace_ctx *x, uint32_t t)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
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
    const graph_task *k = &x->g->tasks[t];
    uint32_t s = consumer_of(x, t);
    if (s == UINT32_MAX || !task_kept(x, s))
        return;
    const graph_task *d = &x->g->tasks[s];
    fprintf(x->f,
            ",\n{\"ph\":\"s\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%u,\"pid\":%d,"
            "\"tid\":%d,\"ts\":%.3f}",
            t, k->rank, k->stream, x->r->end[t] * 1e6);
    fprintf(x->f,
            ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%u,"
            "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
            t, d->rank, d->stream, x->r->start[s] * 1e6);
}

/* Links with counters, grouped: links whose counters are identical point for point (the port
 * halves of one NVSwitch ring, the NICs of one pipeline send) share one track. */
typedef struct link_tracks {
    int *leader; /* [n_links]: the first link (in r->links order) of its group; -1: no counter */
    int *size;   /* [n_links]: a leader's group size */
} link_tracks;

typedef struct series_key {
    uint64_t hash;
    int link;
} series_key;

static uint64_t series_hash(const htae_link_stat *l)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the points' bytes */
    const unsigned char *p = (const unsigned char *)l->rate;
    for (size_t i = 0; i < (size_t)l->n_rate * sizeof *l->rate; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int by_hash_then_link(const void *pa, const void *pb)
{
    const series_key *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return a->link - b->link;
}

static int same_series(const htae_link_stat *a, const htae_link_stat *b)
{
    if (a->n_rate != b->n_rate)
        return 0;
    for (int i = 0; i < a->n_rate; i++)
        if (a->rate[i].t != b->rate[i].t || a->rate[i].rate != b->rate[i].rate)
            return 0;
    return 1;
}

/* Group r's links by their counters: hash, then compare within a run of equal hashes. */
static void link_tracks_build(const htae_result *r, link_tracks *lt)
{
    int n = r->n_links, k = 0;
    lt->leader = xmalloc((size_t)(n + 1) * sizeof *lt->leader);
    lt->size = xcalloc((size_t)n + 1, sizeof *lt->size);
    series_key *keys = xmalloc((size_t)(n + 1) * sizeof *keys);
    for (int i = 0; i < n; i++) {
        lt->leader[i] = -1;
        if (r->links[i].n_rate > 0)
            keys[k++] = (series_key){series_hash(&r->links[i]), i};
    }
    qsort(keys, (size_t)k, sizeof *keys, by_hash_then_link);
    for (int a = 0, b; a < k; a = b) {
        for (b = a; b < k && keys[b].hash == keys[a].hash; b++)
            ;
        for (int i = a; i < b; i++) { /* links in order: each joins the first alike before it */
            int me = keys[i].link, j = a;
            while (j < i && !same_series(&r->links[keys[j].link], &r->links[me]))
                j++;
            int lead = j < i ? lt->leader[keys[j].link] : me;
            lt->leader[me] = lead;
            lt->size[lead]++;
        }
    }
    free(keys);
}

static void link_tracks_free(link_tracks *lt)
{
    free(lt->leader);
    free(lt->size);
}

/* A link as the trace names it, its id and direction ("n0g0_nic up"), and `more` links alike
 * as " +more"; the caller frees it. */
static char *link_name(const htae_link_stat *l, int more)
{
    size_t n = strlen(l->name), cut = 0, size = n + 24; /* SimGrid's _UP / _DOWN, as a word */
    if (!strcmp(l->direction, "up") || !strcmp(l->direction, "down"))
        cut = strlen(l->direction) + 1;
    char *name = xmalloc(size);
    int w = snprintf(name, size, "%.*s%s%s", (int)(n - cut), l->name, cut ? " " : "",
                     cut ? l->direction : "");
    if (more > 0)
        snprintf(name + w, size - (size_t)w, " +%d", more);
    return name;
}

/* The process "links" (pid n_ranks, after the GPUs) and a counter track per group of links
 * alike: value "GB/s" (1e9 bytes/s) from each change point on (htae_rate_point). The counters
 * span the whole iteration, also under --trace-steps. */
static void put_link_counters(const trace_ctx *x, const link_tracks *lt)
{
    const htae_result *r = x->r;
    int pid = x->g->n_ranks, any = 0;
    for (int i = 0; i < r->n_links; i++)
        any |= lt->leader[i] >= 0;
    if (!any)
        return;
    fprintf(x->f,
            ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"links\"}}"
            ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,"
            "\"args\":{\"sort_index\":%d}}",
            pid, pid, pid);
    for (int i = 0; i < r->n_links; i++) {
        const htae_link_stat *l = &r->links[i];
        if (lt->leader[i] != i)
            continue;
        char *name = link_name(l, lt->size[i] - 1);
        for (int k = 0; k < l->n_rate; k++) {
            fputs(",\n{\"ph\":\"C\",\"name\":", x->f);
            put_json_string(x->f, name);
            fprintf(x->f, ",\"pid\":%d,\"ts\":%.3f,\"args\":{\"GB/s\":%.6g}}", pid,
                    l->rate[k].t * 1e6, l->rate[k].rate / 1e9);
        }
        free(name);
    }
}

/* "otherData" (the trace's metadata), when there are counters: "link_tracks", each counter
 * track's links by name. */
static void put_link_members(const trace_ctx *x, const link_tracks *lt)
{
    const htae_result *r = x->r;
    int first = 1;
    for (int i = 0; i < r->n_links; i++) {
        if (lt->leader[i] != i)
            continue;
        char *name = link_name(&r->links[i], lt->size[i] - 1);
        fputs(first ? ",\"otherData\":{\"link_tracks\":{\n" : ",\n", x->f);
        first = 0;
        put_json_string(x->f, name);
        fputs(":[", x->f);
        free(name);
        for (int j = i, sep = 0; j < r->n_links; j++)
            if (lt->leader[j] == i) {
                name = link_name(&r->links[j], 0);
                fputs(sep++ ? "," : "", x->f);
                put_json_string(x->f, name);
                free(name);
            }
        fputc(']', x->f);
    }
    if (!first)
        fputs("}}", x->f);
}

/* Chrome trace event format (Perfetto opens it): one process per GPU, one thread per stream.
 * Streamed with fprintf: a trace holds millions of events, too many for a cJSON tree. */
int out_run_trace(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                  const out_trace_filter *filter, ps_error *err)
{
    const exec_graph *g = p->graph;
    trace_ctx x = {.g = g,
                   .r = r,
                   .keep_rank = xcalloc((size_t)g->n_ranks, 1),
                   .steps = filter ? filter->steps : 0};
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
    link_tracks lt;
    link_tracks_build(r, &lt);
    put_metadata(&x, c, p);
    put_link_counters(&x, &lt);
    plan_copies(&x, p);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (x.steps <= 0 || k->micro < x.steps) { /* the folded GPUs' copies of it */
            size_t cell = (size_t)k->rank * (size_t)g->n_streams + k->stream;
            for (int i = x.copy_first[cell]; i < x.copy_first[cell + 1]; i++)
                put_task_as(&x, t, x.copy_to[i]);
            for (int i = x.part_first[cell]; i < x.part_first[cell + 1]; i++)
                if (takes_part(g, t, x.part_to[i]))
                    put_task_as(&x, t, x.part_to[i]);
        }
        if (!task_kept(&x, t))
            continue;
        put_task(&x, t);
        if (k->kind == TASK_TRANSFER && x.keep_rank[k->peer])
            put_flow(&x, t);
    }
    free(x.copy_first);
    free(x.copy_to);
    free(x.part_first);
    free(x.part_to);
    fputs("\n]", x.f);
    put_link_members(&x, &lt);
    fputs("}\n", x.f);
    link_tracks_free(&lt);
    free(x.keep_rank);
    if (fclose(x.f) != 0)
        return out_write_error(path, err);
    return 0;
}
