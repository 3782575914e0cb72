#include "cuda/add.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

__global__ void add_kernel(const float* __restrict__ x, float s, int64_t n, int64_t period, float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Rounded product then sum, as the reference: nvcc would contract `y += s * x` into an FMA.
  if (i < n) y[i] = __fadd_rn(y[i], __fmul_rn(s, x[period > 0 ? i % period : i]));
}

}  // namespace

cudaError_t launch_add(const float* x, float s, int64_t n, float* y, cudaStream_t st, int64_t period) {
  if (n <= 0) return cudaSuccess;
  BS_LAUNCH(add_kernel, static_cast<uint32_t>((n + kBlock - 1) / kBlock), kBlock, st)(x, s, n, period, y);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
