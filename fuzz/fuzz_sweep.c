/* fuzz_sweep.c: libFuzzer harness for the sweep loader and the enumerator as `protosim sweep`
 * calls them, on constraints.gpus GPUs or, without the constraint, 64 (a cluster's count). */
#include "fuzz_input.h"
#include "../sim/base/vocab.h"
#include "../strategies/sweep_plan.h"
#include "../strategies/sweep_spec.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    sweep_spec spec;
    if (sweep_spec_load(path, ps_data_dir(), &spec, &err))
        return 0;
    sweep_plan *plans = NULL;
    int n = 0;
    if (!sweep_enumerate(&spec, spec.gpus ? spec.gpus : 64, &plans, &n, &err))
        free(plans);
    sweep_spec_free(&spec);
    return 0;
}
