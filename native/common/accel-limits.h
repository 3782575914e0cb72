// Shape limits the GPU kernel sets (Metal, CUDA) share: attention keeps a head's dims in lane
// registers (head_dim ≤ max_head_dim), routing keeps a token's experts in one 32-lane group
// (≤ max_experts, groups as bits of one word).
#pragma once
#include "common/backend.h"

namespace bs {

inline bool fits_attention(const AttentionParams& p, int max_head_dim) {
  return p.head_dim > 0 && p.head_dim <= max_head_dim && p.n_kv_heads > 0 && p.n_q_heads % p.n_kv_heads == 0;
}

inline bool fits_softmax_topk(const SoftmaxTopKParams& p, int max_experts) {
  return p.n_experts > 0 && p.n_experts <= max_experts && p.top_k > 0 && p.top_k <= p.n_experts;
}

inline bool fits_sigmoid_group(const SigmoidGroupParams& p, int max_experts) {
  return p.n_experts > 0 && p.n_experts <= max_experts && p.top_k > 0 && p.top_k <= p.n_experts && p.n_group >= 1 &&
         p.n_group <= 32 && p.n_experts % p.n_group == 0 && (p.n_group == 1 || p.n_experts / p.n_group >= 2) &&
         p.topk_group >= 1 && p.topk_group <= p.n_group;
}

}  // namespace bs
