// Softmax top-k routing on the device, one warp per token: logits [n_tok, E] → ids, weights
// [n_tok, top_k] by descending score, ties to the lower id (the reference's order); ids and
// weights stay on the device for the gathered expert matmul.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct SoftmaxTopKArgs {
  int64_t n_tok;
  int n_experts, top_k;  // n_experts ≤ kMaxExperts
  bool norm;
};

cudaError_t launch_route_softmax_topk(const SoftmaxTopKArgs& a, const float* logits, int32_t* ids, float* weights,
                                      cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
