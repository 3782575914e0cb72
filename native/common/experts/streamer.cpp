#include "common/experts/streamer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "common/error.h"

namespace bs {

namespace {

constexpr uint64_t kWarmChunk = 8ull << 20;  // whole-layer reads are split so all I/O threads share a layer

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Expert tensors are read at random: readahead through the mapping would pull in neighbours.
void advise_random(const Model& m, int64_t l) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const ExpertPart& part : m.layers[l].moe.expert_parts) {
    for (size_t e = 0; e < part.tensor.size(); ++e) {
      const TensorInfo* t = part.tensor[e];
      if (e > 0 && t == part.tensor[e - 1]) continue;  // stacked or fused: one tensor for all
      const uint64_t p = reinterpret_cast<uint64_t>(t->data);
      const uint64_t lo = p / page * page;
      ::madvise(reinterpret_cast<void*>(lo), p + t->nbytes - lo, MADV_RANDOM);
    }
  }
}

// Expert e's finite check (once per expert) over its ranges stacked at bases[r], as item `at`
// of each stack (a slot, or e itself in a whole-layer buffer): the bytes are in memory already.
void check_stacked(const MoeWeights& w, const LayerLayout& lay, int e, const uint8_t* const* bases, int64_t at) {
  const uint8_t* p[9];
  for (size_t r = 0; r < lay.ranges.size(); ++r) p[r] = bases[r] + static_cast<uint64_t>(at) * lay.ranges[r].bytes;
  check_expert_finite(w, e, p);
}

}  // namespace

namespace {

// Every counter, so += and - cannot miss one.
constexpr uint64_t StreamCounters::*kCounterFields[] = {
    &StreamCounters::blocked_ns,     &StreamCounters::io_bytes,       &StreamCounters::loads,
    &StreamCounters::prefetch_loads, &StreamCounters::prefetch_bytes, &StreamCounters::prefetch_unused_bytes,
    &StreamCounters::slot_hits,      &StreamCounters::slot_misses,    &StreamCounters::fallbacks,
    &StreamCounters::drops,          &StreamCounters::layer_reads,    &StreamCounters::prefetch_misses,
    &StreamCounters::read_hints,     &StreamCounters::warm_experts,   &StreamCounters::warm_bytes,
    &StreamCounters::warm_hits,
};
static_assert(sizeof(kCounterFields) / sizeof(kCounterFields[0]) * sizeof(uint64_t) == sizeof(StreamCounters),
              "kCounterFields must list every StreamCounters field");

}  // namespace

StreamCounters& StreamCounters::operator+=(const StreamCounters& o) {
  for (auto f : kCounterFields) this->*f += o.*f;
  return *this;
}

StreamCounters StreamCounters::operator-(const StreamCounters& o) const {
  StreamCounters d = *this;
  for (auto f : kCounterFields) d.*f -= o.*f;
  return d;
}

ExpertStreamer::ExpertStreamer(const Model& m, const StreamOptions& opts) : opts_(opts) {
  const int K = m.top_k;
  if (opts.io_threads < 1 || opts.io_threads > 64) fail("ioThreads must be between 1 and 64, got ", opts.io_threads);
  staged_slots_ = opts.slots > 0 ? opts.slots : K;
  if (staged_slots_ > m.cfg.router.n_experts) {
    fail("slots must be at most the ", m.cfg.router.n_experts, " experts of a layer, got ", staged_slots_);
  }
  const int64_t L = m.cfg.n_layers;
  layers_.resize(L);
  next_moe_.assign(L, -1);
  int ordinal = 0;
  for (int64_t l = 0; l < L; ++l) {
    if (!m.layers[l].is_moe) continue;
    auto x = std::make_unique<Layer>();
    x->layout = layer_layout(m, l);
    x->moe = &m.layers[l].moe;
    x->ordinal = ordinal++;
    x->keep.assign(x->layout.n_experts, 0);
    for (int p = 0; p < 2; ++p) {
      x->warm_for[p].assign(x->layout.n_experts, 0);
      x->warm_done[p].assign(x->layout.n_experts, 0);
    }
    layers_[l] = std::move(x);
    advise_random(m, l);
  }
  for (int64_t l = L - 2; l >= 0; --l) next_moe_[l] = layers_[l + 1] ? l + 1 : next_moe_[l + 1];
  const bool uses_hot = opts.prefill_path == ExpertPath::Hot || opts.decode_path == ExpertPath::Hot;
  const uint64_t per_layer = static_cast<uint64_t>(ordinal) * m.expert_bytes;
  // Clamped before the cast: a budget of many GiB over small experts exceeds an int.
  const uint64_t fit = opts.cache_bytes > 0 && per_layer > 0 ? opts.cache_bytes / per_layer : 2 * K;
  hot_slots_ = static_cast<int>(std::min<uint64_t>(fit, static_cast<uint64_t>(m.cfg.router.n_experts)));
  if (uses_hot && hot_slots_ < 1) {
    fail("cacheBytes ", opts.cache_bytes, " holds less than one expert per MoE layer for the hot path (needs ≥ ",
         per_layer, " bytes: ", ordinal, " layers × ", m.expert_bytes, " bytes)");
  }
  std::vector<std::string> paths;
  std::vector<uint64_t> sizes;
  for (const auto& f : m.store->files()) {
    paths.push_back(f->path());
    sizes.push_back(f->size());
  }
  files_ = std::make_unique<ModelFiles>(paths, sizes, opts.io_mode);
  pool_ = std::make_unique<IoPool>(opts.io_threads);
}

ExpertStreamer::~ExpertStreamer() { pool_.reset(); }

uint64_t ExpertStreamer::buffer_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  uint64_t b = 0;
  for (const auto& L : layers_) {
    if (!L) continue;
    if (L->staged) b += (L->staged->capacity() + 1) * L->layout.expert_bytes;
    if (L->hot) b += (L->hot->capacity() + 1) * L->layout.expert_bytes;
  }
  for (const WholeBuffer& w : whole_) {
    for (const AlignedBuffer& a : w.slabs) b += a.size();
  }
  return b;
}

SlotCache& ExpertStreamer::staged(Layer& L) {
  if (!L.staged) L.staged = std::make_unique<SlotCache>(L.layout, staged_slots_);
  return *L.staged;
}

SlotCache& ExpertStreamer::hot(Layer& L) {
  if (!L.hot) {
    L.hot = std::make_unique<SlotCache>(L.layout, hot_slots_);
    L.counts.assign(L.layout.n_experts, 0.0);
  }
  return *L.hot;
}

void ExpertStreamer::begin_forward() {
  uint64_t reads = 0;
  if (process_storage_reads(reads)) {
    hint_gate_step(hints_, reads);
  } else {
    hints_ = HintGate{};
  }
  std::lock_guard<std::mutex> lk(mu_);
  ++gen_;
}

void ExpertStreamer::end_forward() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& L : layers_) {
    if (!L) continue;
    for (SlotCache* c : {L->staged.get(), L->hot.get()}) {
      if (!c) continue;
      c->clear_pins();
      c->clear_reservations();
    }
    L->deferred.clear();
    L->reserved = false;
  }
}

StreamCounters ExpertStreamer::counters() const {
  std::lock_guard<std::mutex> lk(mu_);
  StreamCounters c = c_;
  c.read_hints = read_hints_.load(std::memory_order_relaxed);
  return c;
}

void ExpertStreamer::start_load(Layer& L, SlotCache& c, int s, int e, bool urgent, bool prefetched) {
  if (c.assign(s, e, prefetched)) c_.prefetch_unused_bytes += L.layout.expert_bytes;
  ++c_.loads;
  if (prefetched) {
    ++c_.prefetch_loads;
    c_.prefetch_bytes += L.layout.expert_bytes;
  }
  SlotCache* cache = &c;
  const int64_t layer = L.layout.layer;
  const MoeWeights* moe = L.moe;
  pool_->submit(
      [this, cache, moe, s, e, layer](ReadScratch& rs) {
        const LayerLayout& lay = cache->layout();
        std::string err;
        try {
          const std::string what = "expert " + std::to_string(e) + " of layer " + std::to_string(layer);
          const uint8_t* at[9];
          for (size_t r = 0; r < lay.ranges.size(); ++r) {
            const ExpertRange& x = lay.ranges[r];
            files_->read(x.file[e], x.offset[e], x.bytes, cache->range_ptr(s, r), rs, what + " (" + x.tensor(e) + ")");
            at[r] = cache->range_ptr(s, r);
          }
          // Checked here, in the slot: scanning the mapping would fault every page in from disk.
          check_expert_finite(*moe, e, at);
        } catch (const std::exception& ex) {
          err = ex.what();
        }
        {
          std::lock_guard<std::mutex> lk(mu_);
          if (err.empty()) {
            cache->set_ready(s);
            c_.io_bytes += lay.expert_bytes;
          } else {
            cache->set_failed(s, err);
          }
        }
        cv_.notify_all();
      },
      urgent);
}

void ExpertStreamer::wait_slots(std::unique_lock<std::mutex>& lk, SlotCache& c, const std::vector<int>& slots) {
  auto settled = [&] {
    return std::none_of(slots.begin(), slots.end(), [&](int s) { return c.state(s) == SlotCache::State::Loading; });
  };
  if (!settled()) {
    const uint64_t t0 = now_ns();
    cv_.wait(lk, settled);
    c_.blocked_ns += now_ns() - t0;
  }
  for (int s : slots) {
    if (c.state(s) == SlotCache::State::Failed) fail(c.error(s));
  }
}

void ExpertStreamer::willneed(const Layer& L, int e) {
  if (!hints_.on) return;
  // Only ranges not all in memory: a hint walks every page of the range in the page cache
  // (~10 us an expert, on the forward thread), mincore only the mapping's page table.
  bool sent = false;
  for (const ExpertRange& x : L.layout.ranges) {
    if (range_resident(x.part->data(e), x.bytes, hint_pages_)) continue;
    files_->willneed(x.file[e], x.offset[e], x.bytes);
    sent = true;
  }
  if (sent) read_hints_.fetch_add(1, std::memory_order_relaxed);
}

void ExpertStreamer::warm_expert(Layer& L, int e) {
  if (!hints_.on) return;  // every expert is in the page cache: nothing to read ahead
  const uint64_t target = gen_ + 1;
  const int p = static_cast<int>(target & 1);
  if (L.warm_for[p][e] == target) return;
  L.warm_for[p][e] = target;
  L.warm_done[p][e] = 0;
  ++c_.warm_experts;
  Layer* layer = &L;
  pool_->submit(
      [this, layer, e, target, p](ReadScratch& rs) {
        {
          std::lock_guard<std::mutex> lk(mu_);
          if (layer->ran_gen >= target || layer->warm_for[p][e] != target) return;  // too late or superseded
        }
        uint64_t read = 0;
        try {
          for (const ExpertRange& x : layer->layout.ranges) {
            const uint8_t* p = x.part->data(e);
            const bool cached = range_resident(p, x.bytes, rs.pages);
            if (!cached) {
              files_->willneed(x.file[e], x.offset[e], x.bytes);  // one large read, not page by page
              read += x.bytes;
            }
            // Mapped here, the compute thread takes no page faults on it; else read it explicitly.
            if (!populate_read(p, x.bytes) && !cached) {
              files_->warm(x.file[e], x.offset[e], x.bytes, rs,
                           "expert " + std::to_string(e) + " (" + x.tensor(e) + ")");
            }
          }
        } catch (const std::exception&) {
          // A warm is only a head start: the layer's own read reports a damaged file.
        }
        {
          std::lock_guard<std::mutex> lk(mu_);
          c_.warm_bytes += read;
          if (layer->warm_for[p][e] == target) layer->warm_done[p][e] = 1;
        }
        cv_.notify_all();
      },
      /*urgent=*/false);
}

void ExpertStreamer::compute(const Model& m, const WeightMatrix* v, const std::vector<int>& which,
                             const std::vector<int32_t>& id, Scratch& s) {
  if (which.empty()) return;
  const int64_t H = m.cfg.hidden;
  int64_t rows = 0;
  for (int g : which) rows += s.groups[g].end - s.groups[g].begin;
  s.sub_ids.resize(rows);
  if (rows == static_cast<int64_t>(s.order_ids.size())) {  // every group, in order: no copies
    for (size_t i = 0; i < which.size(); ++i) {
      const ExpertGroup& g = s.groups[which[i]];
      std::fill(s.sub_ids.begin() + g.begin, s.sub_ids.begin() + g.end, id[i]);
    }
    expert_rows(m, v, s.sub_ids.data(), s.rows.data(), rows, s, s.act.data());
    return;
  }
  s.sub_x.resize(rows * H);
  s.sub_act.resize(rows * H);
  int64_t r = 0;
  for (size_t i = 0; i < which.size(); ++i) {
    const ExpertGroup& g = s.groups[which[i]];
    std::copy(s.rows.begin() + g.begin * H, s.rows.begin() + g.end * H, s.sub_x.begin() + r * H);
    std::fill(s.sub_ids.begin() + r, s.sub_ids.begin() + r + (g.end - g.begin), id[i]);
    r += g.end - g.begin;
  }
  expert_rows(m, v, s.sub_ids.data(), s.sub_x.data(), rows, s, s.sub_act.data());
  r = 0;
  for (int gi : which) {
    const ExpertGroup& g = s.groups[gi];
    std::copy_n(s.sub_act.begin() + r * H, (g.end - g.begin) * H, s.act.begin() + g.begin * H);
    r += g.end - g.begin;
  }
}

void ExpertStreamer::compute_mapped(const Model& m, Layer& L, const std::vector<int>& which,
                                    const std::vector<int32_t>& id, Scratch& s) {
  for (int32_t e : id) check_expert_finite(*L.moe, e);  // after the paths' reads or hints were issued
  if (L.layout.stacked) {
    compute(m, L.layout.proto, which, id, s);
    return;
  }
  // Per-expert or fused tensors: no stack spans the experts, so each runs over its own views.
  WeightMatrix v[3];
  L.one_which.resize(1);
  L.one_id.assign(1, 0);
  for (size_t i = 0; i < which.size(); ++i) {
    L.layout.mapped_views(id[i], v);
    L.one_which[0] = which[i];
    compute(m, v, L.one_which, L.one_id, s);
  }
}

void ExpertStreamer::run(const Model& m, int64_t l, Phase phase, Scratch& s) {
  Layer& L = layer(l);
  ExpertPath path = opts_.path(phase);
  if (path == ExpertPath::WholeLayer && !whole_pays(L, s)) path = ExpertPath::Exact;
  switch (path) {
    case ExpertPath::Exact: run_exact(m, L, s); break;
    case ExpertPath::Staged: run_staged(m, L, s); break;
    case ExpertPath::Hot: run_hot(m, L, s); break;
    case ExpertPath::WholeLayer: run_whole(m, L, s); break;
  }
  std::lock_guard<std::mutex> lk(mu_);
  ran(L);
}

bool ExpertStreamer::whole_pays(const Layer& L, const Scratch& s) {
  std::lock_guard<std::mutex> lk(mu_);
  return L.warm_gen == gen_ ||
         static_cast<double>(s.groups.size()) >= opts_.whole_layer_share * static_cast<double>(L.layout.n_experts);
}

void ExpertStreamer::ran(Layer& L) {
  L.ran_gen = gen_;
  if (L.staged) L.staged->clear_reservations();
  L.reserved = false;
  flush_deferred(L);
}

void ExpertStreamer::run_exact(const Model& m, Layer& L, Scratch& s) {
  // Scratch-held lists: the exact path (the default decode) allocates nothing once warm.
  s.group_which.resize(s.groups.size());
  std::iota(s.group_which.begin(), s.group_which.end(), 0);
  s.group_ids.resize(s.groups.size());
  s.miss_ids.clear();
  s.group_miss.clear();
  {
    std::unique_lock<std::mutex> lk(mu_);
    const std::vector<uint64_t>& warm_for = L.warm_for[gen_ & 1];
    const std::vector<char>& warm_done = L.warm_done[gen_ & 1];
    for (size_t g = 0; g < s.groups.size(); ++g) {
      const int e = s.groups[g].expert;
      s.group_ids[g] = e;
      if (warm_for[e] == gen_) {
        s.group_miss.push_back(e);  // warmed for this pass
      } else {
        s.miss_ids.push_back(e);
      }
    }
    // A warm still on its way is waited for: its large reads beat faulting the pages one by one.
    auto landed = [&] {
      return std::all_of(s.group_miss.begin(), s.group_miss.end(), [&](int e) { return warm_done[e] != 0; });
    };
    if (!landed()) {
      const uint64_t t0 = now_ns();
      cv_.wait(lk, landed);
      c_.blocked_ns += now_ns() - t0;
    }
    c_.warm_hits += s.group_miss.size();
  }
  // The kernel reads the ranges in the background while the first experts compute.
  for (int32_t e : s.miss_ids) willneed(L, e);
  compute_mapped(m, L, s.group_which, s.group_ids, s);
}

void ExpertStreamer::run_hot(const Model& m, Layer& L, Scratch& s) {
  std::unique_lock<std::mutex> lk(mu_);
  SlotCache& c = hot(L);
  const int E = L.layout.n_experts;
  for (double& x : L.counts) x *= opts_.hot_decay;
  for (const ExpertGroup& g : s.groups) L.counts[g.expert] += static_cast<double>(g.end - g.begin);
  if (L.hot_runs++ % static_cast<uint64_t>(opts_.hot_interval) == 0) {
    // Re-choose the resident set: decayed counts plus a bonus for the experts predicted next.
    std::vector<double>& score = L.score;
    score.assign(L.counts.begin(), L.counts.end());
    for (int32_t e : L.predicted) score[e] += opts_.hot_bonus;
    std::vector<int>& order = L.order;
    order.resize(E);
    std::iota(order.begin(), order.end(), 0);
    // Ties by expert id, as a stable sort of 0..E-1 would give (std::stable_sort allocates).
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
    std::fill(L.keep.begin(), L.keep.end(), 0);
    const int want = std::min(c.capacity(), E);
    for (int i = 0; i < want && score[order[i]] > 0; ++i) L.keep[order[i]] = 1;
    for (int i = 0; i < want && score[order[i]] > 0; ++i) {
      if (c.find(order[i]) >= 0) continue;
      const int v = c.victim(L.keep);
      if (v < 0) break;
      start_load(L, c, v, order[i], /*urgent=*/false, /*prefetched=*/false);
    }
  }
  std::vector<int>& hit = s.group_which;
  std::vector<int>& miss = s.group_miss;
  std::vector<int>& pinned = s.slot_pinned;
  std::vector<int32_t>& hit_ids = s.group_ids;
  std::vector<int32_t>& miss_ids = s.miss_ids;
  s.clear_expert_lists();
  const uint64_t tick = ++tick_;
  for (int g = 0; g < static_cast<int>(s.groups.size()); ++g) {
    const int e = s.groups[g].expert;
    const int slot = c.find(e);
    if (slot >= 0 && c.state(slot) == SlotCache::State::Ready) {
      c.pin(slot, tick);
      pinned.push_back(slot);
      hit.push_back(g);
      hit_ids.push_back(c.mapped(e));
      ++c_.slot_hits;
    } else {
      miss.push_back(g);
      miss_ids.push_back(e);
      willneed(L, e);
      ++c_.slot_misses;
      ++c_.fallbacks;
    }
  }
  lk.unlock();
  compute(m, c.views(), hit, hit_ids, s);
  compute_mapped(m, L, miss, miss_ids, s);
  lk.lock();
  for (int slot : pinned) c.unpin(slot);
}

void ExpertStreamer::start_warm(Layer& L, bool urgent) {
  // Lock held by the caller.
  if (L.warm_gen == gen_) return;
  L.warm_gen = gen_;
  L.warm_error.clear();
  ++c_.layer_reads;
  const bool direct = opts_.io_mode == IoMode::Direct;
  WholeBuffer* buf = nullptr;
  if (direct) {
    L.warm_buffer = L.ordinal % 2;
    buf = &whole_[L.warm_buffer];
    if (buf->slabs.empty()) {
      const size_t n = L.layout.ranges.size();
      buf->slabs.resize(n);
      buf->bases.resize(n);
      for (size_t r = 0; r < n; ++r) buf->slabs[r].reset(L.layout.ranges[r].bytes * L.layout.n_experts + kIoAlign);
    }
    // Each range starts at its file's block phase (base ≡ offset mod kIoAlign): direct reads land in place.
    for (size_t r = 0; r < L.layout.ranges.size(); ++r) {
      buf->bases[r] = buf->slabs[r].data() + L.layout.ranges[r].offset[0] % kIoAlign;
    }
  }
  Layer* layer = &L;
  for (size_t r = 0; r < L.layout.ranges.size(); ++r) {
    const ExpertRange& x = L.layout.ranges[r];
    for (const ExpertRun& run : L.layout.runs(r)) {
      const int file = x.file[run.e0];
      const uint64_t start = x.offset[run.e0], total = x.bytes * static_cast<uint64_t>(run.e1 - run.e0);
      uint8_t* const base = buf ? buf->bases[r] + x.bytes * static_cast<uint64_t>(run.e0) : nullptr;
      const std::string what = "layer " + std::to_string(L.layout.layer) + " (" + x.tensor(run.e0) + ")";
      for (uint64_t c0 = 0; c0 < total; c0 += kWarmChunk) {
        const uint64_t len = std::min(kWarmChunk, total - c0);
        ++L.warm_pending;
        if (buf) ++buf->pending;
        uint8_t* dst = base ? base + c0 : nullptr;
        pool_->submit(
            [this, layer, buf, file, start, what, c0, len, dst](ReadScratch& rs) {
              std::string err;
              try {
                if (dst) {
                  files_->read(file, start + c0, len, dst, rs, what);
                } else {
                  files_->warm(file, start + c0, len, rs, what);
                }
              } catch (const std::exception& ex) {
                err = ex.what();
              }
              {
                std::lock_guard<std::mutex> lk(mu_);
                --layer->warm_pending;
                if (buf) --buf->pending;
                if (err.empty()) {
                  c_.io_bytes += len;
                } else if (layer->warm_error.empty()) {
                  layer->warm_error = err;
                }
              }
              cv_.notify_all();
            },
            urgent);
      }
    }
  }
}

void ExpertStreamer::run_whole(const Model& m, Layer& L, Scratch& s) {
  std::unique_lock<std::mutex> lk(mu_);
  const bool direct = opts_.io_mode == IoMode::Direct;
  // A buffer still receiving an abandoned pass's reads is not reused until they land.
  if (direct && L.warm_gen != gen_) cv_.wait(lk, [&] { return whole_[L.ordinal % 2].pending == 0; });
  start_warm(L, /*urgent=*/true);
  const int64_t next = next_moe_[L.layout.layer];
  if (next >= 0) {
    Layer& N = layer(next);
    // Read the next layer while this one computes (direct: only into a buffer that is idle).
    if (!direct || whole_[N.ordinal % 2].pending == 0) start_warm(N, /*urgent=*/false);
  }
  if (L.warm_pending > 0) {
    const uint64_t t0 = now_ns();
    cv_.wait(lk, [&] { return L.warm_pending == 0; });
    c_.blocked_ns += now_ns() - t0;
  }
  if (!L.warm_error.empty()) {
    L.warm_gen = 0;  // read again next time
    fail(L.warm_error);
  }
  WeightMatrix views[3];
  if (direct) L.layout.views(whole_[L.warm_buffer].bases.data(), L.layout.n_experts, views);
  lk.unlock();
  std::vector<int> which(s.groups.size());
  std::iota(which.begin(), which.end(), 0);
  std::vector<int32_t> id(s.groups.size());
  for (size_t g = 0; g < s.groups.size(); ++g) id[g] = s.groups[g].expert;
  if (direct) {
    for (int32_t e : id) check_stacked(*L.moe, L.layout, e, whole_[L.warm_buffer].bases.data(), e);
    compute(m, views, which, id, s);  // the buffer holds the experts stacked, whatever the file layout
  } else {
    compute_mapped(m, L, which, id, s);
  }
}

void ExpertStreamer::flush_deferred(Layer& L) {
  if (L.deferred.empty() || !L.staged) return;
  SlotCache& c = *L.staged;
  // Keep the whole predicted set, not only what waits: some of it is already in slots.
  std::fill(L.keep.begin(), L.keep.end(), 0);
  for (int32_t e : L.predicted) L.keep[e] = 1;
  for (int32_t e : L.deferred) L.keep[e] = 1;
  for (int32_t e : L.deferred) {
    if (c.find(e) >= 0) continue;
    const int v = c.victim(L.keep);
    if (v < 0) break;
    start_load(L, c, v, e, /*urgent=*/false, /*prefetched=*/true);
  }
  L.deferred.clear();
}

void ExpertStreamer::prefetch(int64_t l, const int32_t* ids, int k) {
  std::lock_guard<std::mutex> lk(mu_);
  Layer& L = layer(l);
  L.predicted.assign(ids, ids + k);
  switch (opts_.decode_path) {
    case ExpertPath::Staged: {
      SlotCache& c = staged(L);
      // Slots of this layer still hold what it routes to in this step unless those are reserved.
      if (L.ran_gen != gen_ && !L.reserved) {
        L.deferred.insert(L.deferred.end(), ids, ids + k);
        return;
      }
      std::fill(L.keep.begin(), L.keep.end(), 0);
      for (int i = 0; i < k; ++i) L.keep[ids[i]] = 1;
      for (int i = 0; i < k; ++i) {
        if (c.find(ids[i]) >= 0) continue;
        const int v = c.victim(L.keep);
        if (v < 0) {
          L.deferred.push_back(ids[i]);
          continue;
        }
        start_load(L, c, v, ids[i], /*urgent=*/false, /*prefetched=*/true);
      }
      break;
    }
    case ExpertPath::Hot:
    case ExpertPath::Exact:
      for (int i = 0; i < k; ++i) {
        const int slot = L.hot ? L.hot->find(ids[i]) : -1;
        if (slot < 0 || L.hot->state(slot) != SlotCache::State::Ready) warm_expert(L, ids[i]);
      }
      break;
    case ExpertPath::WholeLayer: break;
  }
}

void ExpertStreamer::reserve(int64_t l, const int32_t* ids, int k) {
  std::lock_guard<std::mutex> lk(mu_);
  if (opts_.decode_path != ExpertPath::Staged) return;
  Layer& L = layer(l);
  SlotCache& c = staged(L);
  for (int i = 0; i < k; ++i) {
    const int s = c.find(ids[i]);
    if (s >= 0) c.reserve(s);
  }
  L.reserved = true;
}

}  // namespace bs
