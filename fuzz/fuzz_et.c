/* fuzz_et.c: libFuzzer harness for the execution-trace reader of `replay --et`
 * (workloads/trace/trace_et.c): the input is the ET, linked to the hand-written Kineto trace
 * tests/data/et/threads.json (under PROTOSIM_DATA_DIR), then the job's execution graph built and
 * finalized (fuzz_replay_job). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char kineto[1024];
    if (!kineto[0]) {
        const char *root = getenv("PROTOSIM_DATA_DIR");
        snprintf(kineto, sizeof kineto, "%s/tests/data/et/threads.json", root ? root : ".");
    }
    fuzz_replay_job(kineto, fuzz_input_file(".json", data, size));
    return 0;
}
