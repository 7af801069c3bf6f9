/* fuzz_strategy.c: libFuzzer harness for the strategy loader as `protosim run` calls it
 * (strategy_load with the bundled data directory), then the checks before compilation. */
#include "fuzz_input.h"
#include "../sim/base/vocab.h"
#include "../strategies/strategy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    strategy s;
    if (strategy_load(path, ps_data_dir(), &s, &err))
        return 0;
    if (!strategy_validate(&s, &err))
        strategy_check_gpus(&s, 64, &err);
    strategy_free(&s);
    return 0;
}
