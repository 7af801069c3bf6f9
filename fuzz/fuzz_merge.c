/* fuzz_merge.c: libFuzzer harness for the merge reader as `protosim merge` calls it: one shard
 * file, default options (the ranked table goes to stdout, sent to /dev/null). */
#include "fuzz_input.h"
#include "../cli/sweep_run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".json", data, size);
    sweep_options o;
    sweep_default_options(&o);
    o.progress = 0;
    ps_error err;
    ps_error_clear(&err);
    sweep_merge(&path, 1, &o, &err);
    return 0;
}
