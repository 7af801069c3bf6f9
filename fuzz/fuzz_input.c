/* fuzz_input.c: the harnesses' input file, one per process, rewritten for every input (the
 * loaders take paths; a file is how the command hands them their input too). */
#include "fuzz_input.h"

#include "../sim/base/graph.h"
#include "../workloads/trace/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char input_path[256];

static void remove_input(void)
{
    unlink(input_path);
}

/* Output the loaders print (merge's ranked table) is not what is checked: send it away
 * (the replay tests report on stderr). */
static void quiet_stdout(void)
{
    if (!freopen("/dev/null", "w", stdout))
        abort();
}

const char *fuzz_input_file(const char *suffix, const uint8_t *data, size_t size)
{
    if (!input_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(input_path, sizeof input_path, "%s/protosim-fuzz-%ld%s", dir ? dir : "/tmp",
                 (long)getpid(), suffix);
        atexit(remove_input);
        quiet_stdout();
    }
    FILE *f = fopen(input_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
    return input_path;
}

void fuzz_trace_job(const char *suffix, const uint8_t *data, size_t size)
{
    fuzz_replay_job(fuzz_input_file(suffix, data, size), NULL);
}

void fuzz_replay_job(const char *trace, const char *et)
{
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load_et(&trace, et ? &et : NULL, 1, 0, &job, &err))
        return;
    exec_graph *g = NULL;
    uint32_t **task_of = NULL;
    if (!trace_job_graph(&job, 64, &g, &task_of, &err)) {
        trace_tasks_free(&job, task_of);
        graph_free(g);
    }
    trace_job_free(&job);
}
