#include "common/prerouter/routing-trace.h"

#include "common/error.h"

namespace bs {

RoutingTrace::RoutingTrace(int64_t first, int64_t last, int64_t hidden, int k)
    : first_(first), last_(last), hidden_(hidden), k_(k), x_(last - first + 1), ids_(last - first + 1) {}

void RoutingTrace::on_route(int64_t layer, const float* xn, int64_t n, const int32_t* ids, int k) {
  if (!has(layer)) return;
  x_[layer - first_].insert(x_[layer - first_].end(), xn, xn + n * hidden_);
  ids_[layer - first_].insert(ids_[layer - first_].end(), ids, ids + n * k);
}

int64_t RoutingTrace::tokens() const { return static_cast<int64_t>(ids_[0].size()) / k_; }

RoutingTrace record_routing(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens, int64_t first,
                            int64_t last, const std::function<void(int64_t, int64_t)>& progress) {
  constexpr int64_t kStep = 32;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 3) fail("calibration needs at least 3 tokens of text, got ", n);
  RoutingTrace trace(first, last, m->cfg.hidden, m->top_k);
  Session s(m, n);
  s.set_recorder(&trace);
  std::vector<float> logits(m->cfg.vocab);
  for (int64_t i = 0; i < n;) {
    // Calls of ≥ 2 tokens (prefill steps) route with the routers even when the model has a
    // prerouter, so no call may be a lone last token.
    int64_t len = std::min(kStep, n - i);
    if (n - i - len == 1) --len;
    s.append(tokens.data() + i, len, logits.data());
    i += len;
    if (progress) progress(i, n);
  }
  return trace;
}

}  // namespace bs
