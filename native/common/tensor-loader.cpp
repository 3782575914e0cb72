#include "common/tensor-loader.h"

#include "common/error.h"

namespace bs {

TensorLoader::TensorLoader(const WeightStore& store, const QuantConfig& quant, std::string arch)
    : store_(store), quant_(quant), arch_(std::move(arch)) {}

const TensorInfo& TensorLoader::require(const std::string& name) const {
  const TensorInfo* t = store_.find(prefix_ + name);
  if (!t) {
    fail(store_.dir(), ": missing tensor ", prefix_ + name, ", which the ", arch_,
         " architecture needs for this config.json (", store_.tensor_count(), " tensors in ", store_.files().size(),
         " file(s))");
  }
  return *t;
}

void TensorLoader::check_shape(const TensorInfo& t, const std::vector<int64_t>& want, const std::string& why) const {
  if (t.shape != want) {
    fail(*t.file, ": tensor ", t.name, " has shape ", t.shape_str(), " but config.json implies ", shape_to_string(want),
         " (", why, ")");
  }
}

void TensorLoader::check_finite(const TensorInfo& t) const {
  const int64_t i = first_non_finite(t.data, t.dtype, static_cast<size_t>(t.numel()));
  if (i >= 0) {
    fail(*t.file, ": tensor ", t.name, " holds a non-finite value (NaN or ±Inf) at element ", i,
         "; the model's weights are corrupt");
  }
}

WeightMatrix TensorLoader::matrix(const std::string& path, int64_t n, int64_t out, int64_t in, bool stacked,
                                  bool lazy_finite) {
  // Hugging Face names a stacked expert parameter without ".weight" (experts.gate_up_proj).
  const bool bare = stacked && !has(path + ".weight") && has(path);
  const TensorInfo& w = require(bare ? path : path + ".weight");
  std::vector<int64_t> lead;
  if (stacked) lead.push_back(n);
  auto dims = [&](int64_t a, int64_t b) {
    std::vector<int64_t> s = lead;
    s.push_back(a);
    s.push_back(b);
    return s;
  };
  WeightMatrix m;
  m.n_mats = n;
  m.rows = out;
  m.cols = in;
  m.w = w.data;
  const TensorInfo* scales = store_.find(prefix_ + path + ".scales");
  if (!scales) {
    if (!is_float_weight(w.dtype)) {
      fail(*w.file, ": tensor ", w.name, " has dtype ", dtype_name(w.dtype), " and no ", prefix_ + path,
           ".scales; a plain weight must be F16, BF16 or F32 (a quantised one needs .scales and .biases)");
    }
    check_shape(w, dims(out, in), "plain " + std::string(dtype_name(w.dtype)) + " weight [out, in]");
    if (!lazy_finite) check_finite(w);
    m.dtype = w.dtype;
  } else {
    const std::optional<QuantParams> qp = quant_.for_module(prefix_ + path);
    if (!qp) {
      fail(store_.dir(), ": tensor ", prefix_ + path,
           ".scales exists but config.json \"quantization\" gives no bits and ", "group_size for ", path);
    }
    const TensorInfo& biases = require(path + ".biases");
    if (w.dtype != DType::U32) {
      fail(*w.file, ": tensor ", w.name, " has dtype ", dtype_name(w.dtype),
           " but a quantised weight must be U32 (packed codes)");
    }
    if (!is_float_weight(scales->dtype) || biases.dtype != scales->dtype) {
      fail(*scales->file, ": tensors ", prefix_ + path, ".scales and .biases must share one float dtype, got ",
           dtype_name(scales->dtype), " and ", dtype_name(biases.dtype));
    }
    if (in % qp->group != 0) {
      fail(store_.dir(), ": module ", prefix_ + path, " has ", in, " inputs, not a multiple of its group_size ",
           qp->group);
    }
    std::string why = std::to_string(qp->bits) + "-bit, group " + std::to_string(qp->group) + " from config.json";
    if (!w.shape.empty() && w.shape.back() > 0 && w.shape.back() != in * qp->bits / 32) {
      const int64_t file_bits = w.shape.back() * 32 / in;
      if (w.shape.back() * 32 == file_bits * in) {
        why += "; the file looks " + std::to_string(file_bits) +
               "-bit: check the quantization entry for this module in config.json";
      }
    }
    check_shape(w, dims(out, in * qp->bits / 32), why);
    check_shape(*scales, dims(out, in / qp->group), why);
    check_shape(biases, dims(out, in / qp->group), why);
    if (!lazy_finite) {
      check_finite(*scales);
      check_finite(biases);
    }
    m.format = WFormat::Affine;
    m.dtype = scales->dtype;
    m.bits = qp->bits;
    m.group = qp->group;
    m.scales = scales->data;
    m.biases = biases.data;
  }
  matrix_bytes_ += m.mat_bytes() * static_cast<uint64_t>(n);
  return m;
}

Linear TensorLoader::linear(const std::string& path, int64_t out, int64_t in, bool with_bias) {
  Linear l;
  l.w = matrix(path, 1, out, in, false, false);
  if (with_bias) l.bias = vector(path + ".bias", out);
  return l;
}

WeightMatrix TensorLoader::stacked(const std::string& path, int64_t n, int64_t out, int64_t in) {
  return matrix(path, n, out, in, true, true);
}

WeightMatrix TensorLoader::expert(const std::string& path, int64_t out, int64_t in) {
  return matrix(path, 1, out, in, false, true);
}

std::vector<float> TensorLoader::vector(const std::string& name, int64_t n) {
  const TensorInfo& t = require(name);
  if (!is_float_weight(t.dtype)) {
    fail(*t.file, ": tensor ", t.name, " has dtype ", dtype_name(t.dtype), " but must be F16, BF16 or F32");
  }
  check_shape(t, {n}, "a vector");
  check_finite(t);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = load_float(t.data, t.dtype, static_cast<size_t>(i));
  return v;
}

}  // namespace bs
