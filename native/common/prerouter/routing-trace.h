// The teacher's routing over a token sequence: for a range of MoE layers, each token's MoE
// input (hidden state) and executed top-k, recorded by running the model with its routers.
// A head's training sample at token t is (hidden_N(t), top-k_N(t), top-k_N(t−1)) → the
// top-k of layer N+1 at t+1.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "common/session.h"

namespace bs {

class RoutingTrace : public RoutingRecorder {
 public:
  // Records layers [first, last] of a model with `hidden` inputs and routing width k.
  RoutingTrace(int64_t first, int64_t last, int64_t hidden, int k);

  void on_route(int64_t layer, const float* xn, int64_t n, const int32_t* ids, int k) override;

  int64_t tokens() const;
  int k() const { return k_; }
  int64_t hidden() const { return hidden_; }
  const float* x(int64_t layer, int64_t t) const { return &x_[layer - first_][t * hidden_]; }
  const int32_t* ids(int64_t layer, int64_t t) const { return &ids_[layer - first_][t * k_]; }
  bool has(int64_t layer) const { return layer >= first_ && layer <= last_; }

 private:
  int64_t first_, last_, hidden_;
  int k_;
  std::vector<std::vector<float>> x_;
  std::vector<std::vector<int32_t>> ids_;
};

// Runs `tokens` through a fresh session of `m` with its routers (prefill, 32 tokens per call,
// no prerouter) and records layers [first, last]. progress(done, total) after each call.
RoutingTrace record_routing(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens, int64_t first,
                            int64_t last, const std::function<void(int64_t, int64_t)>& progress);

}  // namespace bs
