// out = silu(gate) * up, elementwise, on the device.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace bs::cuda {

cudaError_t launch_silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s);

}  // namespace bs::cuda
