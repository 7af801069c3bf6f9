/* fuzz_devices.c: libFuzzer harness for the device table reader (device_table_load, the files
 * --devices and PROTOSIM_DEVICES name), then every entry it accepts through the kernel cost
 * models: GEMMs of a few shapes in every precision the GPU has, under the roofline and, where
 * its architecture has tile parameters, the tile model, and a memory-bound kernel. Every time
 * must be finite and positive: a figure the reader accepts may not break the arithmetic. */
#include "fuzz_input.h"
#include "../sim/cost/cost.h"
#include "../sim/cost/cost_tile.h"
#include "../topology/cluster.h"

#include <math.h>
#include <stdlib.h>

static void check(double t)
{
    if (!(t > 0) || !isfinite(t))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(".yaml", data, size);
    ps_error err;
    ps_error_clear(&err);
    device_table t;
    if (device_table_load(path, &t, &err))
        return 0;
    static const double shapes[][4] = {{1, 1, 1, 1},
                                       {1, 64, 64, 64},
                                       {1, 8192, 8192, 8192},
                                       {1, 1, 8192, 8192},
                                       {64, 128, 64, 1024}};
    for (int i = 0; i < t.n; i++) {
        device_spec d = t.specs[i];
        for (int tiles = 0; tiles <= cost_tile_fitted(&d); tiles++) {
            d.gemm_tiles = tiles;
            for (int p = 0; p < PREC_COUNT; p++) {
                if (!(d.peak_flops[p] > 0))
                    continue;
                for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                    check(cost_gemm_kernel_seconds(shapes[s][0], shapes[s][1], shapes[s][2],
                                                   shapes[s][3], (precision_t)p, &d));
            }
        }
        check(cost_memory_kernel_seconds(1e9, &d));
    }
    device_table_free(&t);
    return 0;
}
