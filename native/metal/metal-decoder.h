// The whole transformer on a Metal device: one command list per prefill chunk or decode step,
// from the embedding to the logits. Weights are wrapped in place once per model (metal-weights.h);
// the KV cache, activations and routing live in device buffers between ops and appends; only the
// logits (or the greedy token) return. The layer walk is common/decoder-walk.h's; this file gives
// it Metal's kernels. Sessions run it through common/device-decoder.h.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/blocks.h"
#include "common/decoder-walk.h"
#include "common/device-decoder.h"
#include "common/lora.h"
#include "common/model.h"
#include "metal/metal-device.h"
#include "metal/metal-weights.h"
#include "metal/params.h"

namespace bs::metal {

class MetalDecoder final : public DeviceDecoder, DecoderWalk<Arg> {
 public:
  // Why this path cannot run `m` ("" when it can): the architectures and formats it covers.
  static std::string unsupported(const Model& m);

  // A cache of up to max_positions tokens (grown on demand, in the model's KV type: float32 or
  // f16), appended in chunks of up to max_chunk tokens. Throws bs::Error when the model is
  // unsupported or a buffer cannot be allocated. `weights`: the model's on this device, shared
  // with other sessions (DeviceWeights::of); null: made for this decoder alone.
  MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk = 1,
               std::shared_ptr<const DeviceWeights> weights = nullptr);
  ~MetalDecoder() override;

  // One command list: a prefill chunk, or a decode step when n is 1 (DeviceDecoder::append).
  // Throws bs::Error before anything runs for a bad token id, chunk length, top_k or a full cache.
  // With an adapter, its A and B matrices are copied to the device on first use (one adapter
  // held at a time) and each targeted linear adds its delta in the same command list.
  void append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) override;
  // The same list ending in an argmax on the device: 4 bytes come back instead of the logits.
  int32_t append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) override;
  void truncate(int64_t n) override;
  int64_t position() const override { return DecoderWalk::position(); }
  void read_kv(int64_t layer, int64_t n, void* k, void* v) const override;
  uint64_t state_bytes() const override;
  // Hybrid models' recurrent state and its snapshots (metal-decoder-linear.cpp): plain copies in
  // shared memory, between command lists.
  void save_state(int slot) override;
  void load_state(int slot) override;
  void read_state(int slot, float* rec) const override;
  // Command lists committed so far (one per append).
  int64_t commits() const { return commits_; }
  // Times an append waited for its command list so far to learn a layer's routing or a slot
  // wave (streamed experts only: metal-decoder-slots.cpp).
  int64_t host_waits() const { return host_waits_; }

 private:
  using Weight = DeviceWeights::Weight;
  const Weight& weight(const WeightMatrix& w) const { return w_->weight(w); }
  // DecoderWalk's buffers and kernels, encoded into c_.
  Arg at(Arg a, int64_t floats) override { return {a.buf, a.offset + static_cast<size_t>(floats) * 4}; }
  Arg alloc(size_t bytes) override;
  Arg upload(const std::vector<float>& v) override { return w_->vector(v.data()); }
  void embed(int64_t n) override;
  void matmul(const WeightMatrix& w, Arg x, Arg y, int64_t n, bool gather, int64_t x_div) override;
  void gated_down(const WeightMatrix& down, int64_t rows, Arg out) override;
  void matmuls(const WeightMatrix* const* w, const Arg* y, int count, Arg x, int64_t n, bool gather, int64_t x_div,
               const std::vector<float>* const* bias) override;
  QMatParams qmat(const WeightMatrix& w, int64_t n, bool gather, int64_t x_div, const Weight** b, uint32_t* tg_y) const;
  std::array<Arg, 3> qmat_routing(const QMatParams& p) const;
  void qmatmul(const WeightMatrix& w, Arg x, Arg up, Arg y, int64_t n, bool gather, int64_t x_div, bool gated);
  void rmsnorm(Arg x, Arg w, int64_t rows, int64_t d, Arg y) override;
  void add_rmsnorm(Arg res, Arg x, Arg w, int64_t rows, int64_t d, Arg y) override;
  void combine_add_rmsnorm(int64_t k, bool shared, bool gated, Arg x, Arg w, int64_t rows, int64_t d, Arg y) override;
  void norm_rope(const AttentionWeights& w, int64_t l, Arg k_at) override;
  void add(Arg x, Arg y, int64_t n) override;
  void add_rows(Arg b, Arg y, int64_t width, int64_t rows) override;
  void silu_mul(Arg gate, Arg up, int64_t n) override;
  void rope(Arg x, int64_t heads, int axis) override;
  void write(Arg dst, const float* src, int64_t floats) override;
  void attend(int64_t l) override;
  void route(const MoeWeights& w) override { route(w.spec, e_logits_, n_, ids_, wts_); }
  void combine(int64_t k) override;
  void conv_silu(int64_t l, const LinearAttnWeights& w) override;
  void delta_rule(int64_t l, const LinearAttnWeights& w) override;
  void lightning_rule(int64_t l, const LinearAttnWeights& w, Arg q, Arg k, Arg v) override;
  void sigmoid_mul(Arg x, Arg g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step) override;
  void copy_heads(Arg src, int64_t src_token, int64_t src_head, Arg dst, int64_t dst_token, int64_t dst_head,
                  int64_t heads, int64_t width) override;
  Arg kv_rows(int64_t l, bool v) override;
  void store_kv(int64_t l) override;
  // In a decode step after a prediction, the layer routes by the prerouter's buffers.
  void routing(const MoeWeights& w) override;
  void delta(LoraSlot slot, Arg x, Arg y) override;
  void deltas(const LoraSlot* slots, const Arg* ys, int count, Arg x) override;
  void lora_steps(const LoraWeights* const* d, const Arg* ys, int count, Arg x);
  // Streamed experts (slot_experts): the routed experts from the staged slots, in waves
  // (metal-decoder-slots.cpp); otherwise the walk's gathered matmuls over the wrapped stacks. A
  // prefill chunk's rows are sorted by expert first: each expert read once per tile of rows.
  void experts(const MoeWeights& w, int64_t rows, int64_t k) override;

  // Cache rows for `rows` positions (capacity doubles up to max_positions).
  void reserve(int64_t rows);
  // Encodes and runs one chunk: the LM head when `head`, then an argmax when `greedy`.
  void run(const int32_t* tokens, int64_t n, const DeviceStep& step, bool head, bool greedy);
  void use_adapter(const std::shared_ptr<const LoraAdapter>& a);
  // Routing of n tokens' logits by `spec` into ids and weights [n, top_k_] (both kernel families).
  void route(const RouterSpec& spec, Arg logits, int64_t n, Arg ids, Arg wts);
  // Prerouter head `owner` at the chunk's last token (ids: the chunk's routing [n, top_k]): layer
  // owner+1's routing of the next token, into the prediction buffers of this append's parity
  // (metal-decoder-prerouter.cpp).
  void predict(int64_t owner, Arg ids);
  // Streamed experts (metal-decoder-slots.cpp): the slot tables; the streamer's pass around an
  // append (predicted slots reserved before, the next predictions' loads started after); and a
  // wait for the command list so far, which goes on in a new one.
  void init_slots();
  void stream_begin(int64_t n);
  void stream_end();
  void sync();

  Device& d_;
  CommandList* c_ = nullptr;           // the command list being encoded
  int64_t kv_elem_ = 4, commits_ = 0;  // bytes per cached element
  std::shared_ptr<const DeviceWeights> w_;
  std::vector<std::unique_ptr<Buffer>> owned_;  // this decoder's caches, activations and routing buffers
  // The adapter in use, its matrices on the device (A then B per module) and the rank-sized
  // intermediate.
  std::shared_ptr<const LoraAdapter> lora_adapter_;
  std::vector<std::unique_ptr<Buffer>> adapter_owned_;
  std::unordered_map<const LoraWeights*, std::pair<Arg, Arg>> adapter_w_;
  Arg lora_t_;                   // BS_MM_SET intermediates [max_chunk_, lora_rank_]
  int64_t lora_rank_ = 1;        // the adapter's largest rank
  bool predicting_ = false;      // this append ends with logits: the heads run
  Arg routed_ids_, routed_wts_;  // the routing the current layer's experts run with
  Arg sorted_;                   // a prefill chunk's routed rows by expert (bs_route_sort)
  bool grouped_ = false;         // the gathered products read sorted_
  Arg k_f32_, v_f32_;            // f16 caches: the chunk's keys and values in float32 before rounding
  Arg greedy_;
  std::unique_ptr<CommandList> list_;  // the append's command list (a new one after each sync)
  bool slots_ = false;                 // experts from the streamer's staged slots
  std::vector<Arg> slot_table_;        // per MoE layer [E]: a wave's expert → slot, others the zero slot
  Arg rows_acc_;                       // a later wave's rows, added into rows_
  Scratch stage_;                      // the streamer's lists of a layer's waves
  int64_t host_waits_ = 0;
  std::vector<Arg> snapshots_;  // hybrid models: recurrent states saved
};

}  // namespace bs::metal
