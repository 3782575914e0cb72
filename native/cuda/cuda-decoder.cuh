// The whole transformer on a CUDA device: weights copied once into device memory (through the
// context's pinned staging; read in place on an integrated device) and shared by a model's
// sessions (cuda-weights.cuh), the KV cache (float32, or f16 when the model was loaded with
// kv_f16: rows converted after RoPE as the CPU does; grown on demand), activations and routing
// ids/weights in device buffers between ops and appends. One host synchronisation per append
// returns the greedy token (argmax on the device) and, when asked, the last token's logits.
// Decode steps (one token) run as CUDA graphs, one per append parity: replayed as captured while
// nothing they depend on changed (positions are read from device memory), else captured again
// and the executable updated in place. The layer walk is common/decoder-walk.h's; sessions run it as a DeviceDecoder
// with a per-call top-k, unmerged LoRA deltas and the prerouter's predictions on the device.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/decoder-walk.h"
#include "common/device-decoder.h"
#include "common/model.h"
#include "cuda/cuda-weights.cuh"
#include "cuda/device-context.cuh"
#include "cuda/expert-slots.cuh"
#include "cuda/qmatmul.cuh"

namespace bs::BS_CUDA_NS {

class CudaDecoder final : public DecoderWalk<float*>, public DeviceDecoder {
 public:
  // Why this path cannot run `m` ("" when it can): the architectures and formats it covers.
  static std::string unsupported(const Model& m);
  // Expert slots per MoE layer for a session's decoder (0: every expert resident): the budget
  // (the model's stream.device_expert_bytes, else 85% of the free device memory less the dense
  // weights, unless shared already, and a cache of max_positions rows) over one expert of every
  // MoE layer, clamped to 1..E-1; 0 when all fit, on an integrated device (experts read in
  // place) or when the model's shared weights already hold the experts.
  static int session_slots(const Model& m, int64_t max_positions, int64_t max_chunk);

  // How a decoder is made besides its model and cache length.
  struct Options {
    int64_t max_chunk = 1;     // tokens per append
    bool graph = true;         // replay decode steps as a CUDA graph
    int expert_slots = 0;      // > 0: routed experts in that many device slots per MoE layer (expert-slots.cuh)
    bool shared = false;       // the model's weights shared with its other sessions (DeviceWeights::of)
    int64_t initial_rows = 0;  // cache rows allocated at first, doubled on demand (0: max_positions)
    bool io_fills = false;     // slots filled through the model's I/O threads and pinned staging
    void (*on_device_error)(const char* what) = nullptr;  // told before an append's device error is thrown
  };
  // A cache of up to max_positions tokens. Throws bs::Error when the model is unsupported or
  // does not fit the device's free memory.
  CudaDecoder(const Model& m, int64_t max_positions, const Options& o);
  CudaDecoder(const Model& m, int64_t max_positions, int64_t max_chunk = 1, bool graph = true, int expert_slots = 0)
      : CudaDecoder(m, max_positions, Options{max_chunk, graph, expert_slots, false, 0}) {}
  ~CudaDecoder() override;

  // Runs tokens[0..n) at the next positions with the model's top-k and no adapter and returns
  // the greedy next token; logits, when not null, get the last token's [vocab]. Throws bs::Error
  // before anything runs for a bad token id, chunk length or a full cache.
  int32_t append(const int32_t* tokens, int64_t n, float* logits = nullptr);
  // DeviceDecoder: the same with the step's top-k and adapter (its A and B matrices copied to
  // the device on first use, one adapter held at a time).
  void append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) override;
  int32_t append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) override;
  void truncate(int64_t n) override;  // cuda-decoder-session.cu, with read_kv and the adapter
  int64_t position() const override { return pos_; }
  void read_kv(int64_t layer, int64_t n, void* k, void* v) const override;
  uint64_t state_bytes() const override { return state_bytes_; }
  void save_state(int slot) override;  // cuda-decoder-linear.cu
  void load_state(int slot) override;
  void read_state(int slot, float* rec) const override;
  // The expert slots' counters (slot hits and misses, copies in, prefetches) and the predicted
  // layer-steps since the last take.
  void take_stats(SessionStats& into) override;

  struct Stats {
    // builds: instantiations (updates not counted); replays: launches without a capture
    int64_t appends = 0, graph_launches = 0, graph_builds = 0, graph_replays = 0;
    size_t weight_bytes = 0, buffer_bytes = 0;  // on the device
    size_t active_bytes = 0;       // weight bytes one decode step reads (the embedding's row, top-k experts)
    int64_t predicted_layers = 0;  // MoE layer-steps routed by a prerouter prediction
  };
  const Stats& stats() const { return stats_; }
  const ExpertSlots* slots() const { return slots_.get(); }

 private:
  void free_host();  // the pinned buffers, once
  using Weight = DeviceWeights::Weight;
  void launched(cudaError_t e, const char* kernel);
  // One append: with `head` the LM head, the argmax and the prerouter's predictions.
  int32_t run(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits, bool head);
  int32_t launch(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits, bool head);
  void run_graph();
  void reserve(int64_t rows);
  void use_adapter(const std::shared_ptr<const LoraAdapter>& a);
  void route_into(const RouterSpec& s, const float* logits, int64_t n, int32_t* ids, float* wts);

  float* at(float* a, int64_t floats) override { return a + floats; }
  float* alloc(size_t bytes) override;
  float* upload(const std::vector<float>& v) override;  // the shared copy of a model vector
  void embed(int64_t n) override;
  void matmul(const WeightMatrix& w, float* x, float* y, int64_t n, bool gather, int64_t x_div) override;
  void matmuls(const WeightMatrix* const* w, float* const* y, int count, float* x, int64_t n, bool gather,
               int64_t x_div, const std::vector<float>* const* bias) override;
  // The quantised matmul's arguments for w (gathered through the slots or the resident stack).
  QMatArgs qargs(const WeightMatrix& w, int64_t n, bool gather, int64_t x_div) const;
  void rmsnorm(float* x, float* w, int64_t rows, int64_t d, float* y) override;
  void norm_rope(const AttentionWeights& w, int64_t l, float* k_at) override;
  void gated_down(const WeightMatrix& down, int64_t rows, float* out) override;
  void add_rmsnorm(float* res, float* x, float* w, int64_t rows, int64_t d, float* y) override;
  void add(float* x, float* y, int64_t n) override;
  void add_rows(float* b, float* y, int64_t width, int64_t rows) override;
  // A prefill chunk's routed rows sorted by expert first: the gathered products then read each
  // expert once per tile of kMatTokens rows (qmatmul.cuh's grouped mode) instead of once per row.
  void experts(const MoeWeights& w, int64_t rows, int64_t k) override;
  void silu_mul(float* gate, float* up, int64_t n) override;
  void rope(float* x, int64_t heads, int axis) override;
  void write(float* dst, const float* src, int64_t floats) override;
  void attend(int64_t l) override;
  void route(const MoeWeights& w) override;
  void combine(int64_t k) override;
  void combine_add_rmsnorm(int64_t k, bool shared, bool gated, float* x, float* w, int64_t rows, int64_t d,
                           float* y) override;
  void conv_silu(int64_t l, const LinearAttnWeights& w) override;
  void delta_rule(int64_t l, const LinearAttnWeights& w) override;
  void lightning_rule(int64_t l, const LinearAttnWeights& w, float* q, float* k, float* v) override;
  void sigmoid_mul(float* x, float* g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step) override;
  void copy_heads(float* src, int64_t src_token, int64_t src_head, float* dst, int64_t dst_token, int64_t dst_head,
                  int64_t heads, int64_t width) override;
  float* kv_rows(int64_t l, bool v) override;
  void store_kv(int64_t l) override;
  void lora_delta(const LoraWeights& d, float* x, float* y) override;
  void deltas(const LoraSlot* slots, float* const* ys, int count, float* x) override;
  void lora_steps(const LoraWeights* const* d, float* const* ys, int count, float* x);
  bool route_by_prediction(int64_t l) override;  // cuda-decoder-prerouter.cu
  void routed(int64_t l) override;

  Context c_;
  std::shared_ptr<const DeviceWeights> w_;
  std::unique_ptr<ExpertSlots> slots_;
  int32_t* routed_ = nullptr;  // where the current layer's ids are (its routing's, or a prediction's)
  // A prefill chunk's routed rows by expert (route-sort.cuh), and whether the products read them.
  int32_t *order_ = nullptr, *tiles_ = nullptr, *tile_count_ = nullptr;
  bool grouped_ = false;
  float* routed_wts_ = nullptr;  // and its weights
  bool graph_, kv_f16_, head_ = true;
  uint64_t state_bytes_ = 0;
  float *k_rows_ = nullptr, *v_rows_ = nullptr;         // f16 cache: the chunk's rows before conversion
  float* attn_part_ = nullptr;                          // decode attention's key-range partials
  std::vector<float*> snapshots_;                       // hybrid models: recurrent states saved
  int32_t* greedy_ = nullptr;                           // device: the argmax
  int64_t greedy_vocab_ = 0;                            // the argmax runs over ids below this
  int32_t* position_ = nullptr;                         // device: each token's cache row
  int32_t *host_in_ = nullptr, *host_token_ = nullptr;  // pinned: tokens, rows, RoPE positions [3]; the argmax
  float* host_logits_ = nullptr;                        // pinned
  // Decode graphs by the append's parity, each with what its capture depended on (graph_key)
  // and what its walk set on the host, replayed as is while the key holds.
  struct GraphKey {
    int top_k = 0;
    bool head = false;
    int64_t greedy_vocab = 0;
    const void* adapter = nullptr;
    uint64_t adapter_gen = 0;
    std::vector<char> has_pred, has_last;
    const void* cache = nullptr;  // the caches move when they grow
    int splits = 0;               // attention's key ranges
    bool operator==(const GraphKey& o) const {
      return top_k == o.top_k && head == o.head && greedy_vocab == o.greedy_vocab && adapter == o.adapter &&
             adapter_gen == o.adapter_gen && has_pred == o.has_pred && has_last == o.has_last && cache == o.cache &&
             splits == o.splits && splits > 0;
    }
  };
  struct CapturedStep {
    cudaGraphExec_t exec = nullptr;
    GraphKey key;
    std::vector<char> made_pred, has_last;
    int64_t predicted_layers = 0;
  };
  GraphKey graph_key() const;
  // The first attention layer's key cache (where a grown cache moved), null without one.
  const void* first_cache() const {
    for (float* k : k_cache_)
      if (k) return k;
    return nullptr;
  }
  CapturedStep steps_[2];
  uint64_t adapter_gen_ = 0;  // adapters uploaded (a new upload moves its matrices)
  // The adapter in use: its A and B matrices on the device per module, the rank-sized intermediate.
  std::shared_ptr<const LoraAdapter> adapter_held_;
  std::unordered_map<const LoraWeights*, std::pair<const uint8_t*, const uint8_t*>> adapter_w_;
  std::vector<void*> adapter_mem_;
  float* lora_t_ = nullptr;  // kMatSet intermediates of [max_chunk, lora_rank_]
  int64_t lora_rank_ = 1;
  const Prerouter* prerouter_;  // the model's when the decoder was made (its buffers and weights)
  void (*on_device_error_)(const char*);
  Stats stats_;
  std::unique_ptr<SessionStats> taken_;  // the counters at the last take_stats
};

}  // namespace bs::BS_CUDA_NS
