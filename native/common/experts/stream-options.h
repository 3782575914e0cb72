// The profile knobs of the expert executor: which path runs the routed experts in each phase,
// slot and cache sizes, the I/O pool and the prerouter. Defaults keep the plain exact path.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "common/io/model-files.h"

namespace bs {

enum class ExpertPath : uint8_t {
  Exact,       // dedupe routed experts, compute from their bytes in the mapped file
  Staged,      // K fixed slots per layer + a zero slot; slot table routed id → slot; loads on I/O threads
  Hot,         // per-layer resident set by decayed use counts; misses fall back to exact
  WholeLayer,  // read the layer's stacked tensors once (prefill: nearly every expert is hit)
};
const char* path_name(ExpertPath p);
// "exact" | "staged" | "hot" | "whole-layer"; false when unknown.
bool parse_path(std::string_view s, ExpertPath& out);
bool parse_io_mode(std::string_view s, IoMode& out);

enum class PrerouterMode : uint8_t {
  Off,
  Zero,  // zero-training heads: head N = the router of layer N+1 on layer N's hidden state
  File,  // heads from a safetensors file (Edge0 layout)
};

enum class Phase : uint8_t { Prefill, Decode };

struct StreamOptions {
  ExpertPath prefill_path = ExpertPath::Exact;
  ExpertPath decode_path = ExpertPath::Exact;
  int slots = 0;             // staged slots per MoE layer; 0 = the routing width K
  uint64_t cache_bytes = 0;  // hot resident sets over all MoE layers; 0 = 2·K experts per layer
  int io_threads = 4;
  // Whole-layer prefill reads a layer whole only when the chunk routes to at least this share of
  // its experts (or its read is already on its way); fewer run on the exact path, which reads
  // just those (moe-30b at 4 GiB: 8 tokens 2.4 s against 5.2 s whole, 64 tokens 7.8 against 5.1).
  double whole_layer_share = 0.7;
  IoMode io_mode = IoMode::PageCache;
  PrerouterMode prerouter = PrerouterMode::Off;
  std::string prerouter_file;
  bool measure_recall = false;  // also run the true router where a prediction routes, to count recall
  // Device memory for routed experts in a CUDA session's expert slots, per session (0: 85% of the
  // free memory less the dense weights and the KV cache; cuda-decoder.cu, session_slots).
  uint64_t device_expert_bytes = 0;
  // Hot path (Edge0's defaults): counts decay by 0.75 per token, predicted experts get +2.0
  // when the resident set is re-chosen every 4 tokens.
  int hot_interval = 4;
  double hot_decay = 0.75, hot_bonus = 2.0;

  ExpertPath path(Phase p) const { return p == Phase::Prefill ? prefill_path : decode_path; }
};

}  // namespace bs
