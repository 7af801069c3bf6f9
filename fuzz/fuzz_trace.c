/* fuzz_trace.c: libFuzzer harness for the trace reader of `protosim replay`: one Kineto trace
 * (JSON; gzip too, zlib reads both), every step. */
#include "fuzz_input.h"
#include "../workloads/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".json", data, size);
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load(&path, 1, 0, &job, &err))
        return 0;
    trace_job_free(&job);
    return 0;
}
