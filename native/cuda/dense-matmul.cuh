// Dense F32/F16/BF16 matrix product on the device: y[i, r] = alpha · W[mat][r] · x[i]
// (+ y[i, r] when accumulate). Also the LoRA delta's two steps and a prerouter head's second
// layer.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"
#include "cuda/kernel-limits.h"

namespace bs::BS_CUDA_NS {

struct DenseArgs {
  const uint8_t* w;  // [n_mats, rows, cols] elements of `type`
  int type;          // ScaleType
  int64_t rows, cols, mat, n;
  bool accumulate = false;
  float alpha = 1.0f;
};

// Up to kMatSet products in one launch, each with its own x and y (the LoRA steps of q, k, v).
struct DenseSet {
  DenseArgs a[kMatSet];
  const float* x[kMatSet];
  float* y[kMatSet];
  int count;
};

cudaError_t launch_dense_matmul(const DenseArgs& a, const float* x, float* y, cudaStream_t s);
cudaError_t launch_dense_matmul_set(const DenseSet& set, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
