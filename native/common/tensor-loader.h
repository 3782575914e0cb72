// Looks up the tensors an architecture needs and checks each one's presence, dtype and
// shape against config.json, naming the tensor and what was expected when one is wrong.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/linear.h"
#include "common/quant.h"
#include "common/weight-store.h"

namespace bs {

class TensorLoader {
 public:
  TensorLoader(const WeightStore& store, const QuantConfig& quant, std::string arch);

  // Every name below is looked up as prefix + name (Qwen3.5 checkpoints: "language_model.").
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  bool has(const std::string& name) const { return store_.find(prefix_ + name) != nullptr; }
  // The tensor's header entry (nullptr when absent).
  const TensorInfo* info(const std::string& name) const { return store_.find(prefix_ + name); }
  // The module at `path` as a [out, in] matrix: `path.weight` plus `.scales`/`.biases` when
  // quantised (MLX: quantised exactly when `path.scales` exists); with_bias adds `path.bias`.
  Linear linear(const std::string& path, int64_t out, int64_t in, bool with_bias = false);
  // A stacked [n, out, in] module (switch_mlp projections), quantised or plain; its experts are
  // checked for non-finite values on first use (check_expert_finite), the rest here at load.
  // `path` may also name the tensor itself (Hugging Face's experts.gate_up_proj, no ".weight").
  WeightMatrix stacked(const std::string& path, int64_t n, int64_t out, int64_t in);
  // One expert's [out, in] module (Hugging Face's experts.N.*), checked on first use like stacked.
  WeightMatrix expert(const std::string& path, int64_t out, int64_t in);
  // A float vector (norm weights, biases, correction bias) of any float dtype, as float32.
  std::vector<float> vector(const std::string& name, int64_t n);
  // Bytes of all matrices loaded so far (codes + scales + biases).
  uint64_t matrix_bytes() const { return matrix_bytes_; }

 private:
  const TensorInfo& require(const std::string& name) const;
  // Fails naming the tensor when its float bytes [from, from + n elements) hold a NaN or ±Inf.
  void check_finite(const TensorInfo& t) const;
  void check_shape(const TensorInfo& t, const std::vector<int64_t>& want, const std::string& why) const;
  WeightMatrix matrix(const std::string& path, int64_t n, int64_t out, int64_t in, bool stacked, bool lazy_finite);

  const WeightStore& store_;
  const QuantConfig& quant_;
  std::string arch_;
  std::string prefix_;
  uint64_t matrix_bytes_ = 0;
};

}  // namespace bs
