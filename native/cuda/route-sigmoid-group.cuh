// Sigmoid group routing (DeepSeek-V3 style) on the device, one warp per token: logits
// [n_tok, E] → ids, weights [n_tok, top_k] by descending selection score, ties to the lower id.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct SigmoidGroupArgs {
  int64_t n_tok;
  int n_experts, top_k, n_group, topk_group;  // n_experts ≤ kMaxExperts, n_group ≤ 32
  bool norm;
  float scaling;
  const float* bias;  // device [n_experts], or nullptr
};

cudaError_t launch_route_sigmoid_group(const SigmoidGroupArgs& a, const float* logits, int32_t* ids, float* weights,
                                       cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
