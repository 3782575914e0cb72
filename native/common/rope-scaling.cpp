#include "common/rope-scaling.h"

#include <algorithm>
#include <cmath>

namespace bs {

std::vector<double> llama3_inv_freq(int64_t rot_dims, double theta, const Llama3Scaling& s) {
  const double low_wavelen = s.original_max_positions / s.low_freq_factor;
  const double high_wavelen = s.original_max_positions / s.high_freq_factor;
  std::vector<double> inv(static_cast<size_t>(rot_dims / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    const double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rot_dims));
    const double wavelen = 2.0 * M_PI / f;
    if (wavelen > low_wavelen) {
      inv[i] = f / s.factor;
    } else if (wavelen > high_wavelen) {
      const double smooth =
          (s.original_max_positions / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      inv[i] = f * ((1.0 - smooth) / s.factor + smooth);
    } else {
      inv[i] = f;
    }
  }
  return inv;
}

double yarn_mscale(double factor, double mscale) { return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

std::vector<double> yarn_inv_freq(int64_t rot_dims, double theta, const YarnScaling& s) {
  const double dim = static_cast<double>(rot_dims);
  // The pair index whose wavelength fits `rotations` times into the original context.
  auto correction_dim = [&](double rotations) {
    return dim * std::log(s.original_max_positions / (rotations * 2.0 * M_PI)) / (2.0 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;  // no zero-width ramp
  std::vector<double> inv(static_cast<size_t>(rot_dims / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    const double f = std::pow(theta, -2.0 * static_cast<double>(i) / dim);
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    inv[i] = f / s.factor * ramp + f * (1.0 - ramp);  // extrapolated (kept) below low, interpolated above high
  }
  return inv;
}

void read_rope_scaling(const ConfigReader& root, ModelConfig& cfg) {
  cfg.rope_inv_freq.clear();
  cfg.rope_attention_factor = 1.0;
  if (!root.has("rope_scaling")) return;
  const ConfigReader r = root.sub("rope_scaling");
  const char* type_key = r.has("type") ? "type" : "rope_type";
  const std::string type = r.string(type_key, "default");
  if (type == "default" || type == "mrope") return;  // mlx-lm ignores a factor here
  if (type != "llama3" && type != "linear" && type != "yarn") {
    r.error(type_key, "is not supported: rope_scaling must be null or of rope_type \"llama3\", \"linear\" or \"yarn\"");
  }
  const double factor = r.number("factor", 0.0);
  const int64_t rot = cfg.rot_dims;
  if (type == "linear") {  // every frequency divided by factor
    cfg.rope_inv_freq = llama3_inv_freq(rot, cfg.rope_theta, Llama3Scaling{});
    for (double& f : cfg.rope_inv_freq) f /= factor;
  } else if (type == "yarn") {
    YarnScaling y;
    y.factor = factor;
    y.beta_fast = r.number("beta_fast", 0.0, 32.0);
    y.beta_slow = r.number("beta_slow", 0.0, 1.0);
    y.truncate = r.boolean("truncate", true);
    y.original_max_positions =
        static_cast<double>(r.has("original_max_position_embeddings") ? r.integer("original_max_position_embeddings", 1)
                                                                      : root.integer("max_position_embeddings", 1));
    cfg.rope_inv_freq = yarn_inv_freq(rot, cfg.rope_theta, y);
    // As Hugging Face: attention_factor if given, else the mscale ratio when both are non-zero.
    const double ms = r.has("mscale") ? r.number("mscale", -1.0) : 0.0;
    const double ms_all = r.has("mscale_all_dim") ? r.number("mscale_all_dim", -1.0) : 0.0;
    cfg.rope_attention_factor = r.has("attention_factor")    ? r.number("attention_factor", 0.0)
                                : ms != 0.0 && ms_all != 0.0 ? yarn_mscale(factor, ms) / yarn_mscale(factor, ms_all)
                                                             : yarn_mscale(factor);
    if (cfg.rope_attention_factor != 1.0 && rot != cfg.head_dim) {
      r.error("attention_factor", "of YaRN is supported only with RoPE over the whole head (rotary dims " +
                                      std::to_string(rot) + " of head_dim " + std::to_string(cfg.head_dim) + ")");
    }
  } else {
    Llama3Scaling s;
    s.factor = factor;
    s.low_freq_factor = r.number("low_freq_factor", 0.0, 1.0);
    s.high_freq_factor = r.number("high_freq_factor", 0.0, 4.0);
    if (s.high_freq_factor <= s.low_freq_factor) r.error("high_freq_factor", "must exceed low_freq_factor");
    s.original_max_positions = static_cast<double>(r.integer("original_max_position_embeddings", 1, 8192));
    cfg.rope_inv_freq = llama3_inv_freq(rot, cfg.rope_theta, s);
  }
}

}  // namespace bs
