// Affine-quantised (MLX layout) matrix product on the device: y[i, r] = W[mat_i][r, :] · x[i, :].
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace bs::cuda {

struct QMatArgs {
  const uint8_t* codes;   // [n_mats, rows, cols*bits/8], codes LSB-first in little-endian words
  const uint8_t* scales;  // [n_mats, rows, cols/group]
  const uint8_t* biases;
  int scale_type;   // ScaleType
  int bits, group;  // 4 or 8; 32, 64 or 128
  int64_t rows, cols;
  const int32_t* mats;  // per input row: which matrix of the stack (nullptr: matrix 0)
};

// x [m, cols] and y [m, rows] are device buffers; one warp per (output row, input row).
cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, int64_t m, float* y, cudaStream_t s);

}  // namespace bs::cuda
