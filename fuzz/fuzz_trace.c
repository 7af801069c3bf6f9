/* fuzz_trace.c: libFuzzer harness for the trace reader of `protosim replay`: one Kineto trace
 * (JSON; gzip too, zlib reads both), every step, then its execution graph on 64 GPUs as replay
 * builds it (lanes, launches, stream waits, NCCL collectives), finalized (fuzz_trace_job). */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_trace_job(".json", data, size);
    return 0;
}
