#include "cuda/expert-slots.cuh"

#include <algorithm>

#include "common/error.h"
#include "common/experts/expert-layout.h"

namespace bs::BS_CUDA_NS {

namespace {

// Part p (codes, scales, biases) of expert e's matrix in stack w: host address and bytes.
std::pair<const uint8_t*, size_t> part(const WeightMatrix& w, int64_t e, int p) {
  const size_t sb = static_cast<size_t>(w.rows * w.groups_per_row()) * dtype_size(w.dtype);
  if (p == 0) return {w.w_row(e, 0), static_cast<size_t>(w.rows) * w.row_bytes()};
  const uint8_t* base = p == 1 ? w.scales : w.biases;
  return {base + w.sb_index(e, 0) * dtype_size(w.dtype), sb};
}

}  // namespace

// One MoE layer: per matrix j (gate, up, down) and part p, table entries [j][e][p] pointing at the
// expert's mapped pages or at its slot; slots' bases and part sizes.
struct ExpertSlots::Layer {
  const WeightMatrix* mats[3];
  int n_experts = 0;
  std::vector<const uint8_t*> mapped;  // [3][E][3] device addresses of the file pages
  uint8_t* slot_base[9] = {};          // [3][3]: K slots each
  size_t part_bytes[9] = {};
  const uint8_t** table_host = nullptr;  // pinned [3][E][3]
  const uint8_t** table_dev = nullptr;
  std::vector<int> slot_of, expert_in;  // expert → slot, slot → expert (-1: none)
  std::vector<int64_t> used;            // per slot: the last step it served
  std::vector<int> pending;             // slots being filled, not yet in the table
  bool dirty = false;
  LayerLayout layout;  // staged fills: where each expert's 9 ranges lie in the files

  size_t entries() const { return static_cast<size_t>(3 * n_experts * 3); }
  void point(int e, int slot) {  // expert e's entries at its slot, or (-1) its mapped pages
    for (int j = 0; j < 3; ++j)
      for (int p = 0; p < 3; ++p) {
        const size_t i = static_cast<size_t>((j * n_experts + e) * 3 + p);
        table_host[i] = slot < 0 ? mapped[i] : slot_base[j * 3 + p] + slot * part_bytes[j * 3 + p];
      }
    dirty = true;
  }
};

ExpertSlots::ExpertSlots(Context& c, const DeviceWeights& w, const Model& m, int k_slots, int64_t max_chunk, Reader io)
    : c_(c), top_k_(m.top_k), k_slots_(k_slots), max_chunk_(max_chunk), io_(io) {
  try {
    build(w, m);
  } catch (...) {
    release();  // no destructor runs for a constructor that throws (device buffers: the Context's)
    throw;
  }
}

void ExpertSlots::build(const DeviceWeights& w, const Model& m) {
  const int k_slots = k_slots_;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const LayerWeights& lw = m.layers[l];
    if (!lw.is_moe) continue;
    const MoeWeights& moe = lw.moe;
    Layer L;
    L.mats[0] = &moe.gate, L.mats[1] = &moe.up, L.mats[2] = &moe.down;
    L.n_experts = static_cast<int>(moe.gate.n_mats);
    if (k_slots < 1 || k_slots >= L.n_experts)
      fail("cuda decoder: expert slots per layer must be 1 to ", L.n_experts - 1, ", got ", k_slots);
    L.mapped.resize(L.entries());
    for (int j = 0; j < 3; ++j) {
      for (int p = 0; p < 3; ++p) {
        L.part_bytes[j * 3 + p] = part(*L.mats[j], 0, p).second;
        L.slot_base[j * 3 + p] = static_cast<uint8_t*>(c_.hold(k_slots * L.part_bytes[j * 3 + p]));
        stats_.slot_bytes += k_slots * L.part_bytes[j * 3 + p];
        if (layers_.empty()) expert_bytes_ += L.part_bytes[j * 3 + p];
      }
      for (int e = 0; e < L.n_experts; ++e) {
        for (int p = 0; p < 3; ++p) {
          const auto [host, bytes] = part(*L.mats[j], e, p);
          const uint8_t* d = w.mapped(host, bytes);
          if (!d) fail("cuda decoder: expert slots read the experts from a mapped model file; this one is not mapped");
          L.mapped[static_cast<size_t>((j * L.n_experts + e) * 3 + p)] = d;
        }
      }
    }
    if (io_.pool) {
      L.layout = layer_layout(m, static_cast<int64_t>(l));
      for (int r = 0; r < 9; ++r) {
        if (L.layout.ranges.size() != 9 || L.layout.ranges[r].bytes != L.part_bytes[r])
          fail("cuda decoder: layer ", l, "'s expert ranges in the files differ from its matrices");
      }
    }
    L.table_dev = static_cast<const uint8_t**>(c_.hold(L.entries() * sizeof(void*)));
    check(cudaHostAlloc(reinterpret_cast<void**>(&L.table_host), L.entries() * sizeof(void*), cudaHostAllocDefault),
          "cudaHostAlloc (expert table)");
    std::copy(L.mapped.begin(), L.mapped.end(), L.table_host);
    L.dirty = true;
    L.slot_of.assign(L.n_experts, -1);
    L.expert_in.assign(k_slots, -1);
    L.used.assign(k_slots, -1);
    for (int j = 0; j < 3; ++j) tables_[L.mats[j]->w] = L.table_dev + j * L.n_experts * 3;
    layer_of_[&moe] = layers_.size();
    layers_.push_back(std::move(L));
  }
  // The step's routed ids, then one predicted row per layer: [layers, max_chunk + 1, top_k].
  const size_t ids = layers_.size() * (max_chunk_ + 1) * top_k_ * sizeof(int32_t);
  ids_dev_ = static_cast<int32_t*>(c_.hold(ids));
  predicted_.assign(layers_.size(), 0);
  check(cudaHostAlloc(reinterpret_cast<void**>(&ids_host_), std::max<size_t>(ids, 16), cudaHostAllocDefault),
        "cudaHostAlloc (routed ids)");
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (copies)");
  check(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming), "cudaEventCreateWithFlags (copies)");
  if (io_.pool) {
    // A batch's fills at most: twice the routing width, no more than all slots.
    n_staging_ = static_cast<int>(std::min<int64_t>(std::max(8, 2 * top_k_), layers_.size() * k_slots_));
    check(cudaHostAlloc(reinterpret_cast<void**>(&staging_), n_staging_ * expert_bytes_, cudaHostAllocDefault),
          "cudaHostAlloc (expert staging)");
    failed_.assign(n_staging_, 0);
  }
}

ExpertSlots::~ExpertSlots() { release(); }

void ExpertSlots::release() {
  {
    std::unique_lock<std::mutex> lk(mu_);  // no I/O thread may still write into the staging
    cv_.wait(lk, [&] { return reading_ == 0; });
  }
  if (copy_) wait_stream(copy_);
  if (staging_) cudaFreeHost(staging_);
  for (Layer& L : layers_) {
    if (L.table_host) cudaFreeHost(L.table_host);
  }
  if (ids_host_) cudaFreeHost(ids_host_);
  if (copied_) cudaEventDestroy(copied_);
  if (copy_) cudaStreamDestroy(copy_);
}

const uint8_t* const* ExpertSlots::parts(const WeightMatrix& w) const {
  auto it = tables_.find(w.w);
  return it == tables_.end() ? nullptr : it->second;
}

int32_t* ExpertSlots::ids(const MoeWeights& moe) const { return ids_dev_ + layer_of_.at(&moe) * max_chunk_ * top_k_; }

int32_t* ExpertSlots::prediction(const MoeWeights& moe) {
  const size_t li = layer_of_.at(&moe);
  predicted_[li] = 1;
  return ids_dev_ + (layers_.size() * max_chunk_ + li) * top_k_;
}

void ExpertSlots::upload(Layer& L) {
  check(copy_to_device(L.table_dev, L.table_host, L.entries() * sizeof(void*), c_.stream()),
        "cudaMemcpyAsync (expert table)");
  L.dirty = false;
}

void ExpertSlots::fill(size_t li, int s, int e) {
  Layer& L = layers_[li];
  if (!io_.pool) {
    for (int j = 0; j < 3; ++j) {
      for (int p = 0; p < 3; ++p) {
        const auto [host, bytes] = part(*L.mats[j], e, p);
        check(copy_to_device(L.slot_base[j * 3 + p] + s * bytes, host, bytes, copy_),
              "cudaMemcpyAsync (expert into a slot)");
      }
    }
    return;
  }
  const int buf = static_cast<int>(fills_.size());
  fills_.push_back({li, s, e, buf});
  {
    std::lock_guard<std::mutex> lk(mu_);
    failed_[buf] = 0;
    ++reading_;
  }
  uint8_t* dst = staging_ + buf * expert_bytes_;
  const LayerLayout* lay = &L.layout;
  io_.pool->submit(
      [this, lay, e, dst, buf](ReadScratch& rs) {
        bool ok = true;
        try {
          const std::string what = "expert " + std::to_string(e) + " of layer " + std::to_string(lay->layer);
          uint8_t* at = dst;
          for (const ExpertRange& x : lay->ranges) {
            io_.files->read(x.file[e], x.offset[e], x.bytes, at, rs, what);
            at += x.bytes;
          }
        } catch (const std::exception&) {
          ok = false;  // the slot stays empty and its expert is read in place: same tokens
        }
        // Notified under the lock: the destructor, once it sees no reads, finds no job still here.
        std::lock_guard<std::mutex> lk(mu_);
        failed_[buf] = ok ? 0 : 1;
        --reading_;
        cv_.notify_all();
      },
      /*urgent=*/false);
}

void ExpertSlots::copy_staged() {
  {
    std::unique_lock<std::mutex> lk(mu_);
#ifdef BS_CUDA_EMULATION
    cv_.wait(lk, [&] { return reading_ == 0; });  // the emulation waits, so its counters repeat
#endif
    if (reading_ > 0) return;
  }
  for (const Fill& f : fills_) {
    Layer& L = layers_[f.layer];
    if (failed_[f.buf]) {
      L.expert_in[f.slot] = -1;
      L.pending.erase(std::find(L.pending.begin(), L.pending.end(), f.slot));
      continue;
    }
    const uint8_t* src = staging_ + f.buf * expert_bytes_;
    for (int r = 0; r < 9; ++r) {
      check(copy_to_device(L.slot_base[r] + f.slot * L.part_bytes[r], src, L.part_bytes[r], copy_),
            "cudaMemcpyAsync (staged expert into a slot)");
      src += L.part_bytes[r];
    }
    stats_.io_bytes += expert_bytes_;
  }
  check(cudaEventRecord(copied_, copy_), "cudaEventRecord (copies)");
  phase_ = Phase::Copying;
}

void ExpertSlots::before_step() {
  if (phase_ == Phase::Reading) copy_staged();
  if (phase_ == Phase::Copying) {
    const cudaError_t e = cudaEventQuery(copied_);
    if (e == cudaSuccess) {
      for (Layer& L : layers_) {
        for (int s : L.pending) {
          L.slot_of[L.expert_in[s]] = s;
          L.point(L.expert_in[s], s);
        }
        L.pending.clear();
      }
      fills_.clear();
      phase_ = Phase::Idle;
      in_flight_ = false;
    } else {
      cudaGetLastError();  // not ready yet: not an error
    }
  }
  for (Layer& L : layers_) {
    if (L.dirty) upload(L);
  }
}

void ExpertSlots::queue_ids() {
  const size_t bytes = layers_.size() * (max_chunk_ + 1) * top_k_ * sizeof(int32_t);
  if (bytes) check(copy_to_host(ids_host_, ids_dev_, bytes, c_.stream()), "routed ids");
}

// The compute stream is idle here (the step was synchronised), so a victim slot is read by no
// kernel: its expert's entries go back to the mapped pages (uploaded before the next step).
void ExpertSlots::after_step(int64_t n_tok, int k) {
  ++step_;
  int64_t queued = 0;
  for (size_t li = 0; li < layers_.size(); ++li) {
    Layer& L = layers_[li];
    const int32_t* ids = ids_host_ + li * max_chunk_ * top_k_;
    std::vector<int> wanted;
    // The next step's predicted experts first: fetched before they are used.
    const int32_t* next = ids_host_ + (layers_.size() * max_chunk_ + li) * top_k_;
    for (int i = 0; predicted_[li] && i < k; ++i) {
      const int e = next[i];
      if (e >= 0 && e < L.n_experts && L.slot_of[e] < 0 &&
          std::find(L.expert_in.begin(), L.expert_in.end(), e) == L.expert_in.end() &&
          std::find(wanted.begin(), wanted.end(), e) == wanted.end())
        wanted.push_back(e);
    }
    const size_t n_predicted = wanted.size();
    predicted_[li] = 0;
    for (int64_t i = 0; i < n_tok * k; ++i) {
      const int e = ids[i];
      if (e < 0 || e >= L.n_experts) continue;
      if (L.slot_of[e] >= 0) {
        ++stats_.hits;
        L.used[L.slot_of[e]] = step_;
      } else {
        ++stats_.misses;
        if (std::find(wanted.begin(), wanted.end(), e) == wanted.end() &&
            std::find(L.expert_in.begin(), L.expert_in.end(), e) == L.expert_in.end())
          wanted.push_back(e);
      }
    }
    if (in_flight_) continue;  // one batch of copies at a time
    for (size_t w = 0; w < wanted.size(); ++w) {
      const int e = wanted[w];
      if (io_.pool && fills_.size() >= static_cast<size_t>(n_staging_)) break;  // no staging free
      int victim = -1;
      for (int s = 0; s < k_slots_; ++s) {
        if (L.used[s] == step_ || std::find(L.pending.begin(), L.pending.end(), s) != L.pending.end()) continue;
        if (victim < 0 || L.used[s] < L.used[victim]) victim = s;
      }
      if (victim < 0) break;
      if (const int old = L.expert_in[victim]; old >= 0) {
        L.slot_of[old] = -1;
        L.point(old, -1);
      }
      L.expert_in[victim] = e;
      L.used[victim] = step_;
      L.pending.push_back(victim);
      fill(li, victim, e);
      ++queued;
      if (w < n_predicted) ++stats_.prefetches;
    }
  }
  if (queued == 0) return;
  stats_.copies += queued;
  in_flight_ = true;
  if (io_.pool) {
    phase_ = Phase::Reading;  // copies once the I/O threads have read the batch (before_step)
    return;
  }
  check(cudaEventRecord(copied_, copy_), "cudaEventRecord (copies)");
  phase_ = Phase::Copying;
}

}  // namespace bs::BS_CUDA_NS
