// Device helpers shared by the CUDA kernels: element loads (scales, biases, dense weights and
// KV caches stored as F32, F16 or BF16 exactly as in the file), warp reductions by butterfly
// shuffles (every lane gets the same bits) and the routing order of candidates.
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/cuda-api.h"
#include "cuda/kernel-limits.h"

namespace bs::BS_CUDA_NS {

#ifdef BS_CUDA_EMULATION
__device__ __forceinline__ float half_to_float(uint16_t h) { return bs::f16_to_f32(h); }
__device__ __forceinline__ uint16_t float_to_half(float f) { return bs::f32_to_f16(f); }
#else
__device__ __forceinline__ float half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t float_to_half(float f) { return __half_as_ushort(__float2half_rn(f)); }
#endif

__device__ __forceinline__ float load_elem(const uint8_t* p, int type, int64_t i) {
  if (type == kF32) return reinterpret_cast<const float*>(p)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
  if (type == kBF16) return __uint_as_float(static_cast<uint32_t>(h) << 16);
  return half_to_float(h);
}

// Sum over aligned groups of `width` lanes (a power of two ≤ 32); every lane of a group gets it.
template <class T>
__device__ __forceinline__ T warp_sum(T v, int width = 32) {
  for (int off = width / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Token t's routed rows [t·k + j, d] weighted by its routing at column c: moe-combine.cu's sum,
// also read by rmsnorm.cu's joined residual add (one expression, so both round alike).
__device__ __forceinline__ float routed_sum(const float* __restrict__ rows, const float* __restrict__ weights, int k,
                                            int64_t d, int64_t t, int64_t c) {
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) acc += weights[t * k + j] * rows[(t * k + j) * d + c];
  return acc;
}

// SiLU(g)·u as silu-mul.cu computes it (the fused down projection reads x through it).
__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }
__device__ __forceinline__ float4 silu_mul4(const float4& g, const float4& u) {
  return {silu_mul(g.x, u.x), silu_mul(g.y, u.y), silu_mul(g.z, u.z), silu_mul(g.w, u.w)};
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// The larger of two (value, index) candidates: ties go to the lower index (the routing order).
__device__ __forceinline__ bool better(float v, uint32_t i, float best_v, uint32_t best_i) {
  return v > best_v || (v == best_v && i < best_i);
}

// The best (value, index) over the warp's candidates; every lane gets it.
__device__ __forceinline__ uint32_t warp_argmax(float v, uint32_t i, float& best_v) {
  for (int off = 16; off > 0; off >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, off);
    const uint32_t oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (better(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  best_v = v;
  return i;
}

// One round of a warp's top-k, lane L holding candidates L, L + 32, ... in v[0..per_lane) of n:
// the best not yet taken (ties to the lower id), marked taken by its lane; every lane gets its
// id and value.
__device__ __forceinline__ uint32_t warp_take_best(const float* v, int per_lane, int n, uint32_t& taken, float& win_v) {
  const int lane = threadIdx.x & 31;
  float best_v = -INFINITY;
  uint32_t best_i = 0xffffffffu;
  for (int e = 0; e < per_lane; ++e) {
    const uint32_t id = lane + 32 * e;
    if (static_cast<int>(id) < n && !(taken & (1u << e)) && better(v[e], id, best_v, best_i)) {
      best_v = v[e];
      best_i = id;
    }
  }
  const uint32_t win = warp_argmax(best_v, best_i, win_v);
  if (static_cast<int>(win % 32) == lane) taken |= 1u << (win / 32);
  return win;
}

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

}  // namespace bs::BS_CUDA_NS
