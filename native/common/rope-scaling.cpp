#include "common/rope-scaling.h"

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

std::vector<double> read_rope_scaling(const ConfigReader& root, int64_t rot_dims, double theta) {
  if (!root.has("rope_scaling")) return {};
  const ConfigReader r = root.sub("rope_scaling");
  const char* type_key = r.has("type") ? "type" : "rope_type";
  const std::string type = r.string(type_key, "default");
  if (type == "default") return {};  // mlx-lm ignores a factor here
  if (type != "llama3" && type != "linear") {
    r.error(type_key, "is not supported: rope_scaling must be null or of rope_type \"llama3\" or \"linear\"");
  }
  Llama3Scaling s;
  s.factor = r.number("factor", 0.0);
  if (type == "linear") {  // every frequency divided by factor
    std::vector<double> inv = llama3_inv_freq(rot_dims, theta, Llama3Scaling{});
    for (double& f : inv) f /= s.factor;
    return inv;
  }
  s.low_freq_factor = r.number("low_freq_factor", 0.0, 1.0);
  s.high_freq_factor = r.number("high_freq_factor", 0.0, 4.0);
  if (s.high_freq_factor <= s.low_freq_factor) r.error("high_freq_factor", "must exceed low_freq_factor");
  s.original_max_positions = static_cast<double>(r.integer("original_max_position_embeddings", 1, 8192));
  return llama3_inv_freq(rot_dims, theta, s);
}

}  // namespace bs
