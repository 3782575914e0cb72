#include "cuda/causal-conv.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One thread per channel walks the tokens in order with the last K-1 inputs in registers, so
// the history it rewrites at the end is only its own channel's. The window ends at slot M-1
// (the current token) whatever K, so every index is a constant after unrolling.
__global__ void causal_conv_kernel(const float* __restrict__ w, int64_t C, int K, float* history,
                                   const float* __restrict__ x, int64_t n, float* __restrict__ out) {
  constexpr int M = kMaxConvKernel;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int off = M - K;
  float win[M] = {}, tap[M] = {};
#pragma unroll
  for (int j = 0; j < M; ++j)
    if (j >= off) tap[j] = w[c * K + j - off];
#pragma unroll
  for (int j = 0; j < M - 1; ++j)
    if (j >= off) win[j] = history[(j - off) * C + c];
  for (int64_t t = 0; t < n; ++t) {
    win[M - 1] = x[t * C + c];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < M; ++j)
      if (j >= off) s = __fadd_rn(s, __fmul_rn(tap[j], win[j]));
    out[t * C + c] = s / (1.0f + expf(-s));
#pragma unroll
    for (int j = 0; j < M - 1; ++j) win[j] = win[j + 1];
  }
#pragma unroll
  for (int j = 0; j < M - 1; ++j)
    if (j >= off) history[(j - off) * C + c] = win[j];
}

}  // namespace

cudaError_t launch_causal_conv_silu(const float* w, int64_t C, int K, float* history, const float* x, int64_t n,
                                    float* out, cudaStream_t s) {
  if (C <= 0 || n <= 0) return cudaSuccess;
  if (K < 1 || K > kMaxConvKernel) return cudaErrorInvalidValue;
  BS_LAUNCH(causal_conv_kernel, static_cast<uint32_t>((C + kBlock - 1) / kBlock), kBlock, s)
  (w, C, K, history, x, n, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
