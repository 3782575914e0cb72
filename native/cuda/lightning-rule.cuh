// Lightning attention's recurrence on the device (bailing_moe_linear's linear layers; the
// recurrent form of common/lightning-attention.cpp): per head h with decay a = e^{log_decay[h]},
// S ← a S + k vᵀ; y = Sᵀ q over S [D, D], q scaled by `scale` first.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct LightningArgs {
  const float *q, *k, *v;  // [n, H, D] each, q before its scale
  const float* log_decay;  // [H]
  float* state;            // S [H, D, D], updated in place
  float* y;                // [n, H, D]
  int64_t n, H, D;
  float scale;
};

// D: a multiple of 32 up to kMaxDeltaKDim (delta-rule.cuh).
cudaError_t launch_lightning_rule(const LightningArgs& a, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
