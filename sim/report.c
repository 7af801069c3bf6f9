/* report.c: summaries from the executor's timeline: the busiest GPU's breakdown by interval
 * arithmetic on its streams, the text and JSON reports, and the Chrome trace. */
#include "report.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct interval {
    double a, b;
} interval;

static int by_start(const void *x, const void *y)
{
    const interval *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge overlapping intervals in place; returns the new count. */
static int merge(interval *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, by_start);
    int m = 0;
    for (int i = 1; i < n; i++) {
        if (v[i].a <= v[m].b) {
            if (v[i].b > v[m].b)
                v[m].b = v[i].b;
        } else {
            v[++m] = v[i];
        }
    }
    return m + 1;
}

static double total(const interval *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i].b - v[i].a;
    return s;
}

/* Length of the part of union `u` that lies inside union `w` (both merged). */
static double overlap(const interval *u, int nu, const interval *w, int nw)
{
    double s = 0;
    int j = 0;
    for (int i = 0; i < nu; i++) {
        while (j < nw && w[j].b <= u[i].a)
            j++;
        for (int k = j; k < nw && w[k].a < u[i].b; k++) {
            double a = u[i].a > w[k].a ? u[i].a : w[k].a;
            double b = u[i].b < w[k].b ? u[i].b : w[k].b;
            if (b > a)
                s += b - a;
        }
    }
    return s;
}

/* Busy time inside [0, t] of a merged union. */
static double busy_before(const interval *u, int n, double t)
{
    double s = 0;
    for (int i = 0; i < n && u[i].a < t; i++)
        s += (u[i].b < t ? u[i].b : t) - u[i].a;
    return s;
}

static void breakdown(const compiled_plan *p, const htae_result *r, int rank, report_summary *s)
{
    const htae_graph *g = p->graph;
    int nc = 0, nm = 0;
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        int n = (int)(g->stream_first[i + 1] - g->stream_first[i]);
        if (st == STREAM_COMPUTE)
            nc += n;
        else
            nm += n;
    }
    interval *comp = malloc((size_t)(nc + 1) * sizeof *comp);
    interval *comm = malloc((size_t)(nm + 1) * sizeof *comm);
    nc = nm = 0;
    double last_bwd = 0;
    memset(s->comm_s, 0, sizeof s->comm_s);
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++) {
            uint32_t t = g->stream_tasks[k];
            interval iv = {r->start[t], r->end[t]};
            assert(iv.b >= iv.a);
            if (st == STREAM_COMPUTE) {
                comp[nc++] = iv;
                if (g->tasks[t].category == CAT_BACKWARD && iv.b > last_bwd)
                    last_bwd = iv.b;
            } else {
                comm[nm++] = iv;
                s->comm_s[g->tasks[t].category] += iv.b - iv.a;
            }
        }
    }
    nc = merge(comp, nc);
    nm = merge(comm, nm);
    double T = r->makespan;
    s->compute_s = total(comp, nc);
    s->exposed_comm_s = total(comm, nm) - overlap(comm, nm, comp, nc);

    /* idle before the last backward is pipeline bubble when there is a pipeline */
    interval *all = malloc((size_t)(nc + nm + 1) * sizeof *all);
    memcpy(all, comp, (size_t)nc * sizeof *all);
    memcpy(all + nc, comm, (size_t)nm * sizeof *all);
    int na = merge(all, nc + nm);
    double idle_total = T - total(all, na);
    double idle_early = last_bwd - busy_before(all, na, last_bwd);
    s->bubble_s = p->pp > 1 ? idle_early : 0.0;
    s->idle_s = idle_total - s->bubble_s;
    if (s->idle_s < 0) /* rounding only */
        s->idle_s = 0;
    free(all);
    free(comp);
    free(comm);
}

static void top_labels(const compiled_plan *p, const htae_result *r, int rank, report_summary *s)
{
    const htae_graph *g = p->graph;
    double *by = calloc((size_t)g->n_labels + 1, sizeof *by);
    for (int st = 0; st < STREAM_COUNT; st++) {
        uint32_t i = (uint32_t)rank * STREAM_COUNT + (uint32_t)st;
        for (uint32_t k = g->stream_first[i]; k < g->stream_first[i + 1]; k++) {
            uint32_t t = g->stream_tasks[k];
            by[g->tasks[t].label] += r->end[t] - r->start[t];
        }
    }
    s->n_top = 0;
    for (int n = 0; n < REPORT_TOP; n++) {
        int best = -1;
        for (int l = 0; l < g->n_labels; l++)
            if (by[l] > 0 && (best < 0 || by[l] > by[best]))
                best = l;
        if (best < 0)
            break;
        s->top[s->n_top].label = best;
        s->top[s->n_top++].seconds = by[best];
        by[best] = 0;
    }
    free(by);
}

void report_summarize(const compiled_plan *p, const htae_result *r, report_summary *out)
{
    const htae_graph *g = p->graph;
    memset(out, 0, sizeof *out);
    double T = r->makespan;
    out->iteration_s = T;
    out->samples_per_s = T > 0 ? p->samples_per_iter / T : 0;
    out->tokens_per_s = T > 0 ? p->tokens_per_iter / T : 0;
    out->mfu = T > 0 ? p->model_flops_per_iter / (T * p->gpus * p->peak_flops_per_gpu) : 0;

    double *busy = calloc((size_t)g->n_ranks, sizeof *busy);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE)
            busy[g->tasks[t].rank] += r->end[t] - r->start[t];
    for (int k = 1; k < g->n_ranks; k++)
        if (busy[k] > busy[out->busiest_rank] + 1e-12)
            out->busiest_rank = k;
    free(busy);

    for (int k = 0; k < p->gpus; k++)
        if (p->memory[k].total > out->peak_memory_bytes) {
            out->peak_memory_bytes = p->memory[k].total;
            out->peak_memory_rank = k;
        }
    out->memory_capacity = p->memory_capacity;
    breakdown(p, r, out->busiest_rank, out);
    top_labels(p, r, out->busiest_rank, out);
}

static const char *human_time(double s, char *buf, size_t n)
{
    if (s >= 1.0)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

void report_print_text(FILE *out, const strategy *s, const cluster *c, const compiled_plan *p,
                       const htae_result *r, const report_summary *sum)
{
    char b1[32];
    const double GiB = 1073741824.0;
    fprintf(out, "protosim: %s on %s\n", s->file, c->file);
    fprintf(out, "  model        %s: %d layers, hidden %d, %d heads, seq %d, %.2f B params\n",
            s->model.name, s->model.layers, s->model.hidden, s->model.heads, s->model.seq,
            p->params_total / 1e9);
    fprintf(out, "  plan         %d GPUs = TP %d x PP %d x DP %d; %s, %d micro-batches of %d",
            p->gpus, p->tp, p->pp, p->dp, schedule_name(s->schedule), p->micro_batches,
            s->micro_batch);
    if (p->chunks > 1)
        fprintf(out, ", %d virtual stages", p->chunks);
    fprintf(out, "; %s; recompute %s%s%s\n", precision_name(s->precision),
            recompute_name(s->recompute), s->sequence_parallel ? "; sequence parallel" : "",
            s->zero ? "; ZeRO" : "");
    fprintf(out, "  iteration    %s\n", human_time(sum->iteration_s, b1, sizeof b1));
    fprintf(out, "  throughput   %.2f samples/s, %.0f tokens/s\n", sum->samples_per_s,
            sum->tokens_per_s);
    fprintf(out, "  MFU          %.1f%%\n", 100.0 * sum->mfu);
    fprintf(out, "  memory       %.2f GiB peak (GPU %d) of %.2f GiB%s\n",
            sum->peak_memory_bytes / GiB, sum->peak_memory_rank, sum->memory_capacity / GiB,
            sum->peak_memory_bytes > sum->memory_capacity ? "  ** does not fit **" : "");
    double T = sum->iteration_s;
    fprintf(out, "  breakdown    (GPU %d, the busiest)\n", sum->busiest_rank);
    fprintf(out, "    compute         %12s  %5.1f%%\n", human_time(sum->compute_s, b1, sizeof b1),
            pct(sum->compute_s, T));
    fprintf(out, "    exposed comm    %12s  %5.1f%%\n",
            human_time(sum->exposed_comm_s, b1, sizeof b1), pct(sum->exposed_comm_s, T));
    fprintf(out, "    pipeline bubble %12s  %5.1f%%\n", human_time(sum->bubble_s, b1, sizeof b1),
            pct(sum->bubble_s, T));
    fprintf(out, "    idle            %12s  %5.1f%%\n", human_time(sum->idle_s, b1, sizeof b1),
            pct(sum->idle_s, T));
    if (sum->n_top) {
        fprintf(out, "  top items    (GPU %d)\n", sum->busiest_rank);
        for (int i = 0; i < sum->n_top; i++)
            fprintf(out, "    %-40s %12s\n", p->graph->labels[sum->top[i].label],
                    human_time(sum->top[i].seconds, b1, sizeof b1));
    }
    fprintf(out, "  simulator    %u tasks, %llu activities in %.3f s (%.0f activities/s)",
            p->graph->n_tasks, (unsigned long long)r->activities, r->wall_s,
            r->wall_s > 0 ? (double)r->activities / r->wall_s : 0.0);
    if (p->simulated_replicas < p->dp)
        fprintf(out, "; 1 of %d data-parallel replicas simulated (folded)", p->dp);
    fputc('\n', out);
}

static int write_error(const char *path, ps_error *err)
{
    return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
}

int report_write_json(const char *path, const strategy *s, const cluster *c, const compiled_plan *p,
                      const htae_result *r, const report_summary *sum, ps_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "strategy", s->file);
    cJSON_AddStringToObject(root, "cluster", c->file);
    cJSON_AddStringToObject(root, "workload", s->model.name);
    cJSON_AddNumberToObject(root, "iteration_time_s", sum->iteration_s);
    cJSON_AddNumberToObject(root, "samples_per_s", sum->samples_per_s);
    cJSON_AddNumberToObject(root, "tokens_per_s", sum->tokens_per_s);
    cJSON_AddNumberToObject(root, "mfu", sum->mfu);
    cJSON_AddNumberToObject(root, "peak_memory_bytes", sum->peak_memory_bytes);
    cJSON_AddNumberToObject(root, "memory_capacity_bytes", sum->memory_capacity);
    cJSON_AddBoolToObject(root, "fits_in_memory", sum->peak_memory_bytes <= sum->memory_capacity);
    cJSON_AddNumberToObject(root, "gpus", p->gpus);

    cJSON *plan = cJSON_AddObjectToObject(root, "plan");
    cJSON_AddNumberToObject(plan, "tensor", p->tp);
    cJSON_AddNumberToObject(plan, "pipeline", p->pp);
    cJSON_AddNumberToObject(plan, "data", p->dp);
    cJSON_AddNumberToObject(plan, "virtual_stages", p->chunks);
    cJSON_AddNumberToObject(plan, "micro_batches", p->micro_batches);
    cJSON_AddNumberToObject(plan, "micro_batch", s->micro_batch);
    cJSON_AddNumberToObject(plan, "global_batch", s->global_batch);
    cJSON_AddStringToObject(plan, "schedule", schedule_name(s->schedule));
    cJSON_AddStringToObject(plan, "recompute", recompute_name(s->recompute));
    cJSON_AddStringToObject(plan, "precision", precision_name(s->precision));
    cJSON_AddNumberToObject(plan, "zero", s->zero);
    cJSON_AddBoolToObject(plan, "sequence_parallel", s->sequence_parallel);

    cJSON *b = cJSON_AddObjectToObject(root, "breakdown");
    cJSON_AddNumberToObject(b, "gpu", sum->busiest_rank);
    cJSON_AddNumberToObject(b, "compute_s", sum->compute_s);
    cJSON_AddNumberToObject(b, "exposed_comm_s", sum->exposed_comm_s);
    cJSON_AddNumberToObject(b, "bubble_s", sum->bubble_s);
    cJSON_AddNumberToObject(b, "idle_s", sum->idle_s);
    cJSON *cs = cJSON_AddObjectToObject(b, "comm_busy_s");
    for (int k = CAT_TP_COMM; k <= CAT_DP_COMM; k++)
        cJSON_AddNumberToObject(cs, task_category_name(k), sum->comm_s[k]);

    const memory_estimate *me = &p->memory[sum->peak_memory_rank];
    cJSON *mem = cJSON_AddObjectToObject(root, "memory");
    cJSON_AddNumberToObject(mem, "gpu", sum->peak_memory_rank);
    cJSON_AddNumberToObject(mem, "weights_bytes", me->weights);
    cJSON_AddNumberToObject(mem, "gradients_bytes", me->gradients);
    cJSON_AddNumberToObject(mem, "optimizer_bytes", me->optimizer);
    cJSON_AddNumberToObject(mem, "activations_bytes", me->activations);
    cJSON_AddNumberToObject(mem, "buffers_bytes", me->buffers);

    cJSON *top = cJSON_AddArrayToObject(root, "top_items");
    for (int i = 0; i < sum->n_top; i++) {
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "name", p->graph->labels[sum->top[i].label]);
        cJSON_AddNumberToObject(it, "seconds", sum->top[i].seconds);
        cJSON_AddItemToArray(top, it);
    }

    cJSON *sim = cJSON_AddObjectToObject(root, "simulator");
    cJSON_AddNumberToObject(sim, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(sim, "activities", (double)r->activities);
    cJSON_AddNumberToObject(sim, "tasks", p->graph->n_tasks);
    cJSON_AddNumberToObject(sim, "simulated_replicas", p->simulated_replicas);
    cJSON_AddNumberToObject(sim, "activities_per_s", r->wall_s > 0 ? r->activities / r->wall_s : 0);

    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(text);
        return write_error(path, err);
    }
    fputs(text, f);
    fputc('\n', f);
    free(text);
    if (fclose(f) != 0)
        return write_error(path, err);
    return 0;
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

/* Chrome trace event format (Perfetto opens it): one process per GPU, one thread per stream.
 * Streamed with fprintf: a trace holds millions of events, too many for a cJSON tree. */
int report_write_trace(const char *path, const cluster *c, const compiled_plan *p,
                       const htae_result *r, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return write_error(path, err);
    const htae_graph *g = p->graph;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    int first = 1;
    for (int k = 0; k < g->n_ranks; k++) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":",
                first ? "" : ",\n", k);
        first = 0;
        char name[160];
        snprintf(name, sizeof name, "GPU %d (%s, stage %d)", k, c->host_names[k],
                 p->stage_of_rank[k]);
        put_json_string(f, name);
        fputs("}}", f);
        fprintf(f,
                ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,"
                "\"args\":{\"sort_index\":%d}}",
                k, k);
        for (int s = 0; s < STREAM_COUNT; s++)
            fprintf(f,
                    ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"%s\"}}",
                    k, s, stream_name(s));
    }
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const htae_task *k = &g->tasks[t];
        fputs(",\n{\"ph\":\"X\",\"name\":", f);
        put_json_string(f, g->labels[k->label]);
        fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
                task_category_name(k->category), k->rank, k->stream, r->start[t] * 1e6,
                (r->end[t] - r->start[t]) * 1e6);
        fputs(",\"args\":{", f);
        fprintf(f, "\"micro_batch\":%d", k->micro);
        if (k->kind != TASK_COMPUTE)
            fprintf(f, ",\"bytes\":%.0f", k->bytes);
        if (k->kind == TASK_TRANSFER)
            fprintf(f, ",\"to\":%d", k->peer);
        fputs("}}", f);
    }
    fputs("\n]}\n", f);
    if (fclose(f) != 0)
        return write_error(path, err);
    return 0;
}
