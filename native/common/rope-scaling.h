// RoPE frequency tables for rope_scaling types that rescale the per-pair frequencies: llama3 (as
// mlx-lm's Llama3RoPE and Hugging Face's _compute_llama3_parameters compute it), linear, and YaRN
// (Hugging Face's _compute_yarn_parameters: Qwen3's documented long-context setting).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/config-reader.h"
#include "common/model.h"

namespace bs {

struct Llama3Scaling {
  double factor = 1.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192.0;
};

// inv_freq[i] for the rot_dims / 2 pairs: θ^(−2i/rot) where its wavelength 2π/inv_freq is below
// original / high_freq_factor; / factor where it is above original / low_freq_factor; between, the
// blend inv_freq · ((1 − s) / factor + s), s = (original / wavelength − low) / (high − low).
std::vector<double> llama3_inv_freq(int64_t rot_dims, double theta, const Llama3Scaling& s);

struct YarnScaling {
  double factor = 1.0, beta_fast = 32.0, beta_slow = 1.0, original_max_positions = 4096.0;
  bool truncate = true;
};

// YaRN: pairs below the correction dim of beta_fast rotations over the original context keep
// θ^(−2i/rot), pairs above that of beta_slow are divided by factor, a linear ramp between.
std::vector<double> yarn_inv_freq(int64_t rot_dims, double theta, const YarnScaling& s);

// YaRN's default attention factor (cos and sin scaled by it): 0.1·mscale·ln(factor) + 1 above factor 1.
double yarn_mscale(double factor, double mscale = 1.0);

// config.json rope_scaling for a model with RoPE over rot_dims of head_dim (null, "default" or
// multimodal "mrope": plain RoPE): rope_type (or type) "llama3" / "linear" / "yarn" set
// cfg.rope_inv_freq, and YaRN cfg.rope_attention_factor (only with RoPE over the whole head,
// where it is a scale of the attention logits); any other type fails naming the field.
void read_rope_scaling(const ConfigReader& r, ModelConfig& cfg);

// The softmax scale of attention logits: rope_attention_factor² / √head_dim.
inline double attention_scale(const ModelConfig& c) {
  return c.rope_attention_factor * c.rope_attention_factor / std::sqrt(static_cast<double>(c.head_dim));
}

}  // namespace bs
