#include "common/quant.h"

#include <cstring>

#include "common/error.h"
#include "common/json.h"

namespace bs {

uint64_t WeightMatrix::mat_bytes() const {
  uint64_t b = static_cast<uint64_t>(rows) * row_bytes();
  if (quantised()) b += 2ull * rows * groups_per_row() * dtype_size(dtype);
  return b;
}

uint32_t q_code(const WeightMatrix& m, int64_t mat, int64_t row, int64_t col) {
  const uint64_t bit = static_cast<uint64_t>(col) * m.bits;
  uint32_t word;
  std::memcpy(&word, m.w_row(mat, row) + (bit / 32) * 4, 4);  // little-endian host
  return (word >> (bit % 32)) & ((1u << m.bits) - 1u);
}

float dequant(const WeightMatrix& m, int64_t mat, int64_t row, int64_t col) {
  if (!m.quantised()) return load_float(m.w_row(mat, row), m.dtype, static_cast<size_t>(col));
  const size_t g = m.sb_index(mat, row) + static_cast<size_t>(col / m.group);
  const float scale = load_float(m.scales, m.dtype, g);
  const float bias = load_float(m.biases, m.dtype, g);
  return scale * static_cast<float>(q_code(m, mat, row, col)) + bias;
}

void dequant_row(const WeightMatrix& m, int64_t mat, int64_t row, float* out) {
  const uint8_t* src = m.w_row(mat, row);
  if (!m.quantised()) {
    for (int64_t c = 0; c < m.cols; ++c) out[c] = load_float(src, m.dtype, static_cast<size_t>(c));
    return;
  }
  // Word by word: element p of a word is bits [bits*p, bits*p + bits) (LSB first).
  const int per_word = 32 / m.bits;
  const uint32_t mask = (1u << m.bits) - 1u;
  const size_t g0 = m.sb_index(mat, row);
  for (int64_t g = 0; g < m.groups_per_row(); ++g) {
    const float scale = load_float(m.scales, m.dtype, g0 + g);
    const float bias = load_float(m.biases, m.dtype, g0 + g);
    for (int64_t c = g * m.group; c < (g + 1) * m.group; c += per_word) {
      uint32_t word;
      std::memcpy(&word, src + (c / per_word) * 4, 4);
      for (int p = 0; p < per_word; ++p) {
        out[c + p] = scale * static_cast<float>((word >> (m.bits * p)) & mask) + bias;
      }
    }
  }
}

namespace {

QuantParams parse_params(const Json& v, const std::string& where, std::optional<QuantParams> fallback) {
  QuantParams p = fallback.value_or(QuantParams{});
  const Json* bits = v.find("bits");
  const Json* group = v.find("group_size");
  if (!bits && !fallback) fail(where, ".bits is missing");
  if (!group && !fallback) fail(where, ".group_size is missing");
  if (bits) {
    if (!bits->is_int() || (bits->as_int() != 4 && bits->as_int() != 8)) {
      fail(where, ".bits must be 4 or 8 (MLX affine quantisation this engine runs), got ", bits->brief());
    }
    p.bits = static_cast<int>(bits->as_int());
  }
  if (group) {
    if (!group->is_int() || (group->as_int() != 32 && group->as_int() != 64 && group->as_int() != 128)) {
      fail(where, ".group_size must be 32, 64 or 128, got ", group->brief());
    }
    p.group = static_cast<int>(group->as_int());
  }
  if (const Json* mode = v.find("mode")) {
    if (!mode->is_string() || mode->as_string() != "affine") {
      fail(where, ".mode must be \"affine\" (the only MLX mode supported), got ", mode->brief());
    }
  }
  return p;
}

}  // namespace

QuantConfig QuantConfig::from_config(const Json& config, const std::string& what) {
  QuantConfig q;
  const char* key = "quantization";
  const Json* qc = config.find(key);
  if (!qc) {
    key = "quantization_config";
    qc = config.find(key);
  }
  if (!qc || qc->is_null()) return q;
  const std::string where = what + ": " + key;
  if (!qc->is_object()) fail(where, " must be an object, got ", qc->brief());
  if (qc->find("bits") || qc->find("group_size")) q.global_ = parse_params(*qc, where, std::nullopt);
  for (const auto& [k, v] : qc->members()) {
    if (k == "bits" || k == "group_size" || k == "mode") continue;
    const std::string mw = where + "[\"" + k + "\"]";
    if (v.is_bool()) {
      q.modules_[k] = v.as_bool() ? q.global_ : std::nullopt;
    } else if (v.is_object()) {
      q.modules_[k] = parse_params(v, mw, q.global_);
    } else {
      fail(mw, " must be an object {bits, group_size} or a boolean, got ", v.brief());
    }
  }
  return q;
}

std::optional<QuantParams> QuantConfig::for_module(const std::string& path) const {
  auto it = modules_.find(path);
  if (it != modules_.end()) return it->second;
  return global_;
}

}  // namespace bs
