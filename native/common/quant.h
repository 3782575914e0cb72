// Weight matrices as they lie in the file: plain F16/BF16/F32, or MLX affine quantised
// (codes packed LSB-first into little-endian uint32 words along the input axis, one scale and
// one bias per group, w = scale * q + bias). The dequant functions here are the spec.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/dtype.h"

namespace bs {

class Json;

enum class WFormat : uint8_t { Dense, Affine };

// A matrix [rows = out, cols = in], or a stack of n_mats of them (stacked experts [E, out, in]).
struct WeightMatrix {
  WFormat format = WFormat::Dense;
  DType dtype = DType::F32;  // Dense: element type; Affine: type of scales and biases
  int bits = 0, group = 0;   // Affine only
  int64_t n_mats = 1, rows = 0, cols = 0;
  const uint8_t* w = nullptr;  // Dense: elements; Affine: packed codes
  const uint8_t* scales = nullptr;
  const uint8_t* biases = nullptr;

  bool quantised() const { return format == WFormat::Affine; }
  // Bytes of one row of w.
  size_t row_bytes() const {
    return quantised() ? static_cast<size_t>(cols) * bits / 8 : static_cast<size_t>(cols) * dtype_size(dtype);
  }
  int64_t groups_per_row() const { return quantised() ? cols / group : 0; }
  const uint8_t* w_row(int64_t mat, int64_t row) const { return w + (mat * rows + row) * row_bytes(); }
  // Offset (in elements) of the first scale/bias of a row.
  size_t sb_index(int64_t mat, int64_t row) const { return static_cast<size_t>((mat * rows + row) * groups_per_row()); }
  // Bytes one matrix of the stack occupies in the file (codes + scales + biases).
  uint64_t mat_bytes() const;
};

// The integer code of element (row, col) of matrix `mat`: bits [bits*col, bits*col + bits) of the row.
uint32_t q_code(const WeightMatrix& m, int64_t mat, int64_t row, int64_t col);
// Element (row, col) as a float: scale * q + bias for Affine, the stored value for Dense.
float dequant(const WeightMatrix& m, int64_t mat, int64_t row, int64_t col);
// A whole row into out[cols].
void dequant_row(const WeightMatrix& m, int64_t mat, int64_t row, float* out);

struct QuantParams {
  int bits = 4;
  int group = 64;
};

// config.json "quantization" (or "quantization_config"): a global bits/group plus per-module
// overrides keyed by module path, e.g. "model.layers.0.mlp.gate": {"group_size": 64, "bits": 8}.
class QuantConfig {
 public:
  // Throws bs::Error naming the field when a value is unsupported.
  static QuantConfig from_config(const Json& config, const std::string& what);
  // Parameters for the module at `path`; nullopt when the config has none for it.
  std::optional<QuantParams> for_module(const std::string& path) const;
  bool present() const { return global_.has_value() || !modules_.empty(); }

 private:
  std::optional<QuantParams> global_;
  std::map<std::string, std::optional<QuantParams>> modules_;  // nullopt: explicitly not quantised
};

}  // namespace bs
