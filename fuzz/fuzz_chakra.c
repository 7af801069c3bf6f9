/* fuzz_chakra.c: libFuzzer harness for the Chakra execution-trace reader of `protosim replay`
 * (workloads/trace/trace_chakra.c): one rank's file (protobuf messages, each behind its varint
 * length; gzip too), then its execution graph on 64 GPUs as replay builds it, finalized. */
#include "fuzz_input.h"
#include "../sim/base/graph.h"
#include "../workloads/trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".et", data, size);
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load(&path, 1, 0, &job, &err))
        return 0;
    exec_graph *g = NULL;
    uint32_t **task_of = NULL;
    if (!trace_job_graph(&job, 64, &g, &task_of, &err)) {
        trace_tasks_free(&job, task_of);
        graph_free(g);
    }
    trace_job_free(&job);
    return 0;
}
