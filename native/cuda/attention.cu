#include "cuda/attention.cuh"

#include <cmath>

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kWarps = 4;
constexpr int kBatch = 4;  // keys a warp scores together (their loads in flight at once)

// One block per (query head, token, key range): its warps take batches of kBatch keys of the
// range with an online softmax; each lane holds head dims lane, lane + 32, ... The warps' partial
// results are merged through shared memory into the output, or with several ranges (grid.z)
// into the range's (Σ w·v, max, Σ w) for attention_merge_kernel.
__global__ void attention_kernel(AttentionArgs a, const float* __restrict__ q, const uint8_t* __restrict__ k,
                                 const uint8_t* __restrict__ v, float* __restrict__ out) {
  __shared__ float part_acc[kWarps * kMaxHeadDim];
  __shared__ float part_m[kWarps], part_l[kWarps];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.x, hd = a.head_dim, type = a.kv_f16 ? kF16 : kF32;
  const int64_t t = blockIdx.y, splits = gridDim.z;
  const int g = h / (a.n_q / a.n_kv), per_lane = (hd + 31) / 32;
  const int64_t kv_stride = static_cast<int64_t>(a.n_kv) * hd;
  const int64_t n_keys = (a.positions ? a.positions[t] : a.pos0 + t) + 1;
  const int64_t k0 = n_keys * blockIdx.z / splits, k1 = n_keys * (blockIdx.z + 1) / splits;
  const float* qv = q + (t * a.n_q + h) * hd;
  float qr[kMaxHeadDim / 32], acc[kMaxHeadDim / 32];
  for (int e = 0; e < per_lane; ++e) {
    const int c = lane + 32 * e;
    qr[e] = c < hd ? qv[c] : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = k0 + warp * kBatch; j0 < k1; j0 += kWarps * kBatch) {
    float s[kBatch];
    for (int b = 0; b < kBatch; ++b) {
      const int64_t base = (j0 + b) * kv_stride + static_cast<int64_t>(g) * hd;
      float d = 0.0f;
      for (int e = 0; e < per_lane; ++e) {
        const int c = lane + 32 * e;
        if (c < hd && j0 + b < k1) d += qr[e] * load_elem(k, type, base + c);
      }
      s[b] = d;
    }
    float m_new = m;
    for (int b = 0; b < kBatch; ++b) {
      s[b] = j0 + b < k1 ? warp_sum(s[b]) * a.scale : -INFINITY;
      m_new = fmaxf(m_new, s[b]);  // key j0 is in range: finite
    }
    const float corr = expf(m - m_new);
    float w[kBatch], w_sum = 0.0f;
    for (int b = 0; b < kBatch; ++b) w[b] = expf(s[b] - m_new), w_sum += w[b];
    l = l * corr + w_sum;
    for (int e = 0; e < per_lane; ++e) {
      const int c = lane + 32 * e;
      float add = 0.0f;
      for (int b = 0; b < kBatch; ++b) {
        if (c < hd && j0 + b < k1)
          add += w[b] * load_elem(v, type, (j0 + b) * kv_stride + static_cast<int64_t>(g) * hd + c);
      }
      acc[e] = acc[e] * corr + add;
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
  for (int w = 0; w < kWarps; ++w) big = fmaxf(big, part_m[w]);
  float denom = 0.0f;
  for (int w = 0; w < kWarps; ++w) denom += part_l[w] * expf(part_m[w] - big);
  float* part = splits > 1 ? a.partial + ((t * a.n_q + h) * splits + blockIdx.z) * (hd + 2) : nullptr;
  for (int c = tid; c < hd; c += kWarps * 32) {
    float num = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (part_m[w] != -INFINITY) num += part_acc[w * kMaxHeadDim + c] * expf(part_m[w] - big);
    }
    if (splits == 1) out[(t * a.n_q + h) * hd + c] = num / denom;
    else part[c] = num;
  }
  if (splits > 1 && tid == 0) part[hd] = big, part[hd + 1] = denom;
}

// One block per (query head, token): the key ranges' partial softmaxes merged (every range holds
// at least one key, so each max is finite).
__global__ void attention_merge_kernel(AttentionArgs a, int splits, float* __restrict__ out) {
  const int h = blockIdx.x, hd = a.head_dim;
  const int64_t t = blockIdx.y;
  const float* part = a.partial + (t * a.n_q + h) * splits * (hd + 2);
  float big = -INFINITY;
  for (int s = 0; s < splits; ++s) big = fmaxf(big, part[s * (hd + 2) + hd]);
  float denom = 0.0f;
  for (int s = 0; s < splits; ++s) denom += part[s * (hd + 2) + hd + 1] * expf(part[s * (hd + 2) + hd] - big);
  for (int c = threadIdx.x; c < hd; c += blockDim.x) {
    float num = 0.0f;
    for (int s = 0; s < splits; ++s) num += part[s * (hd + 2) + c] * expf(part[s * (hd + 2) + hd] - big);
    out[(t * a.n_q + h) * hd + c] = num / denom;
  }
}

}  // namespace

cudaError_t launch_attention(const AttentionArgs& a, const float* q, const void* k, const void* v, float* out,
                             cudaStream_t s) {
  if (a.n_tok <= 0) return cudaSuccess;
  // Decode over a long cache: ranges of kAttnSplitKeys keys (each range ≥ 1 key).
  const int splits = attention_splits(a);
  const dim3 grid(static_cast<uint32_t>(a.n_q), static_cast<uint32_t>(a.n_tok), static_cast<uint32_t>(splits));
  BS_LAUNCH(attention_kernel, grid, kWarps * 32, s)
  (a, q, static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v), out);
  if (splits > 1) {
    const dim3 merge(static_cast<uint32_t>(a.n_q), static_cast<uint32_t>(a.n_tok));
    BS_LAUNCH(attention_merge_kernel, merge, kWarps * 32, s)(a, splits, out);
  }
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
