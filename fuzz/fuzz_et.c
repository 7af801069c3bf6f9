/* fuzz_et.c: libFuzzer harness for the execution-trace reader of `replay --et`
 * (workloads/trace/trace_et.c): the input is the ET, linked to the hand-written Kineto trace
 * tests/data/et/threads.json (under PROTOSIM_DATA_DIR), then the job's execution graph built and
 * finalized. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "../sim/base/graph.h"
#include "../workloads/trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char kineto[1024];
    if (!kineto[0]) {
        const char *root = getenv("PROTOSIM_DATA_DIR");
        snprintf(kineto, sizeof kineto, "%s/tests/data/et/threads.json", root ? root : ".");
    }
    const char *et = fuzz_input_file(".json", data, size), *trace = kineto;
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load_et(&trace, &et, 1, 0, &job, &err))
        return 0;
    exec_graph *g = NULL;
    uint32_t **task_of = NULL;
    if (!trace_job_graph(&job, 4, &g, &task_of, &err)) {
        trace_tasks_free(&job, task_of);
        graph_free(g);
    }
    trace_job_free(&job);
    return 0;
}
