// Lightning attention (bailing_moe_linear's linear layers, a simple gated linear attention with
// fixed per-head decays) on the scalar CPU path: the recurrence per head for decode and its
// chunked form for prefill (the same result up to float32 rounding).
#pragma once
#include <cstdint>

#include "common/blocks.h"

namespace bs {

// Per head h over n tokens of q, k, v [n, heads, D] (q already scaled):
// S ← e^{g_h} S + k vᵀ; y = qᵀ S, with S [D, D] (k index first; state = S of every head).
// chunk 0: token by token; chunk > 0: blocks of `chunk` tokens, each touching S once.
void lightning_rule(const ExecCtx& ctx, int64_t heads, int64_t D, const float* log_decay, const float* q,
                    const float* k, const float* v, int64_t n, int64_t chunk, float* state, Scratch& s, float* y);

// Tokens per block of the chunked form that prefill uses.
constexpr int64_t kLightningChunk = 64;

// The per-head log-decays of linear layer `layer` of `n_layers` (mlx-lm / vLLM): −slope_h ·
// (1 − max(0, layer − 1) / max(1, n_layers − 1) + 1e-5), ALiBi slopes over `heads`.
void lightning_log_decays(int64_t heads, int64_t layer, int64_t n_layers, float* out);

// One lightning layer: xn [n, hidden] at positions pos0.. → out [n, hidden], advancing `state`
// (LinearAttnConfig::state_floats() floats). Decode (n = 1) allocates nothing once warm.
// `lora` (nullable): the session's adapter for this layer (LinQkv, LinZ = g_proj, LinOut = dense).
void lightning_attention_block(const Model& m, const LinearAttnWeights& w, const float* xn, int64_t n, int64_t pos0,
                               float* state, Scratch& s, float* out, const LayerLora* lora = nullptr);

}  // namespace bs
