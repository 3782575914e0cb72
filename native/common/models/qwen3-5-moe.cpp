// qwen3_5_moe (Qwen3.5 / 3.6 MoE, e.g. 35B-A3B) as mlx-lm / mlx-vlm convert it: the text keys
// live under text_config, tensors under "language_model." (vision_tower.* is not read), and
// the Gated DeltaNet projections are separate (in_proj_qkv, _z, _b, _a). Its attention layers
// rotate with interleaved multimodal RoPE (rope_parameters.mrope_section, [11, 11, 10] of 32
// slots); with text only it equals plain 1-D RoPE. Images arrive through MultimodalInput.
#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  const ConfigReader text = r.has("text_config") ? r.sub("text_config") : r;
  const char* key = mrope_key(text);
  if (key) read_mrope(text.sub(key), cfg);
  read_hybrid_config(text, cfg);
  if (key) check_mrope(text.sub(key), cfg);
  if (cfg.eos_token_ids.empty()) cfg.eos_token_ids = r.int_list("eos_token_id");
  if (cfg.tie_embeddings != r.boolean("tie_word_embeddings", cfg.tie_embeddings)) {
    r.error("tie_word_embeddings", "disagrees with text_config.tie_word_embeddings");
  }
  cfg.weight_prefix = "language_model.";
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  load_hybrid_layer(cfg, t, l, false, out);
}

}  // namespace

const ArchDef& qwen3_5_moe_arch() {
  static const ArchDef def{"qwen3_5_moe", read_config, load_layer};
  return def;
}

}  // namespace bs
