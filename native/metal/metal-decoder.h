// The whole transformer on a Metal device: one command list per prefill chunk or decode step,
// from the embedding to the logits. Weights are wrapped in place once (the mmapped files); the KV
// cache, activations and routing live in device buffers between ops and appends; only logits return.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/model.h"
#include "metal/metal-device.h"

namespace bs::metal {

class MetalDecoder {
 public:
  // Why this path cannot run `m` ("" when it can): the architectures and formats it covers.
  static std::string unsupported(const Model& m);

  // A cache of max_positions tokens, appended in chunks of up to max_chunk tokens. Throws
  // bs::Error when the model is unsupported or a buffer cannot be allocated.
  MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk = 1);
  ~MetalDecoder();

  // Runs tokens[0..n) at the next positions (one command list: a prefill chunk, or a decode
  // step when n is 1) and writes the last token's logits [vocab]. Throws bs::Error before
  // anything runs for a bad token id, chunk length or a full cache.
  void append(const int32_t* tokens, int64_t n, float* logits);
  int64_t position() const { return pos_; }
  // Command lists committed so far (one per append).
  int64_t commits() const { return commits_; }

 private:
  struct Weight;
  struct Layer;
  const Weight& weight(const WeightMatrix& w);
  Arg floats(const std::vector<float>& v);
  Arg scratch(size_t bytes);
  static Arg at(Arg a, int64_t floats);  // `floats` float32s further into a's buffer
  void linear(CommandList& c, const Linear& l, Arg x, Arg y);
  void matmul(CommandList& c, const WeightMatrix& w, Arg x, Arg y, int64_t n, Arg ids, uint32_t x_div);
  void rmsnorm(CommandList& c, Arg x, Arg w, int64_t rows, int64_t d, Arg y);
  void add(CommandList& c, Arg x, Arg y, int64_t n);
  void attention(CommandList& c, int64_t l);
  void moe(CommandList& c, const bs::MoeWeights& w);
  void mlp(CommandList& c, const MlpWeights& w, Arg x, Arg y);

  Device& d_;
  const Model& m_;
  int64_t max_pos_, max_chunk_, pos_ = 0, commits_ = 0;
  int64_t n_ = 1;  // tokens of the chunk being encoded
  std::vector<std::unique_ptr<Buffer>> owned_;
  std::vector<std::unique_ptr<Weight>> weights_;
  std::unordered_map<const void*, const Weight*> index_;  // by the matrix's first byte
  std::unordered_map<const void*, Arg> vectors_;          // norms and biases, by their data
  std::vector<Arg> k_cache_, v_cache_;
  Arg x_, xn_, y_, y2_, q_, attn_, gate_, up_, logits_, e_logits_, ids_, wts_, rows_, token_, position_, inv_freq_;
};

}  // namespace bs::metal
