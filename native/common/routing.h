// Expert routing: one function per family, used by every caller (the base router now, the
// prerouter later, whose predicted logits go through the same call so the prefetched set is
// the routed set). The routing width K is a per-call parameter (top-k override).
#pragma once
#include <cstdint>
#include <vector>

#include "common/backend.h"

namespace bs {

enum class RoutingFamily : uint8_t {
  SoftmaxTopK,   // Qwen3-MoE: softmax over all experts, top-k, optional renormalisation
  SigmoidGroup,  // DeepSeek-V3 / GLM-4.5 noaux_tc: sigmoid, correction bias, group masking
};

struct RouterSpec {
  RoutingFamily family = RoutingFamily::SoftmaxTopK;
  int n_experts = 0;
  int top_k = 0;  // the model's own width
  bool norm_topk_prob = true;
  int n_group = 1, topk_group = 1;  // SigmoidGroup only
  float routed_scaling_factor = 1.0f;
  std::vector<float> correction_bias;  // SigmoidGroup: [n_experts], selection only

  // The largest K this spec can route to (group masking may leave fewer experts eligible).
  int max_k() const;
};

// logits[n_tok, n_experts] → ids, weights [n_tok, k], by descending selection score (ties to
// the lower expert id). k = spec.top_k when k ≤ 0.
void route(const Dispatch& d, const ExecCtx& ctx, const RouterSpec& spec, const float* logits, int64_t n_tok, int k,
           int32_t* ids, float* weights);

}  // namespace bs
