// qwen3_vl_moe (Qwen3-VL-30B-A3B and siblings) as mlx-vlm converts it: the language model is
// qwen3_moe read from config.json "text_config", its tensors under "language_model.", with
// multimodal RoPE (rope_scaling.mrope_section over the rotary frequency slots). The vision
// tower runs outside the engine (ONNX); its embeddings reach prefill through MultimodalInput.
#include <numeric>

#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  const std::optional<ConfigReader> rs = r.section("rope_scaling");
  if (!rs) r.error("rope_scaling", "must give mrope_section for qwen3_vl_moe");
  for (int64_t s : rs->int_list("mrope_section")) cfg.mrope_section.push_back(static_cast<int>(s));
  cfg.mrope_interleaved = rs->boolean("mrope_interleaved", false);
  if (cfg.mrope_section.size() != 3) rs->error("mrope_section", "must list 3 sections (time, height, width)");
  qwen3_moe_arch().read_config(r, cfg);
  const int sum = std::accumulate(cfg.mrope_section.begin(), cfg.mrope_section.end(), 0);
  if (sum != cfg.rot_dims / 2) {
    rs->error("mrope_section", "must sum to head_dim / 2 = " + std::to_string(cfg.rot_dims / 2) + " frequency slots");
  }
}

}  // namespace

const ArchDef& qwen3_vl_moe_arch() {
  static const ArchDef def{"qwen3_vl_moe", read_config, qwen3_moe_arch().load_layer, "text_config", "language_model."};
  return def;
}

}  // namespace bs
