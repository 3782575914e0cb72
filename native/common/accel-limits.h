// Limits the GPU kernel sets (Metal, CUDA) share: the weight formats their kernels read in
// place; attention keeps a head's dims in lane registers (head_dim ≤ max_head_dim); routing
// keeps a token's experts in one 32-lane group (≤ max_experts, groups as bits of one word).
#pragma once
#include <cstdint>

#include "common/backend.h"

namespace bs {

// Bytes of every matrix of a stack: codes (or dense elements), and scales (or biases).
inline size_t code_bytes(const WeightMatrix& w) { return static_cast<size_t>(w.n_mats * w.rows) * w.row_bytes(); }
inline size_t sb_bytes(const WeightMatrix& w) {
  return static_cast<size_t>(w.n_mats * w.rows * w.groups_per_row()) * dtype_size(w.dtype);
}

// F32/F16/BF16 elements (dense) or scales and biases (affine: 4/8-bit codes in aligned 32-bit
// words, MLX groups 32/64/128), each aligned to its element size.
inline bool gpu_readable(const WeightMatrix& w) {
  auto aligned = [](const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
  if (!is_float_weight(w.dtype) || !aligned(w.w, w.quantised() ? 4 : dtype_size(w.dtype))) return false;
  if (!w.quantised()) return true;
  return (w.bits == 4 || w.bits == 8) && (w.group == 32 || w.group == 64 || w.group == 128) &&
         aligned(w.scales, dtype_size(w.dtype)) && aligned(w.biases, dtype_size(w.dtype));
}

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
