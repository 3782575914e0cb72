// x[i] *= sigmoid(g[(i / period) · g_stride + (i % period) · g_step]) on the device: the
// output-gated attention (the gate beside each head's q in q_proj's rows: g_step 1) and the
// sigmoid-gated shared expert (one gate per token: g_step 0).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_sigmoid_mul(float* x, const float* g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step,
                               cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
