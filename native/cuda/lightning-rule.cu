#include "cuda/lightning-rule.cuh"

#include "cuda/delta-rule.cuh"
#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kPerLane = kMaxDeltaKDim / 32;

// One warp per kDeltaRows columns j of a head's S (grid: column groups × H): column j evolves on
// its own given k, v[j] and the decay. Lane L holds rows L, L + 32, … of k, q and its columns
// (loops of constant length, so they stay in registers); the tokens run in order.
__global__ void lightning_rule_kernel(LightningArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t h = blockIdx.y, col0 = static_cast<int64_t>(blockIdx.x) * kDeltaRows, D = a.D;
  const int e = static_cast<int>(D / 32);
  const int cols = static_cast<int>(D - col0 < kDeltaRows ? D - col0 : kDeltaRows);
  const float decay = expf(a.log_decay[h]);
  float S[kDeltaRows][kPerLane] = {};
  float* base = a.state + h * D * D + col0;
#pragma unroll
  for (int c = 0; c < kDeltaRows; ++c)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (c < cols && i < e) S[c][i] = base[(lane + 32 * i) * D + c];
  for (int64_t t = 0; t < a.n; ++t) {
    const int64_t at = (t * a.H + h) * D;
    float q[kPerLane] = {}, k[kPerLane] = {};
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (i >= e) continue;
      q[i] = a.q[at + lane + 32 * i] * a.scale;
      k[i] = a.k[at + lane + 32 * i];
    }
#pragma unroll
    for (int c = 0; c < kDeltaRows; ++c) {
      if (c >= cols) continue;
      const float v = a.v[at + col0 + c];
      float acc = 0.0f;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (i >= e) continue;
        S[c][i] = __fadd_rn(__fmul_rn(decay, S[c][i]), __fmul_rn(k[i], v));
        acc += q[i] * S[c][i];
      }
      acc = warp_sum(acc);
      if (lane == 0) a.y[at + col0 + c] = acc;
    }
  }
#pragma unroll
  for (int c = 0; c < kDeltaRows; ++c)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (c < cols && i < e) base[(lane + 32 * i) * D + c] = S[c][i];
}

}  // namespace

cudaError_t launch_lightning_rule(const LightningArgs& a, cudaStream_t s) {
  if (a.n <= 0 || a.H <= 0) return cudaSuccess;
  if (a.D % 32 != 0 || a.D > kMaxDeltaKDim) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<uint32_t>((a.D + kDeltaRows - 1) / kDeltaRows), static_cast<uint32_t>(a.H));
  BS_LAUNCH(lightning_rule_kernel, grid, 32, s)(a);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
