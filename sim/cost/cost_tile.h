/* cost_tile.h: the tile-and-wave model of a tensor-core GEMM (cost_tile.c) for the GPU
 * architectures with fitted tile parameters (Ampere, Hopper), chosen per GPU (devices.yaml
 * gemm_model: tile; protosim kernel --gemm-model); cost.c costs every GEMM it applies to with it,
 * and the others with the roofline efficiency model. */
#ifndef PROTOSIM_COST_TILE_H
#define PROTOSIM_COST_TILE_H

#include "cost.h"

/* 1 when the GPU's architecture has fitted tile parameters. */
int cost_tile_fitted(const device_spec *dev);
/* 1 when a GEMM of this precision on this GPU is costed by tiles and waves: a tensor-core
 * precision of a GPU whose devices.yaml entry asks for it (gemm_model: tile) and whose
 * architecture has tile parameters. */
int cost_tile_applies(precision_t prec, const device_spec *dev);
/* bytes: the GEMM's HBM traffic (cost_gemm_bytes: inputs and output once).
 * One tiling: output tiles of tile_m x tile_n, k split in `split` parts; its tiles (split parts
 * included), waves, wave time (compute_s), HBM time (memory_s) and the share of the peak its
 * math reaches. The GPU's architecture must have tile parameters (cost_tile_fitted). */
gemm_tiling cost_tile_tiling(double batch, double m, double n, double k, double bytes, int tile_m,
                             int tile_n, int split, precision_t prec, const device_spec *dev);
/* The fastest tiling of a [batch x] (m x k).(k x n) GEMM, with its wave time (compute_s), its HBM
 * time (memory_s) and the share of the peak its math reaches (efficiency); the kernel's work is
 * the longer of the two. cost_tile_applies must hold. */
gemm_tiling cost_tile_gemm(double batch, double m, double n, double k, double bytes,
                           precision_t prec, const device_spec *dev);

#endif
