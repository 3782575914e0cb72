// Fixed expert slots of one MoE layer: `capacity` slots plus a zero slot (index capacity, all
// bytes zero: an expert mapped there contributes nothing), the slot table expert id → slot,
// and each slot's state. The buffers are one slab per byte range, laid out as the stacked
// tensors are ([capacity + 1, ...]), so the gathered matmul runs over the slab with slot ids.
// Not thread-safe: the owner (ExpertStreamer) guards every call with its lock; I/O threads
// write only the bytes of a slot in state Loading, which no reader touches.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/experts/expert-layout.h"
#include "common/io/aligned-buffer.h"

namespace bs {

class SlotCache {
 public:
  enum class State : uint8_t { Empty, Loading, Ready, Failed };

  SlotCache(const LayerLayout& layout, int capacity);

  int capacity() const { return capacity_; }
  int zero_slot() const { return capacity_; }
  // gate, up, down over the slab: n_mats = capacity + 1.
  const WeightMatrix* views() const { return views_; }
  // Where range r of slot s lives.
  uint8_t* range_ptr(int s, size_t r) const { return bases_[r] + static_cast<uint64_t>(s) * layout_.ranges[r].bytes; }
  // Range r's slab (slot 0 starts range_ptr(0, r) − data() bytes in): what a device wraps.
  const AlignedBuffer& slab(size_t r) const { return slabs_[r]; }
  const LayerLayout& layout() const { return layout_; }

  // Slot holding expert e (Loading, Ready or Failed), or -1.
  int find(int e) const { return table_[e]; }
  // The slot table entry used by the matmul: e's slot, or the zero slot when e has none.
  int32_t mapped(int e) const { return table_[e] >= 0 ? table_[e] : static_cast<int32_t>(capacity_); }
  int expert(int s) const { return slots_[s].expert; }
  State state(int s) const { return slots_[s].state; }
  const std::string& error(int s) const { return slots_[s].error; }
  int resident() const;  // slots holding an expert
  bool loading() const;  // a load is in flight

  // A slot that may receive a new expert: not pinned, not reserved, not loading and not
  // holding an expert flagged in `keep` [E]; empty or failed slots first, then the least
  // recently used. -1 when there is none.
  int victim(const std::vector<char>& keep) const;
  // Points slot s at expert e (state Loading), evicting its previous expert. Returns whether
  // the evicted expert had been prefetched and never used.
  bool assign(int s, int e, bool prefetched);
  void set_ready(int s) { slots_[s].state = State::Ready; }
  // Marks a failed load and drops the slot from the table (the next use reloads it).
  void set_failed(int s, const std::string& err);
  void pin(int s, uint64_t tick);
  void unpin(int s) { --slots_[s].pins; }
  void reserve(int s) { ++slots_[s].reserved; }
  void clear_reservations();
  void clear_pins();

 private:
  struct Slot {
    int expert = -1;
    State state = State::Empty;
    int pins = 0, reserved = 0;
    uint64_t last_use = 0;
    bool prefetched = false;  // loaded for a prediction and not used yet
    std::string error;
  };
  LayerLayout layout_;
  int capacity_;
  std::vector<AlignedBuffer> slabs_;  // one per range
  std::vector<uint8_t*> bases_;       // slab start of slot 0, per range
  WeightMatrix views_[3];
  std::vector<int32_t> table_;  // [E] → slot or -1
  std::vector<Slot> slots_;
};

}  // namespace bs
