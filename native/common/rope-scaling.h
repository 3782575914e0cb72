// RoPE frequency tables for rope_scaling types that rescale the per-pair frequencies
// (llama3), as mlx-lm's Llama3RoPE and Hugging Face's _compute_llama3_parameters compute them.
#pragma once
#include <cstdint>
#include <vector>

#include "common/config-reader.h"

namespace bs {

struct Llama3Scaling {
  double factor = 1.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192.0;
};

// inv_freq[i] for the rot_dims / 2 pairs: θ^(−2i/rot) where its wavelength 2π/inv_freq is below
// original / high_freq_factor; / factor where it is above original / low_freq_factor; between, the
// blend inv_freq · ((1 − s) / factor + s), s = (original / wavelength − low) / (high − low).
std::vector<double> llama3_inv_freq(int64_t rot_dims, double theta, const Llama3Scaling& s);

// config.json rope_scaling (null: plain RoPE, empty result) for a model with RoPE over rot_dims:
// rope_type (or type) "llama3" gives its table, "linear" θ^(−2i/rot) / factor, "default" plain
// RoPE; any other type fails naming the field.
std::vector<double> read_rope_scaling(const ConfigReader& r, int64_t rot_dims, double theta);

}  // namespace bs
