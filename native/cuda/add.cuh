// y += s * x on the device (the residual add).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_add(const float* x, float s, int64_t n, float* y, cudaStream_t st);

}  // namespace bs::BS_CUDA_NS
