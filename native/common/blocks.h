// The shared transformer blocks, written once for every architecture: attention over the
// KV cache, the dense MLP and the MoE FFN (exact expert path).
#pragma once
#include <cstdint>
#include <vector>

#include "common/lora.h"
#include "common/model.h"

namespace bs {

// Reusable buffers of one session (grown on demand, never shrunk) plus the bytes of weights
// the blocks read, for active-bytes-per-token accounting.
struct Scratch {
  std::vector<float> q, k, v, attn, gate, up, act, rows, logits, weights, out;
  std::vector<int32_t> ids, positions, order_ids;
  std::vector<int64_t> order, expert_start;
  uint64_t bytes_touched = 0;
  uint64_t experts_touched = 0;  // distinct (layer, expert) pairs computed
};

// y = linear(x) (+ lora: y += s·B(A x), unmerged) and counts the bytes read as touched.
void run_linear(const Model& m, const Linear& l, const float* x, int64_t n, float* y, Scratch& s,
                const LoraWeights* lora = nullptr);

// xn[n, hidden] at positions pos0.. → out[n, hidden]. Writes this chunk's keys and values
// into the caches [≥ pos0 + n, n_kv, head_dim] (float32, or F16 when m.kv_f16()) before
// attending. `lora` (nullable): the session's adapter for this layer (its Q/K/V/O slots).
void attention_block(const Model& m, const AttentionWeights& w, const float* xn, int64_t n, int64_t pos0,
                     void* k_cache, void* v_cache, Scratch& s, float* out, const LayerLora* lora = nullptr);

// out[n, hidden] = down(silu(gate(xn)) * up(xn)); `lora` adds its Gate/Up/Down slots.
void mlp_block(const Model& m, const MlpWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora = nullptr);

// out[n, hidden] = Σ_k w_k · expert_k(xn) (+ shared experts, with `lora`'s Gate/Up/Down), experts
// computed once each from their bytes for all the tokens routed to them (the `exact` path).
void moe_block(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora = nullptr);

}  // namespace bs
