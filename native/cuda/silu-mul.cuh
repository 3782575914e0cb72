// out = silu(gate) * up, elementwise, on the device (the SiLU gate; out may alias gate).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
