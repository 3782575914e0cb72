// The Gated DeltaNet's recurrence on the device (common/linear-attention.cpp's recurrent form,
// with its input preparation fused): per token and v head h (q/k head h / (Hv / Hk)), q and k
// at unit RMS (eps 1e-6) scaled by 1/Dk and 1/√Dk, β = sigmoid(b), decay e^g with
// g = a_neg · softplus(a + dt_bias); then S ← e^g S; S ← S + β (v − S k) kᵀ; y = S q.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

constexpr int kDeltaRows = 4;       // rows of a head's S one warp keeps in registers
constexpr int kMaxDeltaKDim = 256;  // Dk: a multiple of 32, at most this

struct DeltaArgs {
  const float* qkv;              // [n, 2·Hk·Dk + Hv·Dv] after the convolution: q | k | v
  const float *b, *a;            // [n, Hv] the raw projections
  const float *a_neg, *dt_bias;  // [Hv]
  float* state;                  // S [Hv, Dv, Dk], updated in place
  float* y;                      // [n, Hv, Dv]
  int64_t n, Hk, Hv, Dk, Dv;
};

cudaError_t launch_delta_rule(const DeltaArgs& a, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
