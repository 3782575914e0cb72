#include "cuda/silu-mul.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

__global__ void silu_mul_kernel(const float* gate, const float* __restrict__ up, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = silu_mul(gate[i], up[i]);
}

}  // namespace

cudaError_t launch_silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  BS_LAUNCH(silu_mul_kernel, static_cast<uint32_t>((n + kBlock - 1) / kBlock), kBlock, s)(gate, up, n, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
