#include "cuda/to-half.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

__global__ void to_half_kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float_to_half(x[i]);
}

}  // namespace

cudaError_t launch_to_half(const float* x, int64_t n, uint16_t* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  BS_LAUNCH(to_half_kernel, static_cast<uint32_t>((n + kBlock - 1) / kBlock), kBlock, s)(x, n, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
