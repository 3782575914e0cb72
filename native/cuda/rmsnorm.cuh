// RMSNorm on the device: y = x * rsqrt(mean(x²) + eps) * w per row of length d.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace bs::cuda {

cudaError_t launch_rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y,
                           cudaStream_t s);

}  // namespace bs::cuda
