#include "cuda/attention.cuh"

#include <cmath>

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kWarps = 4;

// One block per (query head, token), its warps taking every kWarps-th key with an online
// softmax; each lane holds head dims lane, lane + 32, ... The warps' partial results are merged
// through shared memory.
__global__ void attention_kernel(AttentionArgs a, const float* __restrict__ q, const uint8_t* __restrict__ k,
                                 const uint8_t* __restrict__ v, float* __restrict__ out) {
  __shared__ float part_acc[kWarps * kMaxHeadDim];
  __shared__ float part_m[kWarps], part_l[kWarps];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.x, hd = a.head_dim, type = a.kv_f16 ? kF16 : kF32;
  const int64_t t = blockIdx.y;
  const int g = h / (a.n_q / a.n_kv), per_lane = (hd + 31) / 32;
  const int64_t kv_stride = static_cast<int64_t>(a.n_kv) * hd, n_keys = a.pos0 + t + 1;
  const float* qv = q + (t * a.n_q + h) * hd;
  float qr[kMaxHeadDim / 32], acc[kMaxHeadDim / 32];
  for (int e = 0; e < per_lane; ++e) {
    const int c = lane + 32 * e;
    qr[e] = c < hd ? qv[c] : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t j = warp; j < n_keys; j += kWarps) {
    const int64_t base = j * kv_stride + static_cast<int64_t>(g) * hd;
    float d = 0.0f;
    for (int e = 0; e < per_lane; ++e) {
      const int c = lane + 32 * e;
      if (c < hd) d += qr[e] * load_elem(k, type, base + c);
    }
    const float s = warp_sum(d) * a.scale;
    const float m_new = fmaxf(m, s), corr = expf(m - m_new), w = expf(s - m_new);
    l = l * corr + w;
    for (int e = 0; e < per_lane; ++e) {
      const int c = lane + 32 * e;
      acc[e] = acc[e] * corr + (c < hd ? w * load_elem(v, type, base + c) : 0.0f);
    }
    m = m_new;
  }
  for (int e = 0; e < per_lane; ++e) {
    const int c = lane + 32 * e;
    if (c < hd) part_acc[warp * kMaxHeadDim + c] = acc[e];
  }
  if (lane == 0) {
    part_m[warp] = m;
    part_l[warp] = l;
  }
  __syncthreads();
  // A warp that saw no key holds m = -inf, l = 0: its weight exp(m - M) is 0.
  float big = -INFINITY;
  for (int s = 0; s < kWarps; ++s) big = fmaxf(big, part_m[s]);
  float denom = 0.0f;
  for (int s = 0; s < kWarps; ++s) denom += part_l[s] * expf(part_m[s] - big);
  for (int c = tid; c < hd; c += kWarps * 32) {
    float num = 0.0f;
    for (int s = 0; s < kWarps; ++s) {
      if (part_m[s] != -INFINITY) num += part_acc[s * kMaxHeadDim + c] * expf(part_m[s] - big);
    }
    out[(t * a.n_q + h) * hd + c] = num / denom;
  }
}

}  // namespace

cudaError_t launch_attention(const AttentionArgs& a, const float* q, const void* k, const void* v, float* out,
                             cudaStream_t s) {
  if (a.n_tok <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>(a.n_q), static_cast<uint32_t>(a.n_tok));
  BS_LAUNCH(attention_kernel, grid, kWarps * 32, s)
  (a, q, static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v), out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
