// y += s * x on the device (the residual add); with `period`, x[i % period] (a bias over rows).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_add(const float* x, float s, int64_t n, float* y, cudaStream_t st, int64_t period = 0);

}  // namespace bs::BS_CUDA_NS
