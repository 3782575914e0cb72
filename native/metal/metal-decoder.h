// The whole transformer on a Metal device: one command list per prefill chunk or decode step,
// from the embedding to the logits. Weights are wrapped in place once per model (metal-weights.h);
// the KV cache, activations and routing live in device buffers between ops and appends; only the
// logits (or the greedy token) return. Sessions run it through common/device-decoder.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/device-decoder.h"
#include "common/lora.h"
#include "common/model.h"
#include "metal/metal-device.h"
#include "metal/metal-weights.h"

namespace bs::metal {

class MetalDecoder final : public DeviceDecoder {
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
  int64_t position() const override { return pos_; }
  void read_kv(int64_t layer, int64_t n, void* k, void* v) const override;
  uint64_t state_bytes() const override;
  // Command lists committed so far (one per append).
  int64_t commits() const { return commits_; }

 private:
  using Weight = DeviceWeights::Weight;
  const Weight& weight(const WeightMatrix& w) const { return w_->weight(w); }
  Arg vec(const std::vector<float>& v) const { return w_->vector(v.data()); }
  Arg scratch(size_t bytes);
  void reserve(int64_t rows);
  // Encodes and runs one chunk: the LM head when `head`, then an argmax when `greedy`.
  void run(const int32_t* tokens, int64_t n, const DeviceStep& step, bool head, bool greedy);
  void use_adapter(const std::shared_ptr<const LoraAdapter>& a);
  // The current layer's LoRA for `slot` (nullptr: none).
  const LoraWeights* lora(LoraSlot slot) const;
  static Arg at(Arg a, int64_t floats);  // `floats` float32s further into a's buffer
  void linear(CommandList& c, const Linear& l, Arg x, Arg y, const LoraWeights* delta = nullptr);
  void matmul(CommandList& c, const WeightMatrix& w, Arg x, Arg y, int64_t n, Arg ids, uint32_t x_div);
  void rmsnorm(CommandList& c, Arg x, Arg w, int64_t rows, int64_t d, Arg y);
  void add(CommandList& c, Arg x, Arg y, int64_t n);
  void attention(CommandList& c, int64_t l);
  void moe(CommandList& c, int64_t l);
  // Routing of n tokens' logits by `spec` into ids and weights [n, top_k_] (both kernel families).
  void route(CommandList& c, const RouterSpec& spec, Arg logits, int64_t n, Arg ids, Arg wts);
  // Prerouter head `owner` at the chunk's last token (ids: the chunk's routing [n, top_k]): layer
  // owner+1's routing of the next token, into the prediction buffers of this append's parity
  // (metal-decoder-prerouter.cpp).
  void predict(CommandList& c, int64_t owner, Arg ids);
  void forget_predictions();
  void mlp(CommandList& c, const MlpWeights& w, Arg x, Arg y);

  Device& d_;
  const Model& m_;
  int64_t max_pos_, max_chunk_, pos_ = 0, commits_ = 0;
  int64_t n_ = 1;                       // tokens of the chunk being encoded
  int top_k_ = 1;                       // experts per token of the chunk being encoded
  int64_t capacity_ = 0, kv_elem_ = 4;  // cache rows allocated; bytes per cached element
  uint64_t scratch_bytes_ = 0;
  std::shared_ptr<const DeviceWeights> w_;
  std::vector<std::unique_ptr<Buffer>> owned_;  // this decoder's activations and routing buffers
  // The adapter in use, its matrices on the device (A then B per module) and the rank-sized
  // intermediate; the layer being encoded.
  std::shared_ptr<const LoraAdapter> adapter_;
  std::vector<std::unique_ptr<Buffer>> adapter_owned_;
  std::unordered_map<const LoraWeights*, std::pair<Arg, Arg>> adapter_w_;
  Arg lora_t_;
  const LayerLora* layer_lora_ = nullptr;
  // Prediction as routing (a model with a prerouter, as the CPU path): per layer, predicted ids
  // and weights [top_k] double-buffered by the parity of the append (a step consumes the last
  // one's while writing its own), the ids of the last token routed, and host flags for both.
  struct Predicted {
    Arg ids[2], wts[2], last;
  };
  std::vector<Predicted> pred_;
  std::vector<char> has_pred_, made_pred_, has_last_;
  Arg head_logits_, head_act_;
  int parity_ = 0, last_top_k_ = 0;
  bool predicting_ = false;                                 // this append ends with logits: the heads run
  std::vector<std::unique_ptr<Buffer>> k_cache_, v_cache_;  // per layer [capacity, n_kv, head_dim]
  Arg k_f32_, v_f32_;  // f16 caches: the chunk's keys and values in float32 before rounding
  Arg x_, xn_, y_, y2_, q_, attn_, gate_, up_, logits_, e_logits_, ids_, wts_, rows_, token_, position_, greedy_;
};

}  // namespace bs::metal
