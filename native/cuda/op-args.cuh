// Host-side helpers the .cu host code shares to fill kernel argument blocks from weight
// matrices (cuda-ops.cu per call, cuda-decoder.cu per token).
#pragma once
#include <cstdint>

#include "common/backend.h"
#include "cuda/kernel-limits.h"
#include "cuda/qmatmul.cuh"

namespace bs::BS_CUDA_NS {

inline int type_code(DType t) { return t == DType::F32 ? kF32 : t == DType::F16 ? kF16 : kBF16; }

// The quantised matmul's shape for w over n rows of work, without its weights.
inline QMatArgs shape_args(const WeightMatrix& w, int64_t n) {
  QMatArgs a{};
  a.scale_type = type_code(w.dtype);
  a.bits = w.bits;
  a.group = w.group;
  a.rows = w.rows;
  a.cols = w.cols;
  a.n = n;
  a.mat = 0;
  return a;
}

}  // namespace bs::BS_CUDA_NS
