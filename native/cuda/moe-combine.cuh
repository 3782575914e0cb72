// The routed experts' outputs of each token summed with their routing weights on the device:
// out[t, c] = Σ_j weights[t, j] · y[t·k + j, c]; both inputs written there by the routing and
// expert kernels.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_moe_combine(const float* y, const float* weights, int64_t n_tok, int k, int64_t d, float* out,
                               cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
