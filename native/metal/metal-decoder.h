// The whole transformer on a Metal device: one command list per prefill chunk or decode step,
// from the embedding to the logits. Weights are wrapped in place once (the mmapped files); the KV
// cache, activations and routing live in device buffers between ops and appends; only logits return.
// The layer walk is common/decoder-walk.h's; this file holds the Metal dispatches.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/decoder-walk.h"
#include "common/model.h"
#include "metal/metal-device.h"

namespace bs::metal {

class MetalDecoder : public DecoderWalk<Arg> {
 public:
  // Why this path cannot run `m` ("" when it can): the architectures and formats it covers.
  static std::string unsupported(const Model& m);

  // A cache of max_positions tokens, appended in chunks of up to max_chunk tokens. Throws
  // bs::Error when the model is unsupported or a buffer cannot be allocated.
  MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk = 1);
  ~MetalDecoder() override;

  // Runs tokens[0..n) at the next positions (one command list: a prefill chunk, or a decode
  // step when n is 1) and writes the last token's logits [vocab]. Throws bs::Error before
  // anything runs for a bad token id, chunk length or a full cache.
  void append(const int32_t* tokens, int64_t n, float* logits);
  // Command lists committed so far (one per append).
  int64_t commits() const { return commits_; }

 private:
  struct Weight;
  const Weight& weight(const WeightMatrix& w);
  Arg floats(const std::vector<float>& v);

  Arg at(Arg a, int64_t floats) override;
  Arg alloc(size_t bytes) override;
  Arg upload(const std::vector<float>& v) override { return floats(v); }
  void embed(int64_t n) override;
  void matmul(const WeightMatrix& w, Arg x, Arg y, int64_t n, bool gather, int64_t x_div) override;
  void rmsnorm(Arg x, Arg w, int64_t rows, int64_t d, Arg y) override;
  void add(Arg x, Arg y, int64_t n) override;
  void silu_mul(Arg gate, Arg up, int64_t n) override;
  void rope(Arg x, int64_t heads) override;
  void attend(int64_t l) override;
  void route(const MoeWeights& w) override;
  void combine(int64_t k) override;

  Device& d_;
  CommandList* c_ = nullptr;  // the command list of the append being encoded
  int64_t commits_ = 0;
  std::vector<std::unique_ptr<Buffer>> owned_;
  std::vector<std::unique_ptr<Weight>> weights_;
  std::unordered_map<const void*, const Weight*> index_;  // by the matrix's first byte
  Arg inv_freq_;
};

}  // namespace bs::metal
