#include "cuda/qk-norm-rope.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kWarps = 4;  // heads per block

// One warp per head (q heads, then k heads, then with a store the v heads; grid.y = token). The
// norm (skipped when the weights are null) as rmsnorm.cu (squares in double, the scaled value rounded to float), then
// the rotation as rope.cu on those floats; the warp's lanes own strided elements for the norm and strided pairs for the
// rotation, with __syncwarp between (a pair's halves are other lanes' norm outputs). A store converts the k head's
// final floats (and a v head's rows) as to-half.cu does.
__global__ void qk_norm_rope_kernel(QkNormRopeArgs a, float* q, float* k, const float* __restrict__ q_w,
                                    const float* __restrict__ k_w, const int32_t* __restrict__ positions,
                                    const double* __restrict__ inv_freq, KvStore store, bool stores) {
  const int lane = threadIdx.x & 31;
  const int h = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x >> 5);
  const int64_t t = blockIdx.y;
  if (h >= a.n_q + a.n_kv * (stores ? 2 : 1)) return;  // whole warps
  // The row of this token's head h_kv in the cache (from the chunk's first position on).
  auto cache_at = [&](uint16_t* cache, int h_kv) {
    return cache + (static_cast<int64_t>(store.row[0]) + t) * a.n_kv * a.head_dim + h_kv * a.head_dim;
  };
  if (h >= a.n_q + a.n_kv) {
    const int hv = h - a.n_q - a.n_kv;
    const float* src = store.v_rows + (t * a.n_kv + hv) * a.head_dim;
    uint16_t* dst = cache_at(store.v, hv);
    for (int i = lane; i < a.head_dim; i += 32) dst[i] = float_to_half(src[i]);
    return;
  }
  const bool is_q = h < a.n_q;
  float* v = is_q ? q + (t * a.n_q + h) * a.head_dim : k + (t * a.n_kv + (h - a.n_q)) * a.head_dim;
  if (const float* w = is_q ? q_w : k_w) {  // null: RoPE only (models without q/k norms)
    double ss = 0.0;
    for (int i = lane; i < a.head_dim; i += 32) ss += static_cast<double>(v[i]) * v[i];
    ss = warp_sum(ss);
    const double inv = rsqrt(ss / static_cast<double>(a.head_dim) + a.eps);
    for (int i = lane; i < a.head_dim; i += 32) v[i] = static_cast<float>(v[i] * inv * w[i]);
    __syncwarp();
  }
  const int half = a.rot_dims / 2;
  for (int i = lane; i < half; i += 32) {
    const double angle = positions[t] * inv_freq[i];
    const double c = cos(angle), s = sin(angle);
    const double x0 = v[i], x1 = v[i + half];
    v[i] = static_cast<float>(x0 * c - x1 * s);
    v[i + half] = static_cast<float>(x1 * c + x0 * s);
  }
  if (!stores || is_q) return;
  __syncwarp();
  uint16_t* dst = cache_at(store.k, h - a.n_q);
  for (int i = lane; i < a.head_dim; i += 32) dst[i] = float_to_half(v[i]);
}

}  // namespace

cudaError_t launch_qk_norm_rope(const QkNormRopeArgs& a, float* q, float* k, const float* q_w, const float* k_w,
                                const int32_t* positions, const double* inv_freq, cudaStream_t s,
                                const KvStore* store) {
  const int heads = a.n_q + a.n_kv * (store ? 2 : 1);
  if (a.n_tok <= 0 || heads <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((heads + kWarps - 1) / kWarps), static_cast<uint32_t>(a.n_tok));
  BS_LAUNCH(qk_norm_rope_kernel, grid, kWarps * 32, s)
  (a, q, k, q_w, k_w, positions, inv_freq, store ? *store : KvStore{}, store != nullptr);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
