// Prerouter heads (Edge0's layout): head N, owned by MoE layer N, reads at token t the features
// f = [hidden_N; onehot(top-k layer N executed at t); onehot(top-k of layer N at t−1)]
// (hidden + 2E floats; hidden_N is layer N's MoE input) and predicts layer N+1's router
// logits for token t+1: linear_init·f + fc2·gelu_erf(fc1·f). No biases; fp16 in files.
// The zero-training head (linear_init = layer N+1's router on the hidden part, zeros on the
// one-hot parts, fc2 = 0) is "apply the next router to the current hidden state".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/safetensors.h"

namespace bs {

// A head in float32 (the trainer's form and in-memory heads): row-major [out, in].
struct HeadFloats {
  int64_t owner = 0;
  int64_t units = 0;                    // fc1 outputs
  std::vector<float> fc1, fc2, linear;  // [units, F], [E, units], [E, F]
};

struct PrerouterHead {
  int64_t owner = 0;
  // Zero-training head used as is: layer N+1's router applied to hidden_N (nothing copied).
  bool router_alias = false;
  bool has_mlp = false;  // fc2 is not all zero
  WeightMatrix fc1, fc2, linear_init;
  std::vector<float> owned;  // backing store of in-memory heads
};

// Reusable buffers of predict().
struct HeadScratch {
  std::vector<float> f, h, y;
};

class Prerouter {
 public:
  // Zero-training heads for every owner N whose layers N and N+1 are both MoE.
  static std::unique_ptr<Prerouter> zero_training(const Model& m);
  // Heads from a safetensors file; throws bs::Error naming the file, the tensor or metadata key,
  // the rule and the value when the file does not fit the model.
  static std::unique_ptr<Prerouter> from_file(const Model& m, const std::string& path);
  // In-memory float heads (calibration results, tests); shapes are checked.
  static std::unique_ptr<Prerouter> from_floats(const Model& m, std::vector<HeadFloats> heads, std::string source);

  // Layer N owns a head (predicts N+1).
  const PrerouterHead* head(int64_t owner) const;
  std::vector<int64_t> owners() const;
  const std::string& source() const { return source_; }
  // Throws bs::Error when the heads file shrank since it was mapped (no file: never).
  void check_size() const;

  // logits[E] of layer owner+1 for the next token. cur / prev: k expert ids each, or nullptr
  // when unknown (the one-hot part stays zero).
  void predict(const Model& m, const PrerouterHead& h, const float* hidden, const int32_t* cur, const int32_t* prev,
               int k, HeadScratch& s, float* logits) const;

 private:
  std::string source_;
  std::vector<PrerouterHead> heads_;
  std::vector<int> by_layer_;  // layer → index into heads_, or -1
  std::unique_ptr<SafetensorsFile> file_;
};

// Owners a model can have: N with N and N+1 both MoE layers.
std::vector<int64_t> possible_owners(const Model& m);
// The zero-training head of `owner` in float form, with fc1 drawn N(0, 1/F) from `seed` (a
// training start; fc2 = 0 makes it irrelevant to the output).
HeadFloats zero_training_floats(const Model& m, int64_t owner, int64_t units, uint64_t seed);
// gelu with the exact erf: 0.5·x·(1 + erf(x/√2)).
float gelu_erf(float x);

}  // namespace bs
