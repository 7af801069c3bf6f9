/* out_trace.c: the Chrome trace event format of a simulated run (Perfetto opens it): one
 * process per GPU, one thread per stream, one complete event per task. */
#include "output.h"

#include <stdio.h>

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
int out_run_trace(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                  ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return out_write_error(path, err);
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
        return out_write_error(path, err);
    return 0;
}
