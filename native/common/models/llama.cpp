// llama (Llama 2/3 and the small models built on it) as mlx-lm converts it: GQA attention
// without q/k norms, RoPE over the full head_dim (pairs i, i + head_dim/2, as Hugging Face's
// checkpoints are permuted for), a SwiGLU MLP in every layer; rope_scaling (Llama 3.x's llama3, linear, yarn);
// attention_bias (q/k/v/o_proj) and mlp_bias (gate/up/down_proj) as Hugging Face's LlamaConfig.
#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  read_dense_config(r, cfg);
  cfg.o_bias = cfg.attention_bias;
  cfg.mlp_bias = r.boolean("mlp_bias", false);
  if (r.boolean("rope_traditional", false)) r.error("rope_traditional", "is not supported (only half-split RoPE)");
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  load_layer_base(cfg, t, l, out);
}

}  // namespace

const ArchDef& llama_arch() {
  static const ArchDef def{"llama", read_config, load_layer};
  return def;
}

}  // namespace bs
