// A prerouter head's first layer on the device over the features f = [hidden; onehot(cur);
// onehot(prev)] without building f: y[r] = W[r, :H]·hidden + Σ_j W[r, H + cur_j] +
// Σ_j W[r, H + E + prev_j] (gelu-erf applied when `gelu`), W dense [rows, H + 2E]. cur and prev
// are the routing ids the device wrote (nothing is read back).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct PrerouterArgs {
  const uint8_t* w;
  int type;  // ScaleType
  int64_t rows, hidden, n_experts;
  int k;
  bool gelu;
};

cudaError_t launch_prerouter_linear(const PrerouterArgs& a, const float* hidden, const int32_t* cur,
                                    const int32_t* prev, float* y, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
