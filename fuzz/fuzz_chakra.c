/* fuzz_chakra.c: libFuzzer harness for the Chakra execution-trace reader of `protosim replay`
 * (workloads/trace/trace_chakra.c): one rank's file (protobuf messages, each behind its varint
 * length; gzip too), then its execution graph on 64 GPUs as replay builds it, finalized
 * (fuzz_trace_job). */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_trace_job(".et", data, size);
    return 0;
}
