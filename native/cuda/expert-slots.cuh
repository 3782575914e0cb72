// Routed experts in K device slots per MoE layer instead of all resident (the discrete-GPU case
// of issue 21 item 3). A gathered matmul reads each expert through the layer's pointer table on
// the device (qmatmul's `parts`): a slot when the expert is in one, else the expert's own pages
// in the model file, registered once (pinned, mapped) and read over the bus in place. After a
// step the routed ids come back with the token; experts used but not in a slot are copied on a
// copy stream into the layer's least recently used slots, and their table entries move to the
// slot only once the copies have finished (checked without waiting before a later step), so the
// copies overlap the next steps' compute. With a prerouter, the experts it predicts for the next
// step come back with the ids and are fetched first, before they are used. A copy's source is
// the registered file, or (given an I/O pool: sessions on a discrete GPU) a pinned staging buffer
// that one of the model's I/O threads filled with explicit reads while the device computed.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/io/io-pool.h"
#include "common/model.h"
#include "cuda/cuda-weights.cuh"
#include "cuda/device-context.cuh"

namespace bs::BS_CUDA_NS {

class ExpertSlots {
 public:
  // Where slot fills read the experts: pool and files (the model's, outliving the slots) read
  // each into pinned staging first; without them the copies read the registered file.
  struct Reader {
    IoPool* pool = nullptr;
    const ModelFiles* files = nullptr;
  };
  // k_slots per MoE layer (< its expert count) in c's memory; experts not in a slot are read in
  // place through w's registration of the model file. Throws bs::Error when the experts are not in
  // a mapped file or a buffer cannot be had.
  ExpertSlots(Context& c, const DeviceWeights& w, const Model& m, int k_slots, int64_t max_chunk, Reader io);
  ~ExpertSlots();
  ExpertSlots(const ExpertSlots&) = delete;
  ExpertSlots& operator=(const ExpertSlots&) = delete;

  // The device table (3 pointers per expert) a gathered matmul over w reads; nullptr when w is
  // not a routed expert stack.
  const uint8_t* const* parts(const WeightMatrix& w) const;
  // Where layer `moe`'s routing writes its ids for the step.
  int32_t* ids(const MoeWeights& moe) const;
  // Where this step writes layer `moe`'s predicted ids [top_k] for the next step (the prerouter's),
  // marking them to be fetched after it.
  int32_t* prediction(const MoeWeights& moe);
  // Before a step's launches: staged reads that finished are queued for copying, and slots whose
  // copies finished join their tables (uploaded on the compute stream). After its launches: queue
  // the ids' copy back (same synchronisation).
  void before_step();
  void queue_ids();
  // After the step's synchronisation: count hits and queue copies for the misses (n_tok tokens
  // of k routed experts each).
  void after_step(int64_t n_tok, int k);

  struct Stats {
    int64_t hits = 0, misses = 0, copies = 0;  // routed (token, expert) uses; experts copied in
    int64_t prefetches = 0;                    // experts queued for copying because they were predicted
    uint64_t io_bytes = 0;                     // expert bytes the I/O threads read into pinned staging
    size_t slot_bytes = 0;                     // device memory of all slots
  };
  const Stats& stats() const { return stats_; }
  int k_slots() const { return k_slots_; }
  size_t expert_bytes() const { return expert_bytes_; }  // one expert of one layer (gate, up, down)

 private:
  void build(const DeviceWeights& w, const Model& m);  // the constructor's work
  void release();                                      // what the destructor frees (also on a failed build)
  struct Layer;
  // A slot being filled through staging: layer, slot, expert, staging buffer.
  struct Fill {
    size_t layer;
    int slot, expert, buf;
  };
  enum class Phase { Idle, Reading, Copying };
  void upload(Layer& l);
  // Queues expert e of layer li into slot s: its copies from the file, or its reads into the next
  // staging buffer (the caller checked that one is free).
  void fill(size_t li, int s, int e);
  // The batch's reads done (waited for under the emulation, polled on a device): copies queued.
  void copy_staged();

  Context& c_;
  int top_k_, k_slots_;
  int64_t max_chunk_;
  size_t expert_bytes_ = 0;
  std::vector<Layer> layers_;
  std::unordered_map<const void*, const uint8_t* const*> tables_;  // by a stack's first byte
  std::unordered_map<const MoeWeights*, size_t> layer_of_;
  int32_t* ids_dev_ = nullptr;   // [layers, max_chunk, top_k], then predictions [layers, top_k]
  int32_t* ids_host_ = nullptr;  // pinned copy
  std::vector<char> predicted_;  // per layer: this step wrote a prediction
  cudaStream_t copy_ = nullptr;
  cudaEvent_t copied_ = nullptr;
  bool in_flight_ = false;  // a batch of fills queued and not yet joined
  Phase phase_ = Phase::Idle;
  int64_t step_ = 0;
  Stats stats_;
  // Staged fills: the pool's threads read into pinned buffers [n_staging_, expert_bytes_];
  // reading_ (under mu_) counts buffers still being read, failed_ marks a read that failed.
  Reader io_;
  uint8_t* staging_ = nullptr;
  int n_staging_ = 0;
  std::vector<Fill> fills_;
  std::vector<char> failed_;
  int reading_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace bs::BS_CUDA_NS
