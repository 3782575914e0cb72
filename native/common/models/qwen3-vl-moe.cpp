// qwen3_vl_moe (Qwen3-VL-30B-A3B and siblings) as mlx-vlm converts it: the language model is
// qwen3_moe read from config.json "text_config", its tensors under "language_model.", with
// multimodal RoPE (mrope_section of rope_scaling, or transformers 5's rope_parameters). The vision
// tower runs outside the engine (ONNX); its embeddings reach prefill through MultimodalInput.
#include <numeric>

#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& root, ModelConfig& cfg) {
  const ConfigReader r = root.sub("text_config");
  const char* key = mrope_key(r);
  if (!key) r.error("rope_scaling", "must give mrope_section for qwen3_vl_moe (or rope_parameters must)");
  read_mrope(r.sub(key), cfg);
  qwen3_moe_arch().read_config(r, cfg);
  check_mrope(r.sub(key), cfg);
  if (cfg.eos_token_ids.empty()) cfg.eos_token_ids = root.int_list("eos_token_id");
  cfg.weight_prefix = "language_model.";
}

}  // namespace

const char* mrope_key(const ConfigReader& text) {
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (text.has(key) && text.sub(key).has("mrope_section")) return key;
  }
  return nullptr;
}

void read_mrope(const ConfigReader& rs, ModelConfig& cfg) {
  cfg.mrope_section.clear();
  for (int64_t s : rs.int_list("mrope_section")) {
    if (s < 0 || s > (1 << 20)) rs.error("mrope_section", "must list sections in [0, 1048576] frequency slots");
    cfg.mrope_section.push_back(static_cast<int>(s));
  }
  cfg.mrope_interleaved = rs.boolean("mrope_interleaved", false);
  if (cfg.mrope_section.size() != 3) rs.error("mrope_section", "must list 3 sections (time, height, width)");
}

void check_mrope(const ConfigReader& rs, const ModelConfig& cfg) {
  const int sum = std::accumulate(cfg.mrope_section.begin(), cfg.mrope_section.end(), 0);
  if (sum != cfg.rot_dims / 2) {
    rs.error("mrope_section",
             "must sum to the rotary dims / 2 = " + std::to_string(cfg.rot_dims / 2) + " frequency slots");
  }
}

const ArchDef& qwen3_vl_moe_arch() {
  static const ArchDef def{"qwen3_vl_moe", read_config, qwen3_moe_arch().load_layer};
  return def;
}

}  // namespace bs
