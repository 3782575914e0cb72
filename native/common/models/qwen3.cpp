// qwen3 (dense Qwen3, 0.6B … 32B: policy and verifier models) as mlx-lm converts it: qwen3_moe's
// attention (GQA, per-head q/k RMSNorm before RoPE over the full head_dim) with a SwiGLU MLP
// of intermediate_size in every layer.
#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  read_dense_config(r, cfg);
  cfg.qk_norm = true;
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  load_layer_base(cfg, t, l, out);
}

}  // namespace

const ArchDef& qwen3_arch() {
  static const ArchDef def{"qwen3", read_config, load_layer};
  return def;
}

}  // namespace bs
