// One conversation's state: the KV cache (float32 or F16, grown on demand up to the context
// length) and the forward pass that appends tokens to it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/blocks.h"
#include "common/device-decoder.h"
#include "common/experts/streamer.h"
#include "common/multimodal.h"
#include "common/prerouter/heads.h"
#include "common/state-buffer.h"

namespace bs {

struct SessionStats {
  uint64_t tokens = 0;            // tokens run through the model
  uint64_t weight_bytes = 0;      // weight bytes read (each matrix / expert once per forward chunk)
  uint64_t experts_computed = 0;  // distinct experts computed, summed over layers and chunks
  StreamCounters stream;          // the expert executor's work during this session's forward passes
  uint64_t predicted_layers = 0;  // MoE layer-steps routed by a prerouter prediction
  uint64_t recall_hits = 0;       // predicted experts the true router also chose (measureRecall)
  uint64_t recall_total = 0;      // experts predicted where the true router was also run
  StepProfile profile;            // stage times, when the model was loaded with profiling
};

// Observes the routing each MoE layer executes (calibration records the teacher's routing).
struct RoutingRecorder {
  virtual ~RoutingRecorder() = default;
  // xn [n, hidden] (the layer's MoE input) and ids [n, k] of n consecutive tokens.
  virtual void on_route(int64_t layer, const float* xn, int64_t n, const int32_t* ids, int k) = 0;
};

class Session {
 public:
  // context_length ≤ 0: the model's max_position_embeddings.
  Session(std::shared_ptr<const Model> model, int64_t context_length);

  const Model& model() const { return *model_; }
  int64_t n_past() const { return n_past_; }
  int64_t context_length() const { return ctx_len_; }
  const SessionStats& stats() const { return stats_; }
  // Bytes held by the KV cache, scratch buffers, snapshots and image rows kept for replays.
  uint64_t state_bytes() const;

  // Appends tokens (n ≥ 1) and writes the last token's logits to logits[vocab]. Throws
  // bs::Error before changing anything when an id is outside the vocabulary or the context
  // would overflow.
  // With `mm`, its rows take image embeddings (see MultimodalInput); checked before anything changes.
  void append(const int32_t* tokens, int64_t n, float* logits, const MultimodalInput* mm = nullptr);
  // As append, returning the greedy token (largest logit among ids below `vocab`, ties to the
  // lower id; −1 when none is above −∞) instead of the logits: on a device decoder only that token
  // comes back from the device. vocab ≤ 0 or above the model's: the whole vocabulary.
  int32_t append_greedy(const int32_t* tokens, int64_t n, int64_t vocab = 0);
  // Later appends run through `d`, a whole-forward decoder with the KV cache on its device
  // (nullptr: op by op on the model's kernel table). Only on an empty session; the constructor
  // takes the backend's decoder when it has one. Image rows and their 3-D positions run on it
  // too. A call it cannot take (a routing recorder) or a device error hands the cache back to the host, which runs
  // that call and every later one.
  void use_decoder(std::unique_ptr<DeviceDecoder> d);
  bool on_device() const { return decoder_ != nullptr; }
  // Routing decisions are reported to `r` (nullptr: none) until replaced.
  void set_recorder(RoutingRecorder* r) { recorder_ = r; }
  // Keeps the first n tokens of the cache (n ≤ n_past) so a shared prefix can be reused.
  // The prerouter's state (last routing, pending predictions) is dropped. A hybrid model's
  // recurrent state is restored from the latest snapshot at or before n (the end of a recent
  // prefill, or a decode step < kDecodeSnapshotEvery tokens back) and the tokens from there to
  // n are run again.
  void truncate(int64_t n);
  // The LoRA adapter later calls run with (nullptr: the base model). Cached keys and values
  // stay as they were computed, so outputs change from the next token on; callers that
  // reuse a cached prefix must key it by adapter. Throws bs::Error for another model's adapter.
  void set_adapter(std::shared_ptr<const LoraAdapter> adapter);
  const std::shared_ptr<const LoraAdapter>& adapter() const { return adapter_; }
  // Routes later calls with the top k experts per token (1 ≤ k ≤ the model's K), without a reload.
  // Like an adapter, cached keys and values stay as computed: callers that reuse a prefix must key
  // it by k. A change drops the prerouter's state (its one-hot features have k entries).
  // Throws bs::Error for k out of range.
  void set_top_k(int k);
  int top_k() const { return top_k_; }

 private:
  // Recurrent-state snapshots kept (each is every linear layer's conv history and S).
  static constexpr size_t kMaxSnapshots = 4;
  // Decode snapshots every this many tokens after the latest snapshot, so truncating into
  // generated text replays fewer tokens than that; when the slots are full a decode snapshot
  // replaces the earliest decode one, keeping the ends of prefills (prompt boundaries).
  static constexpr int64_t kDecodeSnapshotEvery = 32;
  struct Snapshot {
    int64_t pos = -1;  // −1: dropped by a truncation, storage kept for the next one
    bool decode = false;
    StateBuffer state;
  };
  // Routing of one MoE layer for one token: ids and weights [K].
  struct Routing {
    std::vector<int32_t> ids;
    std::vector<float> weights;
  };
  void forward_chunk(const int32_t* tokens, int64_t n, float* logits);
  // Throws bs::Error for an id outside the vocabulary or a context overflow.
  void check_append(const int32_t* tokens, int64_t n) const;
  // Runs the append on the decoder (logits or the greedy token back); false when it was not
  // taken (no decoder, or hand_over() ran: the caller runs it on the host).
  bool device_append(const int32_t* tokens, int64_t n, float* logits, int32_t* greedy, const MultimodalInput* mm,
                     int64_t greedy_vocab = 0);
  // The decoder's cache rows copied into the host caches, and the decoder dropped (forward_mu held).
  // Hybrid models: the snapshots copied back, and the recurrent state too when state_valid (after
  // a failed chunk it is not: the caller rebuilds it with restore_recurrent).
  void hand_over(bool state_valid);
  // restore_recurrent on the device decoder: its snapshot loaded, the tokens after it run again.
  void restore_on_device(int64_t n);
  void check_multimodal(const MultimodalInput& mm, int64_t n) const;
  void splice_embeddings();
  void add_deepstack(int64_t layer);
  // RoPE position of the next token after the first n cached ones, minus n (0 without images).
  int64_t rope_shift(int64_t n) const { return n == 0 || shift_.empty() ? 0 : shift_[n - 1]; }
  void record_positions(int64_t n);
  // Hybrid models: what a replay needs besides tokens_ (kept_*): after record_positions, the
  // chunk's image rows and, once any append gave 3-D positions, every row's position.
  void keep_inputs(int64_t n);
  // Forgets what was kept past row n (a truncation to n).
  void drop_kept(int64_t n);
  // The kept inputs of rows [from, n) as one append's MultimodalInput (nullptr: text only).
  const MultimodalInput* replay_input(int64_t from, int64_t n);
  void moe_layer(int64_t l, int64_t n, bool predict, const LayerLora* lora);
  void reserve(int64_t tokens);
  // Hybrid models: the recurrent state at position n ≤ n_past from a snapshot plus a replay of
  // the tokens after it (forward_mu held); also repairs a state a failed chunk left half-advanced.
  void restore_recurrent(int64_t n);
  // Snapshots the state at n_past (`decode`: taken by a decode step).
  void save_snapshot(bool decode);
  // After an append of n tokens: a snapshot at the end of a prefill, or every
  // kDecodeSnapshotEvery decode tokens.
  void snapshot_after(int64_t n);

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const LoraAdapter> adapter_;
  int64_t ctx_len_ = 0, n_past_ = 0, capacity_ = 0;
  int top_k_ = 0;
  // Per layer [capacity, n_kv, head_dim] elements of the model's KV type, as raw bytes.
  std::vector<std::vector<uint8_t>> k_cache_, v_cache_;
  std::vector<float> x_, xn_, y_;
  // Hybrid models: every linear layer's recurrent state (layer l at rec_offset_[l], −1 for
  // attention layers), the tokens in the cache (for replays) and snapshots (position, state).
  std::vector<float> rec_;
  std::vector<int64_t> rec_offset_;
  std::vector<int32_t> tokens_, replay_;
  std::vector<Snapshot> snapshots_;
  Scratch scratch_;
  SessionStats stats_;
  // Prerouter: per layer, the executed top-k of the last token (t−1 for the next step; empty
  // when unknown) and the routing predicted for the next token (empty when none).
  std::vector<std::vector<int32_t>> last_ids_;
  std::vector<Routing> predicted_;
  // The step's consumed predictions and the state an append restores on failure; members, so
  // a warm decode step copies into their capacity instead of allocating.
  std::vector<Routing> consume_;
  std::vector<std::vector<int32_t>> saved_last_ids_;
  std::vector<Routing> saved_predicted_;
  HeadScratch head_scratch_;
  RoutingRecorder* recorder_ = nullptr;
  const MultimodalChunk* mm_ = nullptr;  // the multimodal part of the chunk being run
  // Per cached row: (largest RoPE position up to it) + 1 − (row + 1); empty while every position
  // equals its row (text only), so decode after an image continues past the image's positions.
  std::vector<int32_t> shift_;
  // Hybrid models, for replays: the cached rows' image rows (ascending) and embeddings
  // [rows, hidden], and every cached row's (time, height, width) position [rows, 3] (empty: text
  // only); during a replay they still cover the rows being run again.
  bool replaying_ = false;  // restore_recurrent / restore_on_device run kept rows again
  std::vector<int64_t> kept_rows_;
  std::vector<float> kept_embeds_;
  std::vector<int32_t> kept_pos_;
  // replay_input's rows (relative to the replay's start), positions [3, n] and input.
  std::vector<int64_t> replay_rows_;
  std::vector<int32_t> replay_pos_;
  MultimodalInput replay_mm_;
  std::vector<float> head_logits_;
  std::unique_ptr<DeviceDecoder> decoder_;
  std::vector<float> greedy_logits_;
};

}  // namespace bs
