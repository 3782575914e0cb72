#include "cuda/qk-norm-rope.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kWarps = 4;  // heads per block

// One warp per head (q heads, then k heads; grid.y = token). The norm as rmsnorm.cu (squares in
// double, the scaled value rounded to float), then the rotation as rope.cu on those floats; the
// warp's lanes own strided elements for the norm and strided pairs for the rotation, with
// __syncwarp between (a pair's halves are other lanes' norm outputs).
__global__ void qk_norm_rope_kernel(QkNormRopeArgs a, float* q, float* k, const float* __restrict__ q_w,
                                    const float* __restrict__ k_w, const int32_t* __restrict__ positions,
                                    const double* __restrict__ inv_freq) {
  const int lane = threadIdx.x & 31;
  const int h = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (h >= a.n_q + a.n_kv) return;  // whole warps
  const bool is_q = h < a.n_q;
  float* v = is_q ? q + (t * a.n_q + h) * a.head_dim : k + (t * a.n_kv + (h - a.n_q)) * a.head_dim;
  const float* w = is_q ? q_w : k_w;
  double ss = 0.0;
  for (int i = lane; i < a.head_dim; i += 32) ss += static_cast<double>(v[i]) * v[i];
  ss = warp_sum(ss);
  const double inv = rsqrt(ss / static_cast<double>(a.head_dim) + a.eps);
  for (int i = lane; i < a.head_dim; i += 32) v[i] = static_cast<float>(v[i] * inv * w[i]);
  __syncwarp();
  const int half = a.rot_dims / 2;
  for (int i = lane; i < half; i += 32) {
    const double angle = positions[t] * inv_freq[i];
    const double c = cos(angle), s = sin(angle);
    const double x0 = v[i], x1 = v[i + half];
    v[i] = static_cast<float>(x0 * c - x1 * s);
    v[i + half] = static_cast<float>(x1 * c + x0 * s);
  }
}

}  // namespace

cudaError_t launch_qk_norm_rope(const QkNormRopeArgs& a, float* q, float* k, const float* q_w, const float* k_w,
                                const int32_t* positions, const double* inv_freq, cudaStream_t s) {
  const int heads = a.n_q + a.n_kv;
  if (a.n_tok <= 0 || heads <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((heads + kWarps - 1) / kWarps), static_cast<uint32_t>(a.n_tok));
  BS_LAUNCH(qk_norm_rope_kernel, grid, kWarps * 32, s)(a, q, k, q_w, k_w, positions, inv_freq);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
