// The Gated DeltaNet's depthwise causal convolution with SiLU on the device, over n tokens:
// out[t, c] = silu(Σ_j w[c, j] · in[t + j, c]) with in = (history [K-1, C] then x [n, C]); the
// history becomes the last K-1 rows of in (common/linear-attention.h, causal_conv_silu).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

constexpr int kMaxConvKernel = 8;  // taps a thread keeps in registers

// w [C, K] (tap K-1 multiplies the current token), history [K-1, C] updated in place.
cudaError_t launch_causal_conv_silu(const float* w, int64_t C, int K, float* history, const float* x, int64_t n,
                                    float* out, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
