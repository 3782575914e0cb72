#include "common/experts/slot-cache.h"

namespace bs {

SlotCache::SlotCache(const LayerLayout& layout, int capacity)
    : layout_(layout), capacity_(capacity), table_(layout.n_experts, -1), slots_(capacity) {
  const size_t n = layout.ranges.size();
  slabs_.resize(n);
  bases_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const ExpertRange& range = layout.ranges[r];
    // Slot s of range r starts at the file's block phase (base ≡ offset mod kIoAlign): when a
    // slice is a whole number of blocks, direct reads land in place for every expert and slot.
    slabs_[r].reset(range.bytes * (capacity + 1) + kIoAlign);
    bases_[r] = slabs_[r].data() + range.offset[0] % kIoAlign;
  }
  layout_.views(bases_.data(), capacity + 1, views_);
}

int SlotCache::resident() const {
  int n = 0;
  for (const Slot& s : slots_) n += s.expert >= 0;
  return n;
}

bool SlotCache::loading() const {
  for (const Slot& s : slots_)
    if (s.state == State::Loading) return true;
  return false;
}

int SlotCache::victim(const std::vector<char>& keep) const {
  int best = -1;
  for (int s = 0; s < capacity_; ++s) {
    const Slot& x = slots_[s];
    if (x.pins > 0 || x.reserved > 0 || x.state == State::Loading) continue;
    if (x.expert < 0 || x.state == State::Failed) return s;
    if (keep[x.expert]) continue;
    if (best < 0 || x.last_use < slots_[best].last_use) best = s;
  }
  return best;
}

bool SlotCache::assign(int s, int e, bool prefetched) {
  Slot& x = slots_[s];
  const bool wasted = x.expert >= 0 && x.prefetched && x.state == State::Ready;
  if (x.expert >= 0 && table_[x.expert] == s) table_[x.expert] = -1;
  x.expert = e;
  x.state = State::Loading;
  x.prefetched = prefetched;
  x.error.clear();
  table_[e] = s;
  return wasted;
}

void SlotCache::set_failed(int s, const std::string& err) {
  Slot& x = slots_[s];
  x.state = State::Failed;
  x.error = err;
  if (x.expert >= 0 && table_[x.expert] == s) table_[x.expert] = -1;
}

void SlotCache::pin(int s, uint64_t tick) {
  Slot& x = slots_[s];
  ++x.pins;
  x.last_use = tick;
  x.prefetched = false;
}

void SlotCache::clear_reservations() {
  for (Slot& s : slots_) s.reserved = 0;
}

void SlotCache::clear_pins() {
  for (Slot& s : slots_) s.pins = 0;
}

}  // namespace bs
