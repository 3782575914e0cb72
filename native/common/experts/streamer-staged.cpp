// The staged path (slots filled by the I/O threads, in waves when a chunk routes to more experts
// than there are slots), for the CPU's gathered matmul and for device decoders that compute from
// the slot slabs themselves (metal/metal-decoder-slots.cpp).
#include <algorithm>

#include "common/error.h"
#include "common/experts/streamer.h"
#include "common/step-profile.h"

namespace bs {

void ExpertStreamer::run_staged(const Model& m, Layer& L, Scratch& s) {
  std::unique_lock<std::mutex> lk(mu_);
  stage_waves(lk, L, s, /*device=*/false, [&](SlotCache& c, bool) {
    compute(m, c.views(), s.group_which, s.group_ids, s);
    compute_mapped(m, L, s.group_miss, s.miss_ids, s);
  });
}

void ExpertStreamer::run_device(int64_t l, Scratch& s, FunctionRef<void(const SlotCache&, bool)> wave) {
  Layer& L = layer(l);
  if (fail_run_ >= 0 && fail_run_-- == 0) fail("the experts of layer ", l, " could not be loaded (injected by a test)");
  std::unique_lock<std::mutex> lk(mu_);
  stage_waves(lk, L, s, /*device=*/true, [&](SlotCache& c, bool last) { wave(c, last); });
  ran(L);
}

const SlotCache& ExpertStreamer::staged_cache(int64_t l) {
  std::lock_guard<std::mutex> lk(mu_);
  return staged(layer(l));
}

bool ExpertStreamer::staged_ready(int64_t l, const int32_t* ids, int n) {
  std::lock_guard<std::mutex> lk(mu_);
  const SlotCache& c = staged(layer(l));
  return std::all_of(ids, ids + n,
                     [&](int32_t e) { return c.find(e) >= 0 && c.state(c.find(e)) == SlotCache::State::Ready; });
}

int ExpertStreamer::wait_victim(std::unique_lock<std::mutex>& lk, SlotCache& c, const std::vector<char>& keep) {
  int v = -1;
  const uint64_t t0 = profile_now_ns();
  cv_.wait(lk, [&] {
    v = c.victim(keep);
    return v >= 0 || !c.loading();
  });
  c_.blocked_ns += profile_now_ns() - t0;
  if (v < 0) {
    // A prediction wider than the slots reserved them all: a later wave reloads what this one evicts.
    c.clear_reservations();
    v = c.victim(keep);
  }
  if (v < 0) fail("internal: every staged slot of layer ", c.layout().layer, " is held by this step");
  return v;
}

void ExpertStreamer::stage_waves(std::unique_lock<std::mutex>& lk, Layer& L, Scratch& s, bool device,
                                 FunctionRef<void(SlotCache&, bool)> wave) {
  SlotCache& c = staged(L);
  const int n_groups = static_cast<int>(s.groups.size());
  // More distinct experts than slots (a prefill chunk): the slots are filled in waves.
  for (int w0 = 0; w0 < n_groups; w0 += c.capacity()) {
    const int w1 = std::min(n_groups, w0 + c.capacity());
    const bool last = w1 == n_groups;
    std::fill(L.keep.begin(), L.keep.end(), 0);
    for (int g = w0; g < w1; ++g) L.keep[s.groups[g].expert] = 1;
    std::vector<int>& pinned = s.slot_pinned;
    std::vector<int>& which = s.group_which;
    std::vector<int>& fallback = s.group_miss;
    std::vector<int32_t>& fallback_ids = s.miss_ids;
    s.clear_expert_lists();
    const uint64_t tick = ++tick_;
    for (int g = w0; g < w1; ++g) {
      const int slot = c.find(s.groups[g].expert);
      if (slot < 0) continue;
      c.pin(slot, tick);
      pinned.push_back(slot);
      ++c_.slot_hits;
    }
    for (int g = w0; g < w1; ++g) {
      const int e = s.groups[g].expert;
      if (c.find(e) >= 0) {
        which.push_back(g);
        continue;
      }
      int v = c.victim(L.keep);
      ++c_.slot_misses;
      if (L.reserved) ++c_.prefetch_misses;  // routed by a prediction, yet not prefetched
      if (v < 0 && device) v = wait_victim(lk, c, L.keep);
      if (v < 0) {  // every slot is held for this step: compute this one from the file
        fallback.push_back(g);
        fallback_ids.push_back(e);
        continue;
      }
      start_load(L, c, v, e, /*urgent=*/true, /*prefetched=*/false);
      c.pin(v, tick);
      pinned.push_back(v);
      which.push_back(g);
    }
    wait_slots(lk, c, pinned);
    std::vector<int32_t>& ids = s.group_ids;
    for (int g : which) {
      ids.push_back(c.mapped(s.groups[g].expert));
      if (ids.back() == c.zero_slot()) c_.drops += s.groups[g].end - s.groups[g].begin;
    }
    c_.fallbacks += fallback.size();
    lk.unlock();
    wave(c, last);
    lk.lock();
    // A device reads the last wave's slots after this returns: end_forward unpins them.
    if (!device || !last) {
      for (int slot : pinned) c.unpin(slot);
    }
  }
}

}  // namespace bs
