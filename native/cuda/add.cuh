// y += s * x on the device.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace bs::cuda {

cudaError_t launch_add(const float* x, float s, int64_t n, float* y, cudaStream_t st);

}  // namespace bs::cuda
