// The expert executor around the MoE FFN: runs a layer's routed experts through the path its
// phase selects (exact, staged, hot, whole-layer), keeps the slot buffers, hot sets and the
// I/O pool, starts the loads the prerouter predicts, and counts what it did. All paths feed
// the same gathered matmul, so they give the same outputs. One forward pass at a time per
// model (the caller holds Model::forward_mu); I/O threads only touch slots being loaded.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/blocks.h"
#include "common/experts/slot-cache.h"
#include "common/experts/stream-options.h"
#include "common/function-ref.h"
#include "common/io/io-pool.h"
#include "common/io/read-hints.h"

namespace bs {

struct StreamCounters {
  uint64_t blocked_ns = 0;      // compute waited on expert loads / layer reads
  uint64_t io_bytes = 0;        // bytes the I/O threads read (expert loads, layer reads)
  uint64_t loads = 0;           // experts loaded into slots
  uint64_t prefetch_loads = 0;  // … of which started for a prediction
  uint64_t prefetch_bytes = 0;
  uint64_t prefetch_unused_bytes = 0;  // prefetched, then replaced before any use
  uint64_t slot_hits = 0;              // routed experts found in a slot (ready or on its way)
  uint64_t slot_misses = 0;            // routed experts loaded on demand (staged) or run exact (hot)
  uint64_t fallbacks = 0;              // routed experts computed by the exact path instead
  uint64_t drops = 0;                  // routed rows mapped to the zero slot (never, by design)
  uint64_t layer_reads = 0;            // whole-layer reads
  uint64_t prefetch_misses = 0;        // staged experts of a predicted routing that were not prefetched
  uint64_t read_hints = 0;             // experts whose pages were requested from the OS (WILLNEED)
  // Page-cache paths (exact, hot misses): predicted experts queued for an I/O thread to bring
  // into the page cache ahead of their layer, the bytes it had to read (pages not cached yet),
  // and the routed experts computed after their warm landed (waits count in blocked_ns).
  uint64_t warm_experts = 0;
  uint64_t warm_bytes = 0;
  uint64_t warm_hits = 0;

  StreamCounters& operator+=(const StreamCounters& o);
  StreamCounters operator-(const StreamCounters& o) const;
};

class ExpertStreamer {
 public:
  // Builds the layouts, opens the files for explicit reads and starts the I/O threads;
  // slot buffers are allocated when a path first needs them. Throws bs::Error.
  ExpertStreamer(const Model& m, const StreamOptions& opts);
  ~ExpertStreamer();

  const StreamOptions& options() const { return opts_; }
  int staged_slots() const { return staged_slots_; }
  int hot_slots() const { return hot_slots_; }
  // Anonymous bytes of slot and layer buffers allocated so far.
  uint64_t buffer_bytes() const;

  // Start of a forward pass: throws when a weight file shrank (its mapping would fault).
  void begin_forward();
  // End of a forward pass, also after an error: drops pins, reservations, pending prefetches.
  void end_forward();

  // s.act[rows] for the rows sorted by sort_routed_rows (s.groups, s.order_ids, s.rows) of MoE
  // layer `layer`, through the path of `phase`. Throws bs::Error when a load failed.
  void run(const Model& m, int64_t layer, Phase phase, Scratch& s);
  // The prerouter's routing of `layer` for the next token: staged loads start (at once into
  // free slots, else when the layer has run this step), hot gets the bonus, exact and hot
  // misses are read into the page cache by the I/O threads (only what is not cached yet).
  void prefetch(int64_t layer, const int32_t* ids, int k);
  // At the start of a decode step: the experts predicted for `layer` now are kept in their
  // slots until the layer has run.
  void reserve(int64_t layer, const int32_t* ids, int k);

  StreamCounters counters() const;
  // The I/O threads and the files they read (a CUDA session's expert slots fill through them).
  IoPool& io_pool() const { return *pool_; }
  const ModelFiles& files() const { return *files_; }

  // Device decoders (metal/metal-decoder-slots.cpp) run the staged path's experts on the slot
  // slabs themselves. The staged slots of MoE layer l (made on first use).
  const SlotCache& staged_cache(int64_t l);
  // Whether every expert of ids[0..n) sits in a slot of layer l whose load has landed.
  bool staged_ready(int64_t l, const int32_t* ids, int n);
  // run() on the staged path for the distinct experts of s.groups, the computing left to
  // `wave(c, last)`: once per wave, its groups s.group_which in slots s.group_ids (never from the
  // file: a wave waits for a slot instead). A wave's slots stay pinned until the next one, the
  // last wave's until end_forward (the device reads them after this returns). Throws bs::Error
  // when a load failed.
  void run_device(int64_t l, Scratch& s, FunctionRef<void(const SlotCache& c, bool last)> wave);
  // Fault injection for tests: the run_device call after `after` more fails as a load would
  // (−1: none), so a device append fails halfway through its layers.
  void fail_device_run(int after) { fail_run_ = after; }

 private:
  struct WholeBuffer {
    std::vector<AlignedBuffer> slabs;
    std::vector<uint8_t*> bases;
    int pending = 0;  // chunk reads in flight into this buffer
  };
  struct Layer {
    LayerLayout layout;
    const MoeWeights* moe = nullptr;  // for the first-use finite check of each expert
    int ordinal = 0;                  // index among MoE layers
    std::unique_ptr<SlotCache> staged, hot;
    std::vector<char> keep;         // [E] scratch
    std::vector<int32_t> deferred;  // predicted experts waiting for a free staged slot
    bool reserved = false;
    uint64_t ran_gen = 0;
    // hot
    std::vector<double> counts;
    std::vector<double> score;  // [E] scratch of the hot set's re-choice
    std::vector<int> order;
    std::vector<int32_t> predicted;
    // page-cache warming, by the parity of the pass it is for (a layer runs after it predicted
    // the next pass): [E] the pass a warm was issued for (0 none), and whether it landed
    std::array<std::vector<uint64_t>, 2> warm_for;
    std::array<std::vector<char>, 2> warm_done;
    uint64_t hot_runs = 0;
    // whole-layer
    uint64_t warm_gen = 0;
    int warm_pending = 0;
    int warm_buffer = -1;
    std::string warm_error;
    // compute_mapped's one-group lists (scratch: the decode step allocates nothing)
    std::vector<int> one_which;
    std::vector<int32_t> one_id;
  };

  Layer& layer(int64_t l) { return *layers_[l]; }
  SlotCache& staged(Layer& L);
  SlotCache& hot(Layer& L);
  // Points slot `s` at expert e and queues its 9 reads. Lock held.
  void start_load(Layer& L, SlotCache& c, int s, int e, bool urgent, bool prefetched);
  void flush_deferred(Layer& L);
  // Waits (lock held) until every slot in `slots` is Ready; throws the first load error.
  void wait_slots(std::unique_lock<std::mutex>& lk, SlotCache& c, const std::vector<int>& slots);
  // Requests expert e's pages from the OS while hints_ is on.
  void willneed(const Layer& L, int e);
  // Queues a background read of expert e's pages that are not in the page cache yet, for the
  // next forward pass (lock held; only while hints_ is on).
  void warm_expert(Layer& L, int e);
  void start_warm(Layer& L, bool urgent);

  void run_exact(const Model& m, Layer& L, Scratch& s);
  void run_staged(const Model& m, Layer& L, Scratch& s);
  // The staged path's slot work over s.groups in waves of at most the slot count: hits pinned,
  // misses loaded on the I/O threads (urgent) and waited for, then `wave(c, last)` with the lock
  // released. A miss with no free slot is computed from the file (s.group_miss), or on a
  // `device` waits for a slot's load to land. Lock held on entry and return.
  void stage_waves(std::unique_lock<std::mutex>& lk, Layer& L, Scratch& s, bool device,
                   FunctionRef<void(SlotCache&, bool)> wave);
  int wait_victim(std::unique_lock<std::mutex>& lk, SlotCache& c, const std::vector<char>& keep);
  // After a layer ran: its reservations end and its deferred prefetches start (lock held).
  void ran(Layer& L);
  void run_hot(const Model& m, Layer& L, Scratch& s);
  void run_whole(const Model& m, Layer& L, Scratch& s);
  // Whether a whole-layer chunk reads layer L whole: its read is on its way (started while the
  // layer before computed), or the chunk routes to at least whole_layer_share of its experts.
  bool whole_pays(const Layer& L, const Scratch& s);
  // Computes the groups `which` of s.groups with views v and one matrix id per group,
  // writing their rows of s.act.
  void compute(const Model& m, const WeightMatrix* v, const std::vector<int>& which, const std::vector<int32_t>& id,
               Scratch& s);
  // compute over the experts as they lie in the mapping (per expert when they are not stacked).
  void compute_mapped(const Model& m, Layer& L, const std::vector<int>& which, const std::vector<int32_t>& id,
                      Scratch& s);

  StreamOptions opts_;
  int staged_slots_ = 0, hot_slots_ = 0;
  int fail_run_ = -1;                           // fail_device_run
  std::vector<std::unique_ptr<Layer>> layers_;  // by model layer; null for dense layers
  std::vector<int64_t> next_moe_;               // next MoE layer after l, or -1
  std::unique_ptr<ModelFiles> files_;
  std::array<WholeBuffer, 2> whole_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  StreamCounters c_;
  uint64_t gen_ = 0;                       // forward passes
  uint64_t tick_ = 0;                      // layer runs (slot recency)
  HintGate hints_;                         // stepped by begin_forward, read by the forward thread only
  std::vector<unsigned char> hint_pages_;  // willneed's mincore vector (the forward thread's)
  std::atomic<uint64_t> read_hints_{0};    // counted outside mu_: the exact path runs unlocked
  // Last: destroyed first, so no I/O thread outlives the buffers it writes.
  std::unique_ptr<IoPool> pool_;
};

}  // namespace bs
