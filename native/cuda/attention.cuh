// Causal GQA attention on the device over a KV cache in device memory, float32 or f16
// [*, n_kv, head_dim]: query t of n_tok sits at position pos0 + t (decode: n_tok = 1; prefill:
// many) and attends to cache rows 0..pos0+t; q head h reads kv head h / (n_q / n_kv).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct AttentionArgs {
  int n_q, n_kv, head_dim;  // head_dim ≤ kMaxHeadDim
  int64_t pos0, n_tok;
  bool kv_f16;
  float scale;
};

cudaError_t launch_attention(const AttentionArgs& a, const float* q, const void* k, const void* v, float* out,
                             cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
