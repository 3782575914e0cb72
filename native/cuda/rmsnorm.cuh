// RMSNorm on the device: y = x * rsqrt(mean(x²) + eps) * w per row of length d; y may alias x.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y,
                           cudaStream_t s);
// The residual add first, in place (x += res, as add.cu), then y = RMSNorm(x): the decoder's
// residual stream and the next norm in one launch.
cudaError_t launch_add_rmsnorm(float* x, const float* res, const float* w, int64_t n_rows, int64_t d, float eps,
                               float* y, cudaStream_t s);
// The same with res the routed experts' rows [n_rows · k, d], combined with `weights` [n_rows, k]
// as moe-combine.cu does first, then `shared` [n_rows, d] (the shared experts' output; may be
// null) added as add.cu does, scaled first by sigmoid(gate[row]) where `gate` [n_rows] is given
// (as sigmoid-mul.cu): a MoE layer's combine, residual add and the next norm in one.
cudaError_t launch_combine_add_rmsnorm(float* x, const float* rows, const float* weights, int k, const float* shared,
                                       const float* gate, const float* w, int64_t n_rows, int64_t d, float eps,
                                       float* y, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
