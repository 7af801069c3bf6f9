/* fuzz_workload.c: libFuzzer harness for the workload (model file) loader, then the checks
 * workload_build relies on. */
#include "fuzz_input.h"
#include "../sim/base/vocab.h"
#include "../workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    workload_model m;
    if (workload_model_load(path, ps_data_dir(), &m, &err))
        return 0;
    workload_model_check(&m, 1, &err);
    return 0;
}
