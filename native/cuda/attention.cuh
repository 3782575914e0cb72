// Causal GQA attention on the device over a KV cache in device memory, float32 or f16
// [*, n_kv, head_dim]: query t of n_tok sits at position pos0 + t (decode: n_tok = 1; prefill:
// many) and attends to cache rows 0..pos0+t; q head h reads kv head h / (n_q / n_kv). A long
// decode context is split over blocks (flash-decoding) and their partial softmaxes merged.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"
#include "cuda/kernel-limits.h"

namespace bs::BS_CUDA_NS {

struct AttentionArgs {
  int n_q, n_kv, head_dim;  // head_dim ≤ kMaxHeadDim
  int64_t pos0, n_tok;
  bool kv_f16;
  float scale;
  // Decode (n_tok = 1) splits the keys over up to kAttnSplits blocks per head when given
  // scratch of attention_partial_floats(n_q, head_dim); nullptr: one block per head.
  float* partial = nullptr;
  // When set, query t's position is positions[t] (device memory) rather than pos0 + t: a captured
  // decode graph replays at later positions. pos0 still sizes the split.
  const int32_t* positions = nullptr;
};

// Key ranges a launch splits each head's keys over (1 unless decoding with scratch).
inline int attention_splits(const AttentionArgs& a) {
  if (!a.partial || a.n_tok != 1) return 1;
  const int64_t ranges = (a.pos0 + 1 + kAttnSplitKeys - 1) / kAttnSplitKeys;
  return static_cast<int>(ranges < kAttnSplits ? ranges : kAttnSplits);
}

inline int64_t attention_partial_floats(int n_q, int head_dim) {
  return static_cast<int64_t>(n_q) * kAttnSplits * (head_dim + 2);
}

cudaError_t launch_attention(const AttentionArgs& a, const float* q, const void* k, const void* v, float* out,
                             cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
