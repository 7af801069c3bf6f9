/* fuzz_sweep.c: libFuzzer harness for the sweep loader and the enumerator as `protosim sweep`
 * calls them: on a generated 64-GPU cluster (8 DGX A100 nodes, loaded once for every input),
 * the DLRM tables' proposals first (sweep_tables_propose), then the enumeration; a sweep whose
 * constraints.gpus is another count is enumerated on that count without proposals. */
#include "fuzz_input.h"
#include "../sim/base/vocab.h"
#include "../strategies/sweep_plan.h"
#include "../strategies/sweep_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The cluster every input runs on: SimGrid loads one platform per process. */
static const cluster *fuzz_cluster(void)
{
    static cluster c;
    static int loaded;
    if (loaded)
        return &c;
    char path[] = "/tmp/protosim_fuzz_sweep_XXXXXX.xml";
    int fd = mkstemps(path, 4);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    ps_error err;
    ps_error_clear(&err);
    cluster_gen_opts o = {.nodes = 8};
    if (!f || cluster_generate("dgx-a100", &o, f, &err))
        abort();
    fclose(f);
    cluster_engine_start();
    if (cluster_load(path, ps_data_dir(), &c, &err))
        abort();
    unlink(path);
    loaded = 1;
    return &c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const cluster *c = fuzz_cluster();
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    sweep_spec spec;
    if (sweep_spec_load(path, ps_data_dir(), &spec, &err))
        return 0;
    int gpus = spec.gpus ? spec.gpus : c->n_gpus;
    if (gpus == c->n_gpus && sweep_tables_propose(&spec, c, &err)) {
        sweep_spec_free(&spec);
        return 0;
    }
    sweep_plan *plans = NULL;
    int n = 0;
    if (!sweep_enumerate(&spec, gpus, &plans, &n, &err))
        free(plans);
    sweep_spec_free(&spec);
    return 0;
}
