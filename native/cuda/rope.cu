#include "cuda/rope.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One thread per pair of a head (grid.y = token); the angle and rotation in double as the
// reference (a few thousand pairs per token: the cost does not show).
__global__ void rope_kernel(float* x, const int32_t* __restrict__ positions, const double* __restrict__ inv_freq,
                            int n_heads, int head_dim, int rot_dims) {
  const int half = rot_dims / 2;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, t = blockIdx.y;
  if (j >= static_cast<int64_t>(n_heads) * half) return;
  const int h = static_cast<int>(j / half), i = static_cast<int>(j % half);
  if (inv_freq[i] == 0.0) return;  // another axis's pair (multimodal RoPE)
  const double angle = positions[t] * inv_freq[i];
  const double c = cos(angle), s = sin(angle);
  float* v = x + (t * n_heads + h) * head_dim;
  const double a = v[i], b = v[i + half];
  v[i] = static_cast<float>(a * c - b * s);
  v[i + half] = static_cast<float>(b * c + a * s);
}

}  // namespace

cudaError_t launch_rope(float* x, const int32_t* positions, const double* inv_freq, int64_t n_tok, int n_heads,
                        int head_dim, int rot_dims, cudaStream_t s) {
  const int64_t pairs = static_cast<int64_t>(n_heads) * (rot_dims / 2);
  if (n_tok <= 0 || pairs <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((pairs + kBlock - 1) / kBlock), static_cast<uint32_t>(n_tok));
  BS_LAUNCH(rope_kernel, grid, kBlock, s)(x, positions, inv_freq, n_heads, head_dim, rot_dims);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
