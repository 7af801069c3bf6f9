/* cost_tile.c: a tensor-core GEMM as the tiles its library runs in waves over the SMs (NeuSight's
 * tiles and waves, on tensor cores), for the GPU architectures whose parameters were fitted
 * (topology/devices.c holds each architecture's tile set and parameters beside its other fitted
 * figures: gpu_arch_tile_params).
 *
 * For each output tile tm x tn of the generation's tile set and each split-K factor s:
 *   ks = ceil(k / s); tiles T = batch ceil(m / tm) ceil(n / tn) s; waves W = ceil(T / SMs)
 *   one tile  = max(2 tm tn ks / (e P_sm),  operand bytes / (feed P16_sm))  +  fixed / P16_sm
 *   kernel    = max(W x one tile,  HBM bytes / (bh x HBM bandwidth))
 * and the kernel takes the fastest tiling, as the library's heuristic aims to. P_sm is the SM's
 * share of the precision's tensor peak, P16_sm of the fp16 peak (the per-SM rate the fitted
 * figures are relative to, so that no clock is needed: an SM's L2 feed and its fixed cycles scale
 * with the clock as its tensor rate does). Operand bytes are what the tile streams into its SM:
 * (min(tm, m) + min(tn, n)) ks elements. HBM bytes are the GEMM's inputs and output once, and a
 * split's fp32 partials written and read back (8 s m n bytes). Split-K only for one GEMM (not a
 * batch) and never below COST_TILE_SPLIT_MIN_K per split. The kernel time is the work alone:
 * cost_op_kernel_seconds adds the per-kernel GPU cost (6.8 us a CUDA kernel) as for every kernel.
 *
 * Parameters per architecture (4, fitted by scripts/fit_tiles across every shape of vidur's
 * per-op fp16 GEMM timings of that generation's GPU, with the 6.8 us per-kernel cost held;
 * docs/cost-model.md has the held-out errors; topology/cluster.h says what each is). */
#include "cost_tile.h"

#include <assert.h>
#include <math.h>

static const int COST_TILE_SPLITS[] = {1, 2, 4, 8, 16};
static const double COST_TILE_SPLIT_MIN_K = 128.0;

static const gemm_tile_params *params_of(const device_spec *dev)
{
    return gpu_arch_tile_params(dev->arch);
}

int cost_tile_fitted(const device_spec *dev)
{
    return params_of(dev) != NULL;
}

int cost_tile_applies(precision_t prec, const device_spec *dev)
{
    /* the tile parameters were fitted on fp16/bf16 and checked on fp8; no FP4 GPU has them */
    return dev->gemm_tiles && prec != PREC_FP32 && prec != PREC_FP4 && dev->peak_flops[prec] > 0 &&
           dev->peak_flops[PREC_FP16] > 0 && params_of(dev) != NULL;
}

gemm_tiling cost_tile_tiling(double batch, double m, double n, double k, double bytes, int tile_m,
                             int tile_n, int split, precision_t prec, const device_spec *dev)
{
    const gemm_tile_params *p = params_of(dev);
    assert(p && dev->peak_flops[prec] > 0 && dev->peak_flops[PREC_FP16] > 0);
    assert(batch > 0 && m > 0 && n > 0 && k > 0 && tile_m > 0 && tile_n > 0 && split >= 1);
    double sms = dev->sms, tm = tile_m, tn = tile_n, s = split, ks = ceil(k / s);
    double p_sm = dev->peak_flops[prec] / sms, p16_sm = dev->peak_flops[PREC_FP16] / sms;
    double tiles = ceil(batch) * ceil(m / tm) * ceil(n / tn) * s, waves = ceil(tiles / sms);
    double math = 2.0 * tm * tn * ks / (p_sm * p->e);
    double feed = precision_bytes(prec) * (fmin(tm, m) + fmin(tn, n)) * ks / (p->feed * p16_sm);
    double compute = waves * (fmax(math, feed) + p->fixed / p16_sm);
    double hbm = bytes + (s > 1 ? 8.0 * s * m * n : 0.0);
    double eff = 2.0 * batch * m * n * k / (dev->peak_flops[prec] * compute);
    assert(eff > 0 && eff <= 1);
    return (gemm_tiling){tile_m, tile_n, split,   tiles,
                         waves,  eff,    compute, hbm / (dev->hbm_bw * p->bh)};
}

gemm_tiling cost_tile_gemm(double batch, double m, double n, double k, double bytes,
                           precision_t prec, const device_spec *dev)
{
    const gemm_tile_params *p = params_of(dev);
    assert(p && cost_tile_applies(prec, dev));
    gemm_tiling best = {0, 0, 0, 0, 0, 0, INFINITY, 0};
    for (int t = 0; t < p->n_tiles; t++)
        for (size_t si = 0; si < sizeof COST_TILE_SPLITS / sizeof *COST_TILE_SPLITS; si++) {
            int s = COST_TILE_SPLITS[si];
            if (s > 1 && (ceil(k / s) < COST_TILE_SPLIT_MIN_K || ceil(batch) > 1))
                continue;
            gemm_tiling g = cost_tile_tiling(batch, m, n, k, bytes, p->tiles[t][0], p->tiles[t][1],
                                             s, prec, dev);
            if (fmax(g.compute_s, g.memory_s) < fmax(best.compute_s, best.memory_s))
                best = g; /* the first of equals: the tile set's order */
        }
    assert(isfinite(best.compute_s));
    return best;
}
