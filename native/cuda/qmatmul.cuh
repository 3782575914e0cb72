// Affine-quantised (MLX layout) matrix product on the device, read in place:
// y[i, r] = W[mat_i][r, :] · x[i / x_div, :], plain (every row of work uses matrix `mat`) or
// gathered (matrix ids[i], or slots[ids[i]] through a slot table: the routed experts, whose ids
// never leave the device).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"
#include "cuda/kernel-limits.h"

namespace bs::BS_CUDA_NS {

struct QMatArgs {
  const uint8_t* codes;   // [n_mats, rows, cols*bits/8], codes LSB-first in little-endian words
  const uint8_t* scales;  // [n_mats, rows, cols/group]
  const uint8_t* biases;
  int scale_type;   // ScaleType
  int bits, group;  // 4 or 8; 32, 64 or 128
  int64_t rows, cols;
  int64_t n;                       // rows of work (tokens; gathered: routed slots)
  int64_t mat;                     // plain mode's matrix
  const int32_t* ids = nullptr;    // gathered mode: matrix (or slot-table index) per row of work
  const int32_t* slots = nullptr;  // the slot table, or nullptr (ids are matrices)
  int x_div = 1;                   // row i of work reads x row i / x_div (top-k slots of a token)
  const float* up = nullptr;       // when set, x is SiLU(x)·up elementwise (a gated MLP's down;
                                   // gathered or one token, 4 or 8 bits)
  const float* bias = nullptr;     // when set, y[i, r] = the sum + bias[r] (a linear's bias)
  // When set, matrix m lies apart (device-resident experts): its codes, scales and biases at
  // parts[3m], parts[3m + 1], parts[3m + 2]; codes/scales/biases above are then unused.
  const uint8_t* const* parts = nullptr;
  // Gathered and grouped (a prefill chunk's experts, route-sort.cuh): the rows of work in tiles
  // of up to kMatTokens rows of one matrix, each matrix's codes read once per tile; grid.y spans
  // max_tiles, blocks past *tile_count stop. Not with `up`.
  const int32_t* order = nullptr;
  const int32_t* tiles = nullptr;
  const int32_t* tile_count = nullptr;
  int64_t max_tiles = 0;
};

// Up to kMatSet matrices of one width, bit width and mode over the same x in one launch (q, k
// and v; gate and up): matrix i's product into y[i].
struct QMatSet {
  QMatArgs a[kMatSet];
  float* y[kMatSet];
  int count;
};

// x and y are device buffers.
cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, float* y, cudaStream_t s);
cudaError_t launch_qmatmul_set(const QMatSet& set, const float* x, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
