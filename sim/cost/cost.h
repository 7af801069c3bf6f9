/* cost.h: how long an op takes on a device, without a GPU: tensor-core GEMMs as tiles in waves
 * over the SMs (cost_tile.c) where the GPU's architecture has tile parameters, else a roofline on
 * the device's peaks with shape-aware efficiency; plus kernel-launch overheads. Constants are
 * named in cost.c and cost_tile.c. */
#ifndef PROTOSIM_COST_H
#define PROTOSIM_COST_H

#include "../../topology/cluster.h"
#include "../../workloads/workload.h"

typedef enum { PASS_FWD = 0, PASS_BWD = 1 } op_pass;

/* GPU time of one (already sharded) op, kernel time only: max(compute, memory) per kernel
 * with efficiency for the op class and shape. Never negative. prec PREC_FP8 is for GEMM ops
 * only (the device must have FP8 units): the GEMM at the FP8 peak with fp8 inputs and a bf16
 * output, plus the memory-bound casts of its inputs to fp8 (with their transposes). */
double cost_op_kernel_seconds(const workload_op *op, op_pass pass, precision_t prec,
                              const device_spec *dev);
/* Kernels the op launches in that pass: its forward count, twice that in backward. */
int cost_op_kernels(const workload_op *op, op_pass pass);
/* Host-side launch overhead of the op's kernels in that pass (one launch cost per kernel). The
 * host issues kernels asynchronously: the compiler runs them as a flow shop (host launch, then
 * GPU run) and the executor plays the host's timeline (strategies/compile/compile.c, sim/engine/htae.c). */
double cost_op_launch_seconds(const workload_op *op, op_pass pass);
/* The share of the op's backward kernel time that is its weight gradient (the W of a
 * zero-bubble schedule), in [0, 1]: a GEMM with parameters, dW = X^T dY over its input
 * gradient dX = dY W^T and fp8 casts (which B runs); an embedding lookup's whole backward (a
 * scatter-add into the table: no input gradient); 0 for every other op (attention, norms and
 * elementwise make input gradients; a norm's weight gradient is fused into its kernel). */
double cost_op_weight_grad_share(const workload_op *op, precision_t prec, const device_spec *dev);
/* A fused attention core built in precision `from` as it runs in `to` (fp8_attention): its Q,
 * K, V, O and their gradients in `to`'s element size, its per-row log-sum-exp (fp32, batch x m
 * x 4 bytes) unchanged. Writes the copy into *tmp (which may be op) and returns tmp. */
workload_op *cost_attention_in(const workload_op *op, precision_t from, precision_t to,
                               workload_op *tmp);
/* Kernels of the op's backward that its weight gradient launches (of cost_op_kernels). */
int cost_op_weight_grad_kernels(const workload_op *op);
/* The two above, added. */
double cost_op_seconds(const workload_op *op, op_pass pass, precision_t prec,
                       const device_spec *dev);

/* Adam (or SGD when adam == 0) step over `params` local parameters, mixed precision when
 * prec is fp16/bf16 (fp32 master weights). Memory bound. */
double cost_optimizer_seconds(double params, int adam, precision_t prec, int master,
                              const device_spec *dev);

/* Host-side cost of one training step outside forward and backward; charged with the
 * optimizer step (and not at all when there is no optimizer step). */
double cost_iteration_overhead_seconds(void);

/* Host-side cost of a pipeline runtime per forward or backward unit of a stage, when the
 * plan is pipelined (pipeline degree > 1). */
double cost_pipeline_unit_overhead_seconds(void);

/* GPU seconds every modelled kernel of an op costs besides its work (cost_op_kernel_seconds
 * adds it per kernel; the single-kernel functions above do not). */
double cost_kernel_gpu_overhead_seconds(void);

/* The same for one CUDA kernel, where an op's kernels are counted one by one (DLRM's ops,
 * FBGEMM's TBE, FSDP's copies): the modelled kernel's share, 17 us / 2.5 = 6.8 us. */
double cost_cuda_kernel_gpu_overhead_seconds(void);
/* The one of the two an op's kernels pay (workload_op.cuda_kernels). */
double cost_op_gpu_overhead_seconds(const workload_op *op);

/* Host seconds to issue one collective or point-to-point call. */
double cost_comm_call_seconds(void);

/* Seconds per kernel launch (CPU side, exposed when kernels are short): per modelled kernel of
 * the transformer graph (about 2.5 PyTorch ops). */
double cost_kernel_launch_seconds(void);
/* The same for one PyTorch op issuing one CUDA kernel (FSDP's copies): 60 us / 2.5 = 24 us. */
double cost_cuda_kernel_launch_seconds(void);

/* Fraction of the GEMM peak (tensor-core peak of prec, or fp32 SIMT where the device has no
 * unit for prec) one [batch x] (m x k).(k x n) kernel reaches: base x tile quantization x
 * wave quantization over the SMs x K depth, for the best of the library's tilings (output tile
 * shapes and split-K factors, see cost.c). In (0, 1]. */
double cost_gemm_efficiency(double batch, double m, double n, double k, precision_t prec,
                            const device_spec *dev);
/* Fraction of the HBM bandwidth that memory-bound kernels sustain. */
double cost_memory_efficiency(void);

/* The same for one tiling: output tiles of tile_m x tile_n, k split in `split` parts (each
 * split's partial tile counts as a tile for the waves). */
double cost_gemm_tiling_efficiency(double batch, double m, double n, double k, int tile_m,
                                   int tile_n, int split, precision_t prec, const device_spec *dev);
/* The tiling cost_gemm_efficiency picks for a shape (the best of the tile set and split-K
 * factors): the output tile, the split, the tiles (split parts included) and the waves they take
 * over the GPU's SMs (tiles / SMs, rounded up), and its efficiency; compute_s and memory_s are
 * the GEMM's math at that efficiency and its HBM traffic at the memory-bound efficiency. */
typedef struct gemm_tiling {
    int tile_m, tile_n, split;
    double tiles, waves, efficiency;
    double compute_s, memory_s;
} gemm_tiling;
gemm_tiling cost_gemm_tiling(double batch, double m, double n, double k, precision_t prec,
                             const device_spec *dev);
/* The model a GEMM kernel is costed with (cost_gemm_kernel_seconds, every GEMM op): on a
 * tensor-core precision of a GPU whose entry asks for it (devices.yaml gemm_model: tile) and
 * whose architecture has tile parameters (Ampere, Hopper), the tile-and-wave model's fastest
 * tiling (sim/cost/cost_tile.c: compute_s its waves of tiles, memory_s its HBM traffic at the
 * fitted GEMM streaming efficiency, efficiency the share of the peak its math reaches);
 * elsewhere cost_gemm_tiling. The work is max(compute_s, memory_s). */
gemm_tiling cost_gemm_model(double batch, double m, double n, double k, precision_t prec,
                            const device_spec *dev);
/* One attention op's work in one pass (batch, m = n = sequence, k = head dim; fused or not):
 * its GEMMs' math and, fused, its own traffic, whichever is longer; unfused, the scores' traffic
 * added. Without the shortest-kernel floor and the per-kernel costs cost_op_kernel_seconds adds. */
double cost_attention_kernel_seconds(const workload_op *op, op_pass pass, precision_t prec,
                                     const device_spec *dev);
/* The peak a GEMM of this precision runs against: the tensor-core peak, or the fp32 SIMT one
 * where the GPU has no units for it. */
double cost_gemm_peak_flops(precision_t prec, const device_spec *dev);
/* A [batch x] (m x k).(k x n) GEMM's HBM bytes: both inputs read, the output written (FP8: fp8
 * inputs, a bf16 output). */
double cost_gemm_bytes(double batch, double m, double n, double k, precision_t prec);

/* GPU time of one [batch x] (m x k).(k x n) GEMM kernel: cost_gemm_model's work; on the roofline
 * model, at least the minimum kernel time. What scripts/fit_kernels and scripts/fit_tiles
 * replicate. */
double cost_gemm_kernel_seconds(double batch, double m, double n, double k, precision_t prec,
                                const device_spec *dev);
/* GPU time of one memory-bound kernel moving `bytes` to and from HBM (at least the minimum). */
double cost_memory_kernel_seconds(double bytes, const device_spec *dev);
/* Shortest GPU time of any kernel. */
double cost_kernel_min_seconds(void);
/* Share of the score tiles a fused causal attention kernel computes for s queries and keys:
 * (nb + 1) / (2 nb) with nb = ceil(s / 128) (the tiles above the diagonal are skipped). */
double cost_causal_tile_fraction(double s);
/* The same under a causal sliding window of w keys per query: the 128 x 128 tiles meeting the
 * band q - w + 1 .. q over nb x nb (counted; the causal fraction when w >= s). */
double cost_window_tile_fraction(double s, double w);

/* ---- the embedding lookup (sim/cost/cost_embedding.c; docs/cost-model.md, "DLRM") ---- */

/* Rows of table `e` the forward reads from HBM when `l2` bytes of L2 hold its hottest rows:
 * max(distinct rows, lookups x (1 - share of the lookups on the hottest l2 / row_bytes rows)). */
double cost_embedding_rows_read(const workload_emb *e, double l2);
/* HBM bytes of one table's lookups. Forward: the rows read x dim x element bytes, the ids and
 * offsets (8 B each), the pooled outputs (bags x dim x element bytes). Backward: ids and
 * offsets, the radix sort of (id, position) pairs (12 B read and written per pass of 8 bits of
 * the row index), the gradient gathered per lookup, and each distinct row and its optimizer
 * state (fp32 words per element: emb_update_state_words) read and written once. */
double cost_embedding_bytes(const workload_emb *e, op_pass pass, double l2);
/* The streaming bytes of an unfused sparse update (workload_emb.sparse_update; 0 when fused):
 * lookups x dim x 4 B (one fp32 gradient row per lookup) x 4 passes (written by the backward,
 * read and written by the optimizer's scaling, read by its index_add), + 2 with amp_unscale
 * (fp16 AMP's loss scaler reads and writes them). */
double cost_embedding_sparse_stream_bytes(const workload_emb *e);
/* One TBE kernel over n tables (the L2 split evenly among them): their bytes over the HBM
 * bandwidth at the memory-bound efficiency (forward) or the sparse update's (backward), plus
 * the per-kernel GPU overhead (1 kernel forward, 2 backward). Tables with an unfused sparse
 * update add their streaming bytes at the memory-bound efficiency and 1 kernel (2 with the AMP
 * unscale), and sort no ids. The device must give l2_mib. */
double cost_embedding_seconds(const workload_emb *tables, int n, op_pass pass,
                              const device_spec *dev);

#endif
