#include "cuda/silu-mul.cuh"

namespace bs::cuda {

namespace {

__global__ void silu_mul_kernel(const float* __restrict__ gate, const float* __restrict__ up, int64_t n,
                                float* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

}  // namespace

cudaError_t launch_silu_mul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  silu_mul_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(gate, up, n, out);
  return cudaGetLastError();
}

}  // namespace bs::cuda
