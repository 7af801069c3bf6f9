/* out_replay.c: a replay's outputs: the text summary, the JSON report, the host-overhead table
 * (--overheads) and the Perfetto timeline (CPU threads and GPU streams as tracks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "output.h"

void out_replay_text(FILE *out, const out_replay *x)
{
    const replay_summary *s = x->sum;
    const trace_rank *r = &x->job->ranks[s->rank];
    fprintf(out, "replay of %s (rank %d of %d, %d step%s%s) on %s (%d GPUs)\n", r->file, r->rank,
            x->job->world_size, s->steps, s->steps == 1 ? "" : "s",
            r->chakra      ? ", a Chakra execution trace"
            : r->has_steps ? ""
                           : ", no ProfilerStep: the whole window",
            x->c->file, x->c->n_gpus);
    double err = s->measured_step_s > 0 ? s->iteration_s / s->measured_step_s - 1 : 0;
    if (r->chakra) /* nothing measured: the prediction alone */
        fprintf(out, "  measured step        none (Chakra traces carry no measured times)\n");
    else
        fprintf(out, "  measured step   %10.3f ms\n", s->measured_step_s * 1e3);
    if (x->n_what_if > 0) {
        fprintf(out, "  predicted step  %10.3f ms unchanged (%+.1f%%)\n", x->unchanged_s * 1e3,
                100 * (s->measured_step_s > 0 ? x->unchanged_s / s->measured_step_s - 1 : 0));
        for (int i = 0; i < x->n_what_if; i++) {
            const whatif_effect *e = &x->effects[i];
            fprintf(out, "  what-if %-20s %d %s", x->what_if[i].text, e->kernels,
                    x->what_if[i].kind == WHATIF_NETWORK ? "links" : "kernels");
            if (x->what_if[i].kind != WHATIF_NETWORK)
                fprintf(out, " %.3f -> %.3f ms", e->kernel_s_before * 1e3, e->kernel_s_after * 1e3);
            else if (e->kernel_s_before > 0)
                fprintf(out, ", unmodelled NCCL kernels %.3f -> %.3f ms", e->kernel_s_before * 1e3,
                        e->kernel_s_after * 1e3);
            if (e->launches_removed)
                fprintf(out, ", %d launches (%.3f ms) removed", e->launches_removed,
                        e->host_s_removed * 1e3);
            fputc('\n', out);
        }
        fprintf(out, "  predicted step  %10.3f ms with the what-ifs (%+.1f%%)\n",
                s->iteration_s * 1e3, 100 * (s->iteration_s / x->unchanged_s - 1));
    } else {
        if (r->chakra)
            fprintf(out, "  predicted step  %10.3f ms\n", s->iteration_s * 1e3);
        else
            fprintf(out, "  predicted step  %10.3f ms (%+.1f%%)\n", s->iteration_s * 1e3,
                    100 * err);
    }
    if (r->et_nodes > 0)
        fprintf(out,
                "  execution trace %d of %d ops linked, %d dependencies across threads from "
                "their tensors\n",
                r->et_linked, r->et_nodes, r->et_edges);
    if (r->n_backlog > 0)
        fprintf(out,
                "  backlog         %d GPU events queued before the trace began (no launch "
                "recorded), replayed from its start\n",
                r->n_backlog);
    fprintf(out, "  per step: GPU active %.3f ms, GPU idle %.3f ms, communication %.3f ms\n",
            s->gpu_active_s * 1e3, s->gpu_idle_s * 1e3, s->comm_s * 1e3);
    fputs("  host overheads per step (ms):", out);
    for (int k = 0; k < TRACE_OVH_COUNT; k++)
        fprintf(out, " %s %.3f", enum_name(trace_overhead_names, k), s->overheads[k] * 1e3);
    fputc('\n', out);
    report_path_item top[REPORT_TOP];
    int n = report_critical_path_top(x->path, top, REPORT_TOP);
    if (n > 0)
        fputs("  critical path, top items:\n", out);
    for (int i = 0; i < n; i++)
        fprintf(out, "    %-4s %9.3f ms  %.90s\n", top[i].kind, top[i].seconds * 1e3, top[i].name);
}

static cJSON *overheads_json(const double *s)
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < TRACE_OVH_COUNT; k++)
        cJSON_AddNumberToObject(o, enum_name(trace_overhead_names, k), s[k]);
    return o;
}

int out_replay_json(const char *path, const out_replay *x, ps_error *err)
{
    const replay_summary *s = x->sum;
    cJSON *root = cJSON_CreateObject();
    cJSON *traces = cJSON_AddArrayToObject(root, "traces");
    for (int i = 0; i < x->job->n_ranks; i++)
        cJSON_AddItemToArray(traces, cJSON_CreateString(x->job->ranks[i].file));
    cJSON_AddStringToObject(root, "cluster", x->c->file);
    cJSON_AddNumberToObject(root, "world_size", x->job->world_size);
    cJSON_AddNumberToObject(root, "rank", x->job->ranks[s->rank].rank);
    cJSON_AddNumberToObject(root, "iteration_time_s", s->iteration_s);
    const trace_rank *tr = &x->job->ranks[s->rank];
    if (tr->chakra) /* a Chakra trace measures nothing */
        cJSON_AddNullToObject(root, "measured_step_s");
    else
        cJSON_AddNumberToObject(root, "measured_step_s", s->measured_step_s);
    cJSON_AddNumberToObject(root, "steps", s->steps);
    if (tr->et_nodes > 0) {
        cJSON *et = cJSON_AddObjectToObject(root, "execution_trace");
        cJSON_AddNumberToObject(et, "nodes", tr->et_nodes);
        cJSON_AddNumberToObject(et, "linked", tr->et_linked);
        cJSON_AddNumberToObject(et, "edges", tr->et_edges);
    }
    cJSON *pred = cJSON_AddArrayToObject(root, "predicted_steps_s");
    cJSON *meas = cJSON_AddArrayToObject(root, "measured_steps_s");
    for (int k = 0; k < s->steps; k++) {
        cJSON_AddItemToArray(pred, cJSON_CreateNumber(s->predicted[k]));
        cJSON_AddItemToArray(
            meas, tr->chakra ? cJSON_CreateNull()
                             : cJSON_CreateNumber(tr->measured_step[k + tr->first_reported]));
    }
    cJSON *b = cJSON_AddObjectToObject(root, "breakdown");
    cJSON_AddNumberToObject(b, "gpu_active_s", s->gpu_active_s);
    cJSON_AddNumberToObject(b, "gpu_idle_s", s->gpu_idle_s);
    cJSON_AddNumberToObject(b, "comm_s", s->comm_s);
    cJSON_AddItemToObject(b, "overheads", overheads_json(s->overheads));
    cJSON *cp = cJSON_AddArrayToObject(root, "critical_path");
    for (int i = 0; i < x->path->n; i++) {
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "name", x->path->items[i].name);
        cJSON_AddStringToObject(it, "kind", x->path->items[i].kind);
        cJSON_AddNumberToObject(it, "seconds", x->path->items[i].seconds);
        cJSON_AddItemToArray(cp, it);
    }
    cJSON *wi = cJSON_AddArrayToObject(root, "what_if");
    for (int i = 0; i < x->n_what_if; i++) {
        const whatif_effect *e = &x->effects[i];
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "spec", x->what_if[i].text);
        cJSON_AddNumberToObject(it, x->what_if[i].kind == WHATIF_NETWORK ? "links" : "kernels",
                                e->kernels);
        cJSON_AddNumberToObject(it, "launches_removed", e->launches_removed);
        cJSON_AddNumberToObject(it, "kernel_s_before", e->kernel_s_before);
        cJSON_AddNumberToObject(it, "kernel_s_after", e->kernel_s_after);
        cJSON_AddNumberToObject(it, "host_s_removed", e->host_s_removed);
        cJSON_AddItemToArray(wi, it);
    }
    if (x->n_what_if > 0)
        cJSON_AddNumberToObject(root, "iteration_time_unchanged_s", x->unchanged_s);
    cJSON *sim = cJSON_AddObjectToObject(root, "simulator");
    cJSON_AddNumberToObject(sim, "wall_s", x->res->wall_s);
    cJSON_AddNumberToObject(sim, "tasks", x->graph->n_tasks);
    cJSON_AddNumberToObject(sim, "inferred_stream_waits", x->job->ranks[s->rank].n_inferred);
    cJSON_AddNumberToObject(sim, "blocked_calls", x->job->ranks[s->rank].n_blocked);
    cJSON_AddNumberToObject(sim, "backlog_events", x->job->ranks[s->rank].n_backlog);
    cJSON_AddNumberToObject(sim, "thread_waits", x->job->ranks[s->rank].n_thread_waits);
    cJSON_AddNumberToObject(sim, "thread_wakes", x->job->ranks[s->rank].n_thread_wakes);
    return out_json_file(path, root, err);
}

int out_replay_overheads(const char *path, const out_replay *x, ps_error *err)
{
    const trace_job *j = x->job;
    int rank = x->sum->rank, n;
    replay_op_overheads *v = report_replay_overheads(j, rank, &n);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "trace", j->ranks[rank].file);
    cJSON_AddStringToObject(root, "unit", "seconds per step");
    cJSON_AddNumberToObject(root, "steps", x->sum->steps);
    cJSON_AddItemToObject(root, "total", overheads_json(x->sum->overheads));
    cJSON *per = cJSON_AddArrayToObject(root, "per_step");
    const trace_rank *tr = &j->ranks[rank];
    int steps = tr->n_steps;
    double *by = xcalloc((size_t)steps * TRACE_OVH_COUNT, sizeof *by);
    for (uint32_t k = 0; k < tr->n_ops; k++)
        if ((tr->ops[k].kind == TRACE_CPU || tr->ops[k].kind == TRACE_RUNTIME) &&
            tr->ops[k].overhead < TRACE_OVH_COUNT)
            by[tr->ops[k].step * TRACE_OVH_COUNT + tr->ops[k].overhead] += tr->ops[k].seconds;
    for (int s = tr->first_reported; s < steps; s++)
        cJSON_AddItemToArray(per, overheads_json(by + s * TRACE_OVH_COUNT));
    free(by);
    cJSON *ops = cJSON_AddArrayToObject(root, "ops");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", v[i].name >= 0 ? j->names[v[i].name] : "(thread end)");
        cJSON_AddNumberToObject(o, "count", v[i].count);
        cJSON_AddNumberToObject(o, "runtime_calls", v[i].launches);
        for (int k = 0; k < TRACE_OVH_COUNT; k++)
            cJSON_AddNumberToObject(o, enum_name(trace_overhead_names, k), v[i].s[k]);
        cJSON_AddItemToArray(ops, o);
    }
    free(v);
    return out_json_file(path, root, err);
}

static void put_string(FILE *f, const char *s)
{
    cJSON *str = cJSON_CreateString(s);
    char *t = cJSON_PrintUnformatted(str);
    fputs(t, f);
    free(t);
    cJSON_Delete(str);
}

/* The timeline: a process per traced rank, a track per stream (CPU threads, GPU streams). */
int out_replay_trace(const char *path, const out_replay *x, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return out_write_error(path, err);
    const exec_graph *g = x->graph;
    unsigned char *traced = xcalloc((size_t)g->n_ranks, 1);
    for (int i = 0; i < x->job->n_ranks; i++)
        traced[x->job->ranks[i].rank] = 1;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    int first = 1;
    for (int r = 0; r < g->n_ranks; r++) {
        if (!traced[r])
            continue;
        fprintf(f,
                "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
                "\"rank %d (%s)\"}}",
                first ? "" : ",\n", r, r, x->c->host_names[r]);
        first = 0;
        for (int s = 0; s < g->n_streams; s++)
            fprintf(f,
                    ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"%s\"}}",
                    r, s, graph_stream_name(g, s));
    }
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (!traced[k->rank])
            continue;
        fputs(",\n{\"ph\":\"X\",\"name\":", f);
        put_string(f, g->labels[k->label]);
        fprintf(f,
                ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"step\":%d}}",
                task_category_name(k->category), k->rank, k->stream, x->res->start[t] * 1e6,
                (x->res->end[t] - x->res->start[t]) * 1e6, k->micro);
    }
    fputs("\n]}\n", f);
    free(traced);
    if (fclose(f) != 0)
        return out_write_error(path, err);
    return 0;
}
