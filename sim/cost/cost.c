/* cost.c: op time on a device without a GPU: a roofline on the datasheet peaks with
 * shape-aware GEMM efficiency (tiles, waves, K depth), bandwidth efficiency and launch costs. */
#include "cost.h"
#include "cost_tile.h"

#include <assert.h>
#include <math.h>

/* The constants describe the hardware and libraries, never a row. Those marked "fitted" come
 * from scripts/fit_kernels on ../shared/groundtruth/kernels (NeuSight: 144k fp32 PyTorch 2.1
 * linear/bmm/layernorm/softmax/add latencies on A100-PCIE-40GB, V100-PCIE-32GB, T4,
 * P100-PCIE-16GB, P4; even rows fitted, odd rows held out); docs/cost-model.md has the table. */

/* Output tiles (m edge, n edge) a GEMM library chooses among (cuBLAS sgemm and CUTLASS kernels
 * of the data: ampere/volta/maxwell_sgemm_{128x128,128x64,64x64,128x32,32x128,32x32,...}), and
 * the split-K factors it may use for small m x n with deep k (splitkreduce_kernel in the data).
 * The model takes the tiling with the highest efficiency, as the library's heuristic aims to.
 * Shared by the SIMT and tensor-core paths. */
static const int COST_GEMM_TILES[][2] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {128, 32},
                                         {32, 128},  {64, 32},  {32, 64},  {32, 32}};
static const int COST_GEMM_SPLITS[] = {1, 2, 4, 8, 16};
/* Split-K only for unbatched GEMMs, and never below this k per split. */
static const double COST_GEMM_SPLIT_MIN_K = 128.0;
/* Fraction of the tensor-core peak a large, well-shaped GEMM reaches (fp16/bf16/tf32), before
 * tile, wave and K-depth losses. Fitted by scripts/fit_tensor on vidur's 28,852 per-op fp16 GEMM
 * timings of an A100-SXM4-80GB (../shared/groundtruth/vidur: the four GEMMs of eight models'
 * layers, 512-32k tokens, TP 1-8), with a fixed per-kernel GPU cost beside it (6 us a CUDA
 * kernel, as COST_KERNEL_GPU_OVERHEAD_SECONDS charges): 0.73 (geomean 5-7% per model file, each
 * file held out 5-7%; the H100's own fit, 0.715, on the A100 files 6-8%). The default for GPUs
 * without their own figure (devices.yaml `gemm_efficiency`). It was 0.85, fitted end to end on
 * vTrain, where per-kernel costs and small GEMMs share the blame: every large-GEMM PyTorch run
 * off vTrain came out 10-20% fast (docs/accuracy.md). */
static const double COST_GEMM_EFF_TENSOR = 0.73;
/* Fraction of the fp32 SIMT peak a large SGEMM reaches (no tensor cores). Fitted: 0.68 over all
 * five devices (grid 0.40-1.00 step 0.02). Full-power cards reach more (A100 0.78, V100 0.86,
 * P100 0.76 of peak for the largest shapes), the 70-75 W T4 and P4 much less (0.38, 0.17-0.5:
 * they cannot hold their boost clock); one constant across devices splits the difference. It is
 * the default: a GPU whose own kernels were fitted says so in devices.yaml (`sgemm_efficiency`:
 * V100 0.90, A100 0.82, scripts/fit_kernels on that GPU's linear and bmm rows alone, the other
 * constants held; docs/cost-model.md). */
static const double COST_GEMM_EFF_SIMT = 0.68;
/* K depth at which a GEMM reaches half its efficiency: prologue/epilogue cost of a tile is
 * amortized over k, factor k / (k + K0). Fitted: 64 (grid 0-256). */
static const double COST_GEMM_K_HALF = 64.0;
/* Fraction of the fp32 peak reached by the arithmetic of memory-bound kernels (layernorm,
 * softmax, gelu): these never hit it, the value only keeps compute a lower bound. */
static const double COST_VECTOR_EFF = 0.50;
/* Fraction of the HBM bandwidth memory-bound kernels sustain. Fitted: 0.62 (grid 0.50-1.00 step
 * 0.02) on layernorm/softmax/add with honest byte counts (add 12 B, softmax 8 B, layernorm
 * 8 B per element). Large adds alone reach 0.76 (T4) to 0.92 (V100); softmax and layernorm
 * less (A100 0.6-0.65), and mid-sized kernels less again: 0.62 is the all-size compromise.
 * Held-out geomean |error| 14-18% per kernel type. */
static const double COST_MEM_EFF = 0.62;
/* Shortest time a kernel occupies the GPU, however little it does. Not observable in the kernel
 * data (hidden under the 25-60 us host floor of eager PyTorch); public figure. */
static const double COST_KERNEL_MIN_SECONDS = 2.0e-6;
/* GPU time every kernel costs besides its work: the device-side launch latency, prologue and
 * the tail of its last wave, paid once per modelled kernel (about 2.5 CUDA kernels). Fitted by
 * scripts/fit_vtrain (step 1 us): 17 us, about 7 us per CUDA kernel. */
static const double COST_KERNEL_GPU_OVERHEAD_SECONDS = 17e-6;
/* CUDA kernels per modelled kernel of the transformer graph: Megatron issues about 2.5
 * PyTorch ops, each one CUDA kernel, where the op graph has one fused kernel (the launch cost
 * below says the same). Ops whose `kernels` are CUDA kernels (workload_op.cuda_kernels: DLRM's
 * MLP GEMMs, apex's bias-ReLU kernels, the interaction) pay the per-CUDA-kernel share. */
static const double COST_CUDA_KERNELS_PER_MODELLED = 2.5;
/* Host time to issue one kernel of this op model: PyTorch eager dispatch, autograd, framework
 * hooks and cudaLaunchKernel. The op graph fuses what Megatron issues as about 2.5 PyTorch ops
 * into one kernel, so this is per modelled kernel, not per CUDA kernel (about 20 us per real
 * op). Fitted by scripts/fit_vtrain on vTrain (Megatron-DeepSpeed, A100): 60 us (step 1 us),
 * with the executor's host thread issuing them (sim/engine/htae.c). */
static const double COST_KERNEL_LAUNCH_SECONDS = 60e-6;
/* Host time of one communication call (torch.distributed all-reduce or send/recv through
 * Megatron's autograd wrappers: ProcessGroupNCCL's enqueue, events, stream waits). Fitted with
 * the above: 15 us (step 2.5 us), about what ProcessGroupNCCL's enqueue and its CUDA events cost
 * (2.5 us when the collectives' own launch was overstated at 77.5 us, see sim/engine/htae.c). */
static const double COST_COMM_CALL_SECONDS = 15e-6;
/* Host-side work of a training step outside forward and backward (gradient clipping and
 * loss-scale checks, zero_grad, data loading, logging). Fitted with the above: 0 (step 1 ms):
 * vTrain cannot tell it from other costs. */
static const double COST_ITERATION_OVERHEAD_SECONDS = 0.0;
/* Host-side work of a pipeline runtime per forward or backward unit of a stage (schedule
 * step, send/recv setup with shape metadata, buffer management), paid only when pipelining.
 * Fitted with the above by scripts/fit_vtrain: 0.25 ms (1.5 ms before the host thread made
 * the pipeline's blocking send/receive synchronize the host). Held-out vTrain rows with all
 * of these: geomean |error| 4.3%, Kendall tau mean 0.915. */
static const double COST_PIPELINE_UNIT_OVERHEAD_SECONDS = 0.25e-3;

/* FP8 GEMMs (precision: fp8, Transformer Engine on Hopper/Blackwell): each GEMM input is cast
 * from bf16 to fp8 with its transpose (the FP8 tensor cores take only the TN layout, so dgrad
 * and wgrad need W^T, X^T and dY^T), one cast_transpose pass per input with the amax fused as
 * under delayed scaling: read 2 bytes, write 1 + 1 per element. Forward casts X and W, backward
 * dY. Counted from the kernels, not fitted. */
static const double COST_FP8_CAST_BYTES_PER_ELEM = 4.0;
/* NVFP4 GEMMs (precision: fp4, Transformer Engine's NVFP4 recipe on Blackwell): 4-bit elements
 * with an E4M3 scale per 16, 0.5625 bytes an element; each input quantized row-wise and
 * column-wise (the two GEMM layouts) in one pass: read 2 bytes, write 2 x 0.5625. The recipe's
 * random Hadamard transform on the weight gradient's inputs and its stochastic rounding are not
 * counted. Counted from the format, not fitted. */
static const double COST_FP4_BYTES_PER_ELEM = 0.5625;
static const double COST_FP4_CAST_BYTES_PER_ELEM = 2.0 + 2.0 * 0.5625;

/* Optimizer traffic per parameter, bytes read + written. First guesses from counting tensors. */
static const double COST_ADAM_STATE_BYTES = 16.0; /* fp32 m and v, each read and written */
static const double COST_SGD_STATE_BYTES = 8.0;   /* fp32 momentum, read and written */
static const double COST_MASTER_BYTES = 8.0;      /* fp32 weights (master copy), read + written */
static const double COST_GRAD_BYTES = 8.0;        /* fp32 grad read by clipping norm and step */
/* Kernels of one optimizer step (grad norm, unscale/clip, update, copy to low precision);
 * multi-tensor apply makes their number independent of the parameter count. */
static const double COST_OPTIMIZER_KERNELS = 4.0;

static void check_device(const device_spec *dev)
{
    assert(dev);
    assert(dev->peak_flops[PREC_FP32] > 0 && dev->hbm_bw > 0 && dev->sms > 0);
    (void)dev;
}

/* A precision the device has no units for (bf16 on V100, tf32 before Ampere) runs on the
 * fp32 SIMT path, as the frameworks fall back to. */
static int tensor_path(precision_t prec, const device_spec *dev)
{
    return prec != PREC_FP32 && dev->peak_flops[prec] > 0;
}

/* The SIMT (fp32, no tensor cores) base efficiency of this GPU: its devices.yaml figure, else
 * the all-device default. */
static double simt_efficiency(const device_spec *dev)
{
    return dev->sgemm_efficiency > 0 ? dev->sgemm_efficiency : COST_GEMM_EFF_SIMT;
}

/* The tensor-core base efficiency of this GPU: its devices.yaml figure, else the default. */
static double tensor_efficiency(const device_spec *dev)
{
    return dev->gemm_efficiency > 0 ? dev->gemm_efficiency : COST_GEMM_EFF_TENSOR;
}

double cost_gemm_peak_flops(precision_t prec, const device_spec *dev)
{
    return tensor_path(prec, dev) ? dev->peak_flops[prec] : dev->peak_flops[PREC_FP32];
}

double cost_gemm_tiling_efficiency(double batch, double m, double n, double k, int tile_m,
                                   int tile_n, int split, precision_t prec, const device_spec *dev)
{
    check_device(dev);
    assert(batch > 0 && m > 0 && n > 0 && k > 0 && tile_m > 0 && tile_n > 0 && split >= 1);
    double gm = ceil(m / tile_m), gn = ceil(n / tile_n);
    double tile_eff = (m * n) / (gm * tile_m * gn * tile_n);
    double tiles = ceil(batch) * gm * gn * split;
    double sms = dev->sms;
    double wave_eff = tiles / (ceil(tiles / sms) * sms);
    double kk = k / split;
    double k_eff = kk / (kk + COST_GEMM_K_HALF);
    double base = tensor_path(prec, dev) ? tensor_efficiency(dev) : simt_efficiency(dev);
    double eff = base * tile_eff * wave_eff * k_eff;
    assert(eff > 0 && eff <= 1);
    return eff;
}

/* Bytes through HBM at the memory-bound efficiency. */
static double memory_seconds(double bytes, const device_spec *dev)
{
    return bytes / (dev->hbm_bw * COST_MEM_EFF);
}

gemm_tiling cost_gemm_tiling(double batch, double m, double n, double k, precision_t prec,
                             const device_spec *dev)
{
    gemm_tiling best = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t t = 0; t < sizeof COST_GEMM_TILES / sizeof COST_GEMM_TILES[0]; t++)
        for (size_t s = 0; s < sizeof COST_GEMM_SPLITS / sizeof COST_GEMM_SPLITS[0]; s++) {
            int split = COST_GEMM_SPLITS[s], tm = COST_GEMM_TILES[t][0], tn = COST_GEMM_TILES[t][1];
            if (split > 1 && (k / split < COST_GEMM_SPLIT_MIN_K || ceil(batch) > 1))
                continue;
            double eff = cost_gemm_tiling_efficiency(batch, m, n, k, tm, tn, split, prec, dev);
            if (eff <= best.efficiency) /* the first of equals: the tile set's order */
                continue;
            double tiles = ceil(batch) * ceil(m / tm) * ceil(n / tn) * split;
            best = (gemm_tiling){tm, tn, split, tiles, ceil(tiles / dev->sms), eff, 0, 0};
        }
    assert(best.efficiency > 0);
    best.compute_s = 2.0 * batch * m * n * k / (cost_gemm_peak_flops(prec, dev) * best.efficiency);
    best.memory_s = memory_seconds(cost_gemm_bytes(batch, m, n, k, prec), dev);
    return best;
}

gemm_tiling cost_gemm_model(double batch, double m, double n, double k, precision_t prec,
                            const device_spec *dev)
{
    check_device(dev);
    return cost_tile_applies(prec, dev)
               ? cost_tile_gemm(batch, m, n, k, cost_gemm_bytes(batch, m, n, k, prec), prec, dev)
               : cost_gemm_tiling(batch, m, n, k, prec, dev);
}

double cost_gemm_efficiency(double batch, double m, double n, double k, precision_t prec,
                            const device_spec *dev)
{
    return cost_gemm_tiling(batch, m, n, k, prec, dev).efficiency;
}

double cost_memory_efficiency(void)
{
    return COST_MEM_EFF;
}

/* A GEMM's HBM traffic: its inputs (m x k, k x n) and its output (m x n); FP8 GEMMs read fp8
 * inputs and write a bf16 output. */
double cost_gemm_bytes(double batch, double m, double n, double k, precision_t prec)
{
    if (prec == PREC_FP8)
        return batch *
               ((m * k + k * n) * precision_bytes(PREC_FP8) + m * n * precision_bytes(PREC_BF16));
    if (prec == PREC_FP4)
        return batch *
               ((m * k + k * n) * COST_FP4_BYTES_PER_ELEM + m * n * precision_bytes(PREC_BF16));
    return batch * (m * k + k * n + m * n) * precision_bytes(prec);
}

/* The math of a [batch x] (m x k).(k x n) GEMM at the shape's roofline efficiency. */
static double gemm_compute_seconds(double batch, double m, double n, double k, precision_t prec,
                                   const device_spec *dev)
{
    return cost_gemm_tiling(batch, m, n, k, prec, dev).compute_s;
}

/* Whether the shortest-kernel floor applies to a GEMM: the roofline's; the tile model has its own
 * fixed costs (per tile), fitted without it. */
static int gemm_has_floor(precision_t prec, const device_spec *dev)
{
    return !cost_tile_applies(prec, dev);
}

/* One [batch x] (m x k).(k x n) kernel: max of compute and memory time, by the GEMM's model. */
static double gemm_seconds(double batch, double m, double n, double k, precision_t prec,
                           const device_spec *dev)
{
    gemm_tiling g = cost_gemm_model(batch, m, n, k, prec, dev);
    return fmax(g.compute_s, g.memory_s);
}

double cost_gemm_kernel_seconds(double batch, double m, double n, double k, precision_t prec,
                                const device_spec *dev)
{
    check_device(dev);
    double t = gemm_seconds(batch, m, n, k, prec, dev);
    return gemm_has_floor(prec, dev) ? fmax(t, COST_KERNEL_MIN_SECONDS) : t;
}

double cost_memory_kernel_seconds(double bytes, const device_spec *dev)
{
    check_device(dev);
    assert(bytes >= 0);
    return fmax(memory_seconds(bytes, dev), COST_KERNEL_MIN_SECONDS);
}

double cost_kernel_min_seconds(void)
{
    return COST_KERNEL_MIN_SECONDS;
}

/* An op known only by its totals (no shape): roofline at the op class's base efficiency. */
static double roofline_seconds(double flops, double bytes, double peak, double eff,
                               const device_spec *dev)
{
    return fmax(flops / (peak * eff), memory_seconds(bytes, dev));
}

static double gemm_op_seconds(const workload_op *op, op_pass pass, precision_t prec,
                              const device_spec *dev)
{
    double b = op->batch, m = op->m, n = op->n, k = op->k;
    /* an fp8 plan never reaches a GPU without FP8 units (strategy_check_devices) */
    assert(prec != PREC_FP8 || dev->peak_flops[PREC_FP8] > 0);
    assert(prec != PREC_FP4 || dev->peak_flops[PREC_FP4] > 0);
    if (!(b > 0 && m > 0 && n > 0 && k > 0)) {
        double base = tensor_path(prec, dev) ? tensor_efficiency(dev) : simt_efficiency(dev);
        return pass == PASS_FWD ? roofline_seconds(op->fwd_flops, op->fwd_bytes,
                                                   cost_gemm_peak_flops(prec, dev), base, dev)
                                : roofline_seconds(op->bwd_flops, op->bwd_bytes,
                                                   cost_gemm_peak_flops(prec, dev), base, dev);
    }
    if (op->gram) {
        /* Z = X X^T (m = n, X is m x k): X read once, Z written; backward dX = (dZ + dZ^T) X,
         * one (m x m).(m x k) GEMM reading dZ and X, writing dX (the symmetric sum is fused) */
        assert(m == n && prec != PREC_FP8 && prec != PREC_FP4);
        double e = precision_bytes(prec);
        if (pass == PASS_FWD)
            return fmax(gemm_compute_seconds(b, m, n, k, prec, dev),
                        memory_seconds(b * (m * k + m * n) * e, dev));
        return fmax(gemm_compute_seconds(b, m, k, m, prec, dev),
                    memory_seconds(b * (m * m + 2.0 * m * k) * e, dev));
    }
    double cast = 0;
    if (prec == PREC_FP8 || prec == PREC_FP4) /* forward casts X and W, backward dY */
        cast = memory_seconds(
            (prec == PREC_FP8 ? COST_FP8_CAST_BYTES_PER_ELEM : COST_FP4_CAST_BYTES_PER_ELEM) * b *
                (pass == PASS_FWD ? m * k + k * n : m * n),
            dev);
    if (pass == PASS_FWD)
        return cast + gemm_seconds(b, m, n, k, prec, dev);
    /* dX = dY . W^T has shape (m x k) over n; dW = X^T . dY has shape (k x n) over m */
    return cast + gemm_seconds(b, m, k, n, prec, dev) + gemm_seconds(b, k, n, m, prec, dev);
}

/* Query and key rows a fused attention kernel takes per tile (FlashAttention-2 and 3, cuDNN's
 * fused attention: 128 on Ampere and Hopper for head sizes up to 128). */
static const double COST_ATTENTION_BLOCK = 128.0;

/* Share of the s x s score tiles a fused causal kernel computes: it skips the tiles wholly above
 * the diagonal (FlashAttention-2, section 3.1), so of nb x nb tiles (nb = ceil(s / block)) it
 * runs the nb (nb + 1) / 2 on or below it. Counted, not fitted. An unfused core computes every
 * score and masks them afterwards (factor 1). */
/* A fused attention backward does 2.5x its forward's math (five GEMMs of the forward's two
 * sizes: QK^T recomputed, dV, dP, dQ, dK) at a smaller rate (atomic dQ accumulation, more
 * non-matmul work per tile): FlashAttention-2's own A100 curves (Dao 2023, figures 4 and 5:
 * causal, head dimension 128) give backward / forward rates of 140 / 176 TFLOP/s at s = 2048
 * and 157 / 200 at s = 8192, both 0.79 (its abstract's "up to 73% / 63% of peak" are maxima
 * over different shapes). So the backward takes 2.5 / 0.79 of the forward's time at the same
 * shape. Published, not fitted. */
static const double COST_FLASH_BWD_FLOPS = 2.5;
static const double COST_FLASH_BWD_RELATIVE = 0.79;

double cost_causal_tile_fraction(double s)
{
    assert(s > 0);
    double nb = ceil(s / COST_ATTENTION_BLOCK);
    return (nb + 1.0) / (2.0 * nb);
}

/* The same under a causal sliding window of w keys per query (q - w + 1 .. q; FlashAttention's
 * window_size (w - 1, 0), which skips the tiles wholly outside the band). Query tile i (first
 * query 128 i) meets key tile j when j <= i (causal) and the tile's last key 128 j + 127 is at
 * least 128 i - w + 1, the first key its first query sees: j >= (128 i - w - 126) / 128. Counted
 * one row of tiles at a time over the nb x nb; w >= s gives the causal fraction. */
double cost_window_tile_fraction(double s, double w)
{
    assert(s > 0 && w >= 1);
    const double B = COST_ATTENTION_BLOCK;
    double nb = ceil(s / B), tiles = 0;
    for (double i = 0; i < nb; i++) {
        double first = fmax(0.0, ceil((i * B - w - (B - 2)) / B));
        assert(first <= i);
        tiles += i - first + 1;
    }
    return tiles / (nb * nb);
}

/* Attention core: its batched GEMMs at GEMM efficiency, the rest of its traffic (softmax,
 * dropout, permute) as streaming memory. Shape: QK^T is (m x k).(k x n), m = n = seq. */
static double attention_seconds(const workload_op *op, op_pass pass, precision_t prec,
                                const device_spec *dev)
{
    double b = op->batch, s = op->m, d = op->k, dv = op->v_dim > 0 ? op->v_dim : op->k;
    assert(op->m == op->n && (!op->window || op->causal));
    double gemm_time, gemm_traffic, bytes;
    if (op->fused) {
        /* one kernel, scores on chip: forward QK^T and PV; backward recomputes QK^T, then dV,
         * dP, dQ, dK (COST_FLASH_BWD_*). Its GEMMs never move the scores through HBM: their
         * math alone, and the kernel's own traffic (Q, K, V, O and gradients) overlaps it. */
        double qk = gemm_compute_seconds(b, s, s, d, prec, dev);
        double pv = gemm_compute_seconds(b, s, dv, s, prec, dev), fwd = qk + pv;
        /* backward: 2.5 forwards' math when V is as wide as Q and K (FlashAttention-2's figures);
         * with a narrower V (MLA) the five GEMMs each at its width: QK^T again, dQ and dK over
         * the query-key heads, dP and dV over the values' */
        double bwd = dv == d ? fwd * COST_FLASH_BWD_FLOPS : 3 * qk + 2 * pv;
        gemm_time = pass == PASS_FWD ? fwd : bwd / COST_FLASH_BWD_RELATIVE;
        if (op->window > 0)
            gemm_time *= cost_window_tile_fraction(s, op->window);
        else if (op->causal)
            gemm_time *= cost_causal_tile_fraction(s);
        /* FlashAttention-2's warp-level MMA: the GPU's share of the native rate (1 before
         * Hopper); a GPU without the figure never gets such an op (strategy_check_devices) */
        if (op->warp_mma) {
            assert(dev->warp_mma_fraction > 0 && dev->warp_mma_fraction <= 1);
            gemm_time /= dev->warp_mma_fraction;
        }
        bytes = pass == PASS_FWD ? op->fwd_bytes : op->bwd_bytes;
        return fmax(gemm_time, memory_seconds(bytes, dev));
    }
    assert(!op->window); /* a window needs the fused kernel (workload_model_read) */
    assert(dv == d);     /* MLA's core is fused (its model sets flash) */
    double qk = gemm_seconds(b, s, s, d, prec, dev), qk_bytes = cost_gemm_bytes(b, s, s, d, prec);
    double av = gemm_seconds(b, s, d, s, prec, dev), av_bytes = cost_gemm_bytes(b, s, d, s, prec);
    if (pass == PASS_FWD) {
        gemm_time = qk + av;
        gemm_traffic = qk_bytes + av_bytes;
        bytes = op->fwd_bytes;
    } else {
        /* dQ, dK and dV are (s x d) over s; dP is (s x s) over d */
        gemm_time = qk + 3 * av;
        gemm_traffic = qk_bytes + 3 * av_bytes;
        bytes = op->bwd_bytes;
    }
    return gemm_time + memory_seconds(fmax(bytes - gemm_traffic, 0.0), dev);
}

workload_op *cost_attention_in(const workload_op *op, precision_t from, precision_t to,
                               workload_op *tmp)
{
    assert(op->kind == OP_ATTENTION && op->fused);
    double r = (double)precision_bytes(to) / precision_bytes(from), lse = op->batch * op->m * 4.0;
    if (tmp != op)
        *tmp = *op;
    tmp->fwd_bytes = fmax(op->fwd_bytes - lse, 0.0) * r + fmin(op->fwd_bytes, lse);
    tmp->bwd_bytes = fmax(op->bwd_bytes - lse, 0.0) * r + fmin(op->bwd_bytes, lse);
    return tmp;
}

double cost_attention_kernel_seconds(const workload_op *op, op_pass pass, precision_t prec,
                                     const device_spec *dev)
{
    check_device(dev);
    assert(op && op->kind == OP_ATTENTION && op->batch > 0 && op->m > 0 && op->k > 0);
    return attention_seconds(op, pass, prec, dev);
}

double cost_op_kernel_seconds(const workload_op *op, op_pass pass, precision_t prec,
                              const device_spec *dev)
{
    assert(op);
    check_device(dev);
    double t;
    if (op->kind == OP_EMBEDDING_BAG) /* one table as its own TBE kernel */
        return cost_embedding_seconds(&op->emb, 1, pass, dev);
    if (op->kind == OP_GEMM)
        t = gemm_op_seconds(op, pass, prec, dev);
    else if (op->kind == OP_ATTENTION && op->batch > 0 && op->m > 0 && op->k > 0)
        t = attention_seconds(op, pass, prec, dev);
    else /* memory-bound ops, and any op known only by its totals */
        t = pass == PASS_FWD ? roofline_seconds(op->fwd_flops, op->fwd_bytes,
                                                dev->peak_flops[PREC_FP32], COST_VECTOR_EFF, dev)
                             : roofline_seconds(op->bwd_flops, op->bwd_bytes,
                                                dev->peak_flops[PREC_FP32], COST_VECTOR_EFF, dev);
    double kernels = cost_op_kernels(op, pass);
    int floor = op->kind != OP_GEMM || gemm_has_floor(prec, dev);
    t = fmax(t, floor ? kernels * COST_KERNEL_MIN_SECONDS : 0.0) +
        kernels * cost_op_gpu_overhead_seconds(op);
    assert(t >= 0 && isfinite(t));
    return t;
}

/* Whether the op has a weight gradient of its own kernels: a GEMM with parameters or using
 * another op's weight (its dW), an embedding lookup (its whole backward). */
static int weight_grad_op(const workload_op *op)
{
    if (op->kind == OP_EMBEDDING)
        return 1;
    return op->kind == OP_GEMM && (op->params > 0 || op->shares_weight) && !op->gram;
}

double cost_op_weight_grad_share(const workload_op *op, precision_t prec, const device_spec *dev)
{
    assert(op);
    if (!weight_grad_op(op))
        return 0.0;
    if (op->kind == OP_EMBEDDING)
        return 1.0;
    double b = op->batch, m = op->m, n = op->n, k = op->k;
    if (!(b > 0 && m > 0 && n > 0 && k > 0)) /* totals only: dX and dW have the same FLOPs */
        return 0.5;
    double whole = gemm_op_seconds(op, PASS_BWD, prec, dev);
    double dw = gemm_seconds(b, k, n, m, prec, dev);
    assert(whole > 0 && dw <= whole);
    return dw / whole;
}

int cost_op_weight_grad_kernels(const workload_op *op)
{
    assert(op && op->kernels >= 0);
    if (!weight_grad_op(op))
        return 0;
    return op->kind == OP_EMBEDDING ? cost_op_kernels(op, PASS_BWD) : op->kernels;
}

int cost_op_kernels(const workload_op *op, op_pass pass)
{
    assert(op && op->kernels >= 0);
    return op->kernels * (pass == PASS_BWD ? 2 : 1);
}

double cost_op_launch_seconds(const workload_op *op, op_pass pass)
{
    assert(op && op->kernels >= 0);
    return cost_op_kernels(op, pass) * COST_KERNEL_LAUNCH_SECONDS;
}

double cost_op_seconds(const workload_op *op, op_pass pass, precision_t prec,
                       const device_spec *dev)
{
    return cost_op_kernel_seconds(op, pass, prec, dev) + cost_op_launch_seconds(op, pass);
}

double cost_iteration_overhead_seconds(void)
{
    return COST_ITERATION_OVERHEAD_SECONDS;
}

double cost_pipeline_unit_overhead_seconds(void)
{
    return COST_PIPELINE_UNIT_OVERHEAD_SECONDS;
}

double cost_optimizer_seconds(double params, int adam, precision_t prec, int master,
                              const device_spec *dev)
{
    check_device(dev);
    assert(params >= 0);
    assert(prec != PREC_FP8 && prec != PREC_FP4); /* fp8/fp4 plans keep bf16 weights: pass bf16 */
    int mixed = prec == PREC_FP16 || prec == PREC_BF16;
    assert(master || mixed);
    double per_param = COST_GRAD_BYTES + COST_MASTER_BYTES +
                       (adam ? COST_ADAM_STATE_BYTES : COST_SGD_STATE_BYTES) +
                       (mixed ? precision_bytes(prec) : 0.0); /* low-precision copy written */
    if (!master) { /* everything in prec: the gradient read, the weights and states read and
                    * written (Adam two moments, SGD one) */
        double e = precision_bytes(prec);
        per_param = e + 2 * e + (adam ? 4 * e : 2 * e);
    }
    return memory_seconds(params * per_param, dev) +
           COST_OPTIMIZER_KERNELS * COST_KERNEL_LAUNCH_SECONDS;
}

double cost_kernel_gpu_overhead_seconds(void)
{
    return COST_KERNEL_GPU_OVERHEAD_SECONDS;
}

double cost_cuda_kernel_gpu_overhead_seconds(void)
{
    return COST_KERNEL_GPU_OVERHEAD_SECONDS / COST_CUDA_KERNELS_PER_MODELLED;
}

double cost_op_gpu_overhead_seconds(const workload_op *op)
{
    return op->cuda_kernels ? cost_cuda_kernel_gpu_overhead_seconds()
                            : COST_KERNEL_GPU_OVERHEAD_SECONDS;
}

double cost_comm_call_seconds(void)
{
    return COST_COMM_CALL_SECONDS;
}

double cost_kernel_launch_seconds(void)
{
    return COST_KERNEL_LAUNCH_SECONDS;
}

double cost_cuda_kernel_launch_seconds(void)
{
    return COST_KERNEL_LAUNCH_SECONDS / COST_CUDA_KERNELS_PER_MODELLED;
}
