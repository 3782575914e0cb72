#include "metal/metal-weights.h"

#include <cstring>
#include <map>
#include <mutex>

#include "common/error.h"
#include "common/experts/streamer.h"
#include "common/prerouter/heads.h"
#include "metal/metal-encode.h"

namespace bs::metal {

DeviceWeights::DeviceWeights(Device& d, const Model& m) : d_(d) {
  if (slot_experts(m)) bind_slots(m);
  for (const WeightMatrix* w : decoder_matrices(m))
    if (!slots_.count(w)) bind(*w);  // streamed expert stacks never: the GPU would make them resident
  for (int axis = -1; axis < (m.cfg.mrope_section.empty() ? 0 : 3); ++axis) {
    const std::vector<double> table = rope_table(m.cfg, axis);
    inv_freq_[axis + 1] = floats(std::vector<float>(table.begin(), table.end()));
  }
  for (const std::vector<float>* v : decoder_vectors(m))
    if (!v->empty() && !vectors_.count(v->data())) vectors_.emplace(v->data(), floats(*v));
}

std::shared_ptr<const DeviceWeights> DeviceWeights::of(Device& d, const Model& m) {
  // A model outlives the sessions holding its weights, so a live entry's address is that model's.
  static std::mutex mu;
  static std::map<std::pair<const Model*, const Device*>, std::weak_ptr<const DeviceWeights>> made;
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = made.begin(); it != made.end();) it = it->second.expired() ? made.erase(it) : std::next(it);
  std::weak_ptr<const DeviceWeights>& slot = made[{&m, &d}];
  if (auto w = slot.lock()) return w;
  auto w = std::make_shared<const DeviceWeights>(d, m);
  slot = w;
  return w;
}

const DeviceWeights::Weight& DeviceWeights::weight(const WeightMatrix& w) const {
  auto it = index_.find(w.w);
  if (it == index_.end()) fail("metal decoder: a weight matrix outside the model's was asked for");
  return *it->second;
}

const DeviceWeights::Weight& DeviceWeights::slots(const WeightMatrix& w) const {
  auto it = slots_.find(&w);
  if (it == slots_.end()) fail("metal decoder: no expert slots for the matrix asked for");
  return *it->second;
}

// Each of a layer's 9 slot slabs (gate, up, down × codes, scales, biases) wrapped whole: the I/O
// threads fill the slots in place, so there is nothing to copy and no copy to fall back to.
void DeviceWeights::bind_slots(const Model& m) {
  for (int64_t l = 0; l < m.cfg.n_layers; ++l) {
    const MoeWeights& mw = m.layers[l].moe;
    if (!m.layers[l].is_moe) continue;
    const SlotCache& c = m.streamer->staged_cache(l);
    Arg part[9];
    uint32_t off[9];
    for (size_t r = 0; r < c.layout().ranges.size(); ++r) {
      const AlignedBuffer& slab = c.slab(r);
      auto b = d_.wrap(slab.data(), slab.mapped());
      if (!b)
        fail("metal decoder: the device refused to wrap the expert slots of layer ", l, " (", slab.mapped(), " bytes)");
      owned_.push_back(std::move(b));
      part[r] = {owned_.back().get(), 0};
      off[r] = static_cast<uint32_t>(c.range_ptr(0, r) - slab.data());
    }
    const WeightMatrix* mats[3] = {&mw.gate, &mw.up, &mw.down};
    for (int p = 0; p < 3; ++p) {
      auto w = std::make_unique<Weight>(
          Weight{part[3 * p], part[3 * p + 1], part[3 * p + 2], off[3 * p], off[3 * p + 1], off[3 * p + 2]});
      slots_[mats[p]] = w.get();
      weights_.push_back(std::move(w));
    }
  }
}

Arg DeviceWeights::vector(const float* data) const { return vectors_.at(data); }

Arg DeviceWeights::buffer(size_t bytes) {
  auto b = d_.alloc(std::max<size_t>(bytes, 16));
  if (!b) fail("metal decoder: cannot allocate a buffer of ", bytes, " bytes");
  owned_.push_back(std::move(b));
  return {owned_.back().get(), 0};
}

Arg DeviceWeights::floats(const std::vector<float>& v) {
  Arg a = buffer(v.size() * 4);
  if (!v.empty()) std::memcpy(a.buf->contents(), v.data(), v.size() * 4);
  return a;
}

// Wrapped in place (copied when the device refuses the pages); once per matrix address.
void DeviceWeights::bind(const WeightMatrix& w) {
  if (index_.count(w.w)) return;
  auto range = [&](const void* p, size_t bytes, uint32_t& off) -> Arg {
    if (auto b = wrap_range(d_, p, bytes, off)) {
      owned_.push_back(std::move(b));
      return {owned_.back().get(), 0};
    }
    off = 0;
    copied_ += bytes;
    Arg a = buffer(bytes);
    std::memcpy(a.buf->contents(), p, bytes);
    return a;
  };
  auto out = std::make_unique<Weight>();
  out->codes = range(w.w, code_bytes(w), out->w_off);
  if (w.quantised()) {
    out->scales = range(w.scales, sb_bytes(w), out->s_off);
    out->biases = range(w.biases, sb_bytes(w), out->b_off);
  } else {
    out->scales = out->biases = out->codes;
  }
  weights_.push_back(std::move(out));
  index_[w.w] = weights_.back().get();
}

}  // namespace bs::metal
