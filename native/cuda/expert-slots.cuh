// Routed experts in K device slots per MoE layer instead of all resident (the discrete-GPU case
// of issue 21 item 3). A gathered matmul reads each expert through the layer's pointer table on
// the device (qmatmul's `parts`): a slot when the expert is in one, else the expert's own pages
// in the model file, registered once (pinned, mapped) and read over the bus in place. After a
// step the routed ids come back with the token; experts used but not in a slot are copied on a
// copy stream into the layer's least recently used slots, and their table entries move to the
// slot only once the copies have finished (checked without waiting before a later step), so the
// copies overlap the next steps' compute. With a prerouter, the experts it predicts for the next
// step come back with the ids and are fetched first, before they are used.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/model.h"
#include "cuda/device-context.cuh"

namespace bs::BS_CUDA_NS {

class ExpertSlots {
 public:
  // k_slots per MoE layer (< its expert count); throws bs::Error when the experts are not in a
  // mapped file or a buffer cannot be had.
  ExpertSlots(Context& c, const Model& m, int k_slots, int64_t max_chunk);
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
  // Before a step's launches: slots whose copies finished join their tables (uploaded on the
  // compute stream). After its launches: queue the ids' copy back (same synchronisation).
  void before_step();
  void queue_ids();
  // After the step's synchronisation: count hits and queue copies for the misses.
  void after_step(int64_t n_tok);

  struct Stats {
    int64_t hits = 0, misses = 0, copies = 0;  // routed (token, expert) uses; experts copied in
    int64_t prefetches = 0;                    // experts queued for copying because they were predicted
    size_t slot_bytes = 0;                     // device memory of all slots
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Layer;
  void upload(Layer& l);

  Context& c_;
  int top_k_, k_slots_;
  int64_t max_chunk_;
  std::vector<Layer> layers_;
  std::unordered_map<const void*, const uint8_t* const*> tables_;  // by a stack's first byte
  std::unordered_map<const MoeWeights*, size_t> layer_of_;
  int32_t* ids_dev_ = nullptr;   // [layers, max_chunk, top_k], then predictions [layers, top_k]
  int32_t* ids_host_ = nullptr;  // pinned copy
  std::vector<char> predicted_;  // per layer: this step wrote a prediction
  cudaStream_t copy_ = nullptr;
  cudaEvent_t copied_ = nullptr;
  bool in_flight_ = false;  // a batch of copies queued and not yet joined
  int64_t step_ = 0;
  Stats stats_;
};

}  // namespace bs::BS_CUDA_NS
