// The shared transformer blocks, written once for every architecture: attention over the
// KV cache, the dense MLP and the MoE FFN (exact expert path).
#pragma once
#include <cstdint>
#include <vector>

#include "common/lora.h"
#include "common/model.h"
#include "common/step-profile.h"

namespace bs {

// Rows [begin, end) of a batch sorted by expert all go to `expert`.
struct ExpertGroup {
  int32_t expert;
  int64_t begin, end;
};

// Reusable buffers of one session (grown on demand, never shrunk) plus the bytes of weights
// the blocks read, for active-bytes-per-token accounting.
struct Scratch {
  std::vector<float> q, k, v, attn, gate, up, act, rows, logits, weights, out, sub_x, sub_act;
  // Hybrid layers: the gated attention's q|gate and gate, the shared-expert gate, Gated DeltaNet.
  std::vector<float> q_gate, attn_gate, shared_gate, lin_proj, lin_proj2, lin_qkv, lin_z, lin_b, lin_a, lin_conv, lin_y,
      lin_work;
  std::vector<int32_t> ids, positions, order_ids, sub_ids;
  std::vector<int64_t> order, expert_start;
  std::vector<ExpertGroup> groups;
  // The expert executor's per-layer lists (group indices, their experts or slots, the slots it
  // pinned, the groups computed from the file instead): reused, so decode allocates nothing.
  std::vector<int> group_which, group_miss, slot_pinned;
  std::vector<int32_t> group_ids, miss_ids;
  void clear_expert_lists() {
    group_which.clear();
    group_miss.clear();
    slot_pinned.clear();
    group_ids.clear();
    miss_ids.clear();
  }
  // RoPE positions of the chunk: position of token t = pos0 + rope_shift + t, or with mrope its
  // (time, height, width) positions mrope[t], mrope[stride + t], mrope[2·stride + t].
  int64_t rope_shift = 0;
  const int32_t* mrope = nullptr;
  int64_t mrope_stride = 0;
  uint64_t bytes_touched = 0;
  uint64_t experts_touched = 0;    // distinct (layer, expert) pairs computed
  int top_k = 0;                   // routing width of the pass in progress (the session's); 0 = the model's
  StepProfile* profile = nullptr;  // the pass's stage times (null: not profiled)
};

// Multimodal RoPE: which position (0 time, 1 height, 2 width) rotates frequency slot i:
// interleaved T,H,W,T,… while each section lasts (Qwen3-VL), or contiguous sections (Qwen2-VL).
int mrope_axis(const ModelConfig& c, int i);

// xn[n, hidden] at positions pos0.. → out[n, hidden]. Writes this chunk's keys and values
// into the caches [≥ pos0 + n, n_kv, head_dim] (float32, or F16 when m.kv_f16()) before
// attending. `lora` (nullable): the session's adapter for this layer (its Q/K/V/O slots).
void attention_block(const Model& m, const AttentionWeights& w, const float* xn, int64_t n, int64_t pos0, void* k_cache,
                     void* v_cache, Scratch& s, float* out, const LayerLora* lora = nullptr);

// out[n, hidden] = down(silu(gate(xn)) * up(xn)); `lora` adds its Gate/Up/Down slots.
// `side` (nullable): one more linear of xn into side_out [n, side rows] (the shared expert's
// scalar gate), in gate and up's parallel loop on a decode step.
void mlp_block(const Model& m, const MlpWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora = nullptr, const Linear* side = nullptr, float* side_out = nullptr);

// s.ids, s.weights [n, K] = the layer's router on xn through its routing function (K = routing_k).
// The routing width a pass runs at: the session's (s.top_k) or, unset, the model's.
inline int routing_k(const Model& m, const Scratch& s) { return s.top_k > 0 ? s.top_k : m.top_k; }

void route_tokens(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s);

// Sorts the n·k routed (token, slot) rows by expert: s.order[r] = token·k + slot,
// s.order_ids[r] = expert, s.rows[r] = that token's xn; returns the groups of equal experts.
std::vector<ExpertGroup>& sort_routed_rows(const Model& m, const float* xn, int64_t n, int k, const int32_t* ids,
                                           Scratch& s);

// act[rows, hidden] = down(silu(gate x) · up x) with matrix ids[r] of the stacked views
// v = {gate, up, down} for row r (expert ids over the file, or slot ids over a slot slab).
void expert_rows(const Model& m, const WeightMatrix* v, const int32_t* ids, const float* x, int64_t rows, Scratch& s,
                 float* act);

// out[n, hidden] = Σ_k weights · expert(xn) (+ shared experts, with `lora`'s Gate/Up/Down) for the
// given routing; MoE layer `layer` runs its phase's expert path when the model has an executor
// (layer < 0: exact).
void moe_experts(const Model& m, int64_t layer, const MoeWeights& w, const float* xn, int64_t n, Phase phase,
                 const int32_t* ids, const float* weights, Scratch& s, float* out, const LayerLora* lora = nullptr);

// Scans routed expert e's float slices once (its first check): NaN or ±Inf throws bs::Error
// naming the file, tensor and expert. data[r] is the slice of w.expert_parts[r] where it was read
// to (a slot, a layer buffer), so a streamed expert is scanned in memory; null: the mapping.
void check_expert_finite(const MoeWeights& w, int64_t e, const uint8_t* const* data = nullptr);

// The router then moe_experts on the exact path: each routed expert computed once from its
// bytes for all the tokens routed to it.
void moe_block(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora = nullptr);

}  // namespace bs
