#include "cuda/cuda-weights.cuh"

#include <algorithm>
#include <map>
#include <mutex>

#include "common/accel-limits.h"
#include "common/decoder-walk.h"
#include "common/error.h"

namespace bs::BS_CUDA_NS {

bool DeviceWeights::is_routed(const Model& m, const WeightMatrix* w) {
  return std::any_of(m.layers.begin(), m.layers.end(), [&](const LayerWeights& lw) {
    return lw.is_moe && (w == &lw.moe.gate || w == &lw.moe.up || w == &lw.moe.down);
  });
}

DeviceWeights::DeviceWeights(const Model& m, bool routed, Context* ctx)
    : own_(ctx ? nullptr : std::make_unique<Context>()), c_(ctx ? *ctx : *own_), routed_(routed) {
  for (const WeightMatrix* w : decoder_matrices(m)) {
    if ((!routed && is_routed(m, w)) || weights_.count(w->w)) continue;
    Weight d{c_.keep(w->w, code_bytes(*w)), nullptr, nullptr};
    bytes_ += code_bytes(*w);
    if (w->quantised()) {
      d.scales = c_.keep(w->scales, sb_bytes(*w)), d.biases = c_.keep(w->biases, sb_bytes(*w));
      bytes_ += 2 * sb_bytes(*w);
    }
    weights_[w->w] = d;
  }
  for (const std::vector<float>* v : decoder_vectors(m)) {
    if (!v->empty() && !vectors_.count(v->data()))
      vectors_[v->data()] = reinterpret_cast<float*>(const_cast<uint8_t*>(c_.keep(v->data(), v->size() * 4)));
  }
  for (int axis = -1; axis < (m.cfg.mrope_section.empty() ? 0 : 3); ++axis) {
    const std::vector<double> inv = rope_table(m.cfg, axis);
    inv_freq_[axis + 1] = reinterpret_cast<const double*>(c_.keep(inv.data(), inv.size() * sizeof(double)));
  }
  check(wait_stream(c_.stream()), "uploading the weights");
}

namespace {

// A model outlives the sessions holding its weights, so a live entry's address is that model's.
std::mutex shared_mu;
std::map<const Model*, std::weak_ptr<const DeviceWeights>> shared_made;

std::weak_ptr<const DeviceWeights>& shared_entry(const Model& m) {
  for (auto it = shared_made.begin(); it != shared_made.end();)
    it = it->second.expired() ? shared_made.erase(it) : std::next(it);
  return shared_made[&m];
}

}  // namespace

std::shared_ptr<const DeviceWeights> DeviceWeights::of(const Model& m, bool routed) {
  std::lock_guard<std::mutex> lock(shared_mu);
  std::weak_ptr<const DeviceWeights>& slot = shared_entry(m);
  if (auto w = slot.lock()) return w;
  auto w = std::make_shared<const DeviceWeights>(m, routed);
  slot = w;
  return w;
}

std::shared_ptr<const DeviceWeights> DeviceWeights::held(const Model& m) {
  std::lock_guard<std::mutex> lock(shared_mu);
  return shared_entry(m).lock();
}

const uint8_t* DeviceWeights::mapped(const void* host, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return c_.mapped(host, bytes);
}

const DeviceWeights::Weight& DeviceWeights::weight(const WeightMatrix& w) const {
  auto it = weights_.find(w.w);
  if (it == weights_.end()) fail("cuda decoder: a weight matrix outside the model's was asked for");
  return it->second;
}

float* DeviceWeights::vector(const float* data) const { return vectors_.at(data); }

}  // namespace bs::BS_CUDA_NS
