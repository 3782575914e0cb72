#include "cuda/moe-combine.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One thread per (element, token = grid.y).
__global__ void moe_combine_kernel(const float* __restrict__ y, const float* __restrict__ weights, int k, int64_t d,
                                   float* __restrict__ out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, t = blockIdx.y;
  if (c < d) out[t * d + c] = routed_sum(y, weights, k, d, t, c);
}

}  // namespace

cudaError_t launch_moe_combine(const float* y, const float* weights, int64_t n_tok, int k, int64_t d, float* out,
                               cudaStream_t s) {
  if (n_tok <= 0 || d <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((d + kBlock - 1) / kBlock), static_cast<uint32_t>(n_tok));
  BS_LAUNCH(moe_combine_kernel, grid, kBlock, s)(y, weights, k, d, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
