/* fuzz_cluster.c: libFuzzer harness for the cluster description reader (cluster_desc_load),
 * then the routes its layout gives between the first and the last GPUs: every hop on a link
 * that exists (the platform builds only those). No engine: nothing is built into SimGrid. */
#include "fuzz_input.h"
#include "../topology/cluster_desc.h"

#include <stdlib.h>

#define SAMPLE 24 /* GPUs from each end of the rank range */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    cluster_desc *d;
    if (cluster_desc_load(path, &d, &err))
        return 0;
    const fabric *f = &d->layout;
    int ranks[2 * SAMPLE], n = 0;
    for (int r = 0; r < f->gpus && r < SAMPLE; r++)
        ranks[n++] = r;
    for (int r = f->gpus - SAMPLE > SAMPLE ? f->gpus - SAMPLE : SAMPLE; r < f->gpus; r++)
        ranks[n++] = r;
    fabric_hop hops[FABRIC_MAX_HOPS];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            int k = fabric_route(f, ranks[i], ranks[j], hops);
            if (k < 1 || k > FABRIC_MAX_HOPS)
                abort();
            for (int h = 0; h < k; h++)
                if (hops[h].link < 0 || hops[h].link >= f->n_links ||
                    !fabric_link_exists(f, hops[h].link))
                    abort();
        }
    cluster_desc_free(d);
    return 0;
}
