#include "cuda/delta-rule.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kPerLane = kMaxDeltaKDim / 32;

// x · scale / √(mean(x²) + 1e-6) over the Dk elements a warp's lanes hold (e per lane).
__device__ __forceinline__ void rms_scale(float* x, int e, int64_t Dk, float scale) {
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (i < e) ss += x[i] * x[i];
  ss = warp_sum(ss);
  const float inv = scale / sqrtf(ss / static_cast<float>(Dk) + 1e-6f);
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) x[i] *= inv;
}

// One warp per kDeltaRows rows of one head's S (grid: row groups × Hv): each row evolves on its
// own given q, k, its v element and the gates, so the rows never meet. Lane L holds elements
// L, L + 32, … of q, k and its rows (loops of constant length, so they stay in registers); the
// tokens run in order.
__global__ void delta_rule_kernel(DeltaArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t h = blockIdx.y, row0 = static_cast<int64_t>(blockIdx.x) * kDeltaRows;
  const int64_t C = 2 * a.Hk * a.Dk + a.Hv * a.Dv, kh = h / (a.Hv / a.Hk);
  const int e = static_cast<int>(a.Dk / 32);
  const int rows = static_cast<int>(a.Dv - row0 < kDeltaRows ? a.Dv - row0 : kDeltaRows);
  float S[kDeltaRows][kPerLane] = {};
  float* base = a.state + (h * a.Dv + row0) * a.Dk;
#pragma unroll
  for (int r = 0; r < kDeltaRows; ++r)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (r < rows && i < e) S[r][i] = base[r * a.Dk + lane + 32 * i];
  const float inv_dk = 1.0f / static_cast<float>(a.Dk), inv_sqrt_dk = 1.0f / sqrtf(static_cast<float>(a.Dk));
  for (int64_t t = 0; t < a.n; ++t) {
    const float* row = a.qkv + t * C;
    float q[kPerLane] = {}, k[kPerLane] = {};
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (i >= e) continue;
      q[i] = row[kh * a.Dk + lane + 32 * i];
      k[i] = row[a.Hk * a.Dk + kh * a.Dk + lane + 32 * i];
    }
    rms_scale(q, e, a.Dk, inv_dk);
    rms_scale(k, e, a.Dk, inv_sqrt_dk);
    const float braw = a.b[t * a.Hv + h], x = a.a[t * a.Hv + h] + a.dt_bias[h];
    const float beta = 1.0f / (1.0f + expf(-braw));
    const float decay = expf(a.a_neg[h] * (x > 20.0f ? x : log1pf(expf(x))));
    const float* v = row + 2 * a.Hk * a.Dk + h * a.Dv + row0;
    float* y = a.y + (t * a.Hv + h) * a.Dv + row0;
#pragma unroll
    for (int r = 0; r < kDeltaRows; ++r) {
      if (r >= rows) continue;
      float sk = 0.0f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        if (i < e) sk += (S[r][i] *= decay) * k[i];
      const float d = beta * (v[r] - warp_sum(sk));
      float sq = 0.0f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        if (i < e) sq += (S[r][i] += d * k[i]) * q[i];
      sq = warp_sum(sq);
      if (lane == 0) y[r] = sq;
    }
  }
#pragma unroll
  for (int r = 0; r < kDeltaRows; ++r)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (r < rows && i < e) base[r * a.Dk + lane + 32 * i] = S[r][i];
}

}  // namespace

cudaError_t launch_delta_rule(const DeltaArgs& a, cudaStream_t s) {
  if (a.n <= 0 || a.Hv <= 0) return cudaSuccess;
  if (a.Dk % 32 != 0 || a.Dk > kMaxDeltaKDim || a.Hk <= 0 || a.Hv % a.Hk != 0) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<uint32_t>((a.Dv + kDeltaRows - 1) / kDeltaRows), static_cast<uint32_t>(a.Hv));
  BS_LAUNCH(delta_rule_kernel, grid, 32, s)(a);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
