// Gated DeltaNet (Qwen3-Next / Qwen3.5 linear-attention layers) on the CPU path: the
// depthwise causal conv with its history, the delta-rule recurrence per v head for decode and
// its chunked form for prefill (the same result up to float32 rounding).
#pragma once
#include <cstdint>

#include "common/blocks.h"

namespace bs {

// out[t, c] = silu(Σ_j w[c, j] · in[t + j, c]) over in = (history [K-1, C] then x [n, C]); the
// history becomes the last K-1 rows of in. w [C, K]: tap K-1 multiplies the current token.
void causal_conv_silu(const ExecCtx& ctx, const float* w, int64_t C, int64_t K, float* history, const float* x,
                      int64_t n, float* out);

// The delta rule over n tokens of qkv [n, conv_dim] (q, k already L2-normalised and scaled),
// log-decays g [n, v_heads] and betas [n, v_heads]: per v head h (q/k head h / (Hv/Hk)),
// S ← e^g S; S ← S + β (v − S k) kᵀ; y = S q with S [v_dim, k_dim] (state = S of every head).
// chunk 0: token by token; chunk > 0: blocks of `chunk` tokens, each touching S once.
void gated_delta_rule(const ExecCtx& ctx, const LinearAttnConfig& c, const float* qkv, const float* g,
                      const float* beta, int64_t n, int64_t chunk, float* state, Scratch& s, float* y);

// Tokens per block of the chunked form that prefill uses.
constexpr int64_t kDeltaChunk = 64;

// One Gated DeltaNet layer: xn [n, hidden] → out [n, hidden], advancing `state` (conv history
// then S, LinearAttnConfig::state_floats() floats). Decode (n = 1) allocates nothing once warm.
// `lora` (nullable): the session's adapter for this layer (its Lin* slots).
void linear_attention_block(const Model& m, const LinearAttnWeights& w, const float* xn, int64_t n, float* state,
                            Scratch& s, float* out, const LayerLora* lora = nullptr);

}  // namespace bs
