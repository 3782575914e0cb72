// qwen3_next (Qwen3-Next-80B-A3B) as mlx-lm converts it: the hybrid layers of models/hybrid.cpp
// with the fused per-k-head in_proj_qkvz / in_proj_ba projections.
#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) { read_hybrid_config(r, cfg); }

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  load_hybrid_layer(cfg, t, l, true, out);
}

}  // namespace

const ArchDef& qwen3_next_arch() {
  static const ArchDef def{"qwen3_next", read_config, load_layer};
  return def;
}

}  // namespace bs
