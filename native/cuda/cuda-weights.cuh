// A model's weights as the CUDA decoder reads them, copied into device memory once per model
// (read in place on an integrated device) and shared by the decoders of its sessions: every
// matrix of decoder_matrices (without the routed expert stacks when the decoder puts experts in
// slots), the norms, biases and RoPE frequencies. Read-only after construction.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/model.h"
#include "cuda/device-context.cuh"

namespace bs::BS_CUDA_NS {

class DeviceWeights {
 public:
  struct Weight {
    const uint8_t *codes, *scales, *biases;
  };

  // routed: also the routed expert stacks. ctx: the context to keep them in (a decoder's own,
  // which must outlive them: a file registered once serves its expert slots too); null: one of
  // their own. Throws bs::Error when the device fails or the weights do not fit its free memory.
  DeviceWeights(const Model& m, bool routed, Context* ctx = nullptr);
  // Shared per model while a decoder holds them; made on first use, with the routed experts when
  // `routed` (a later caller gets them as made: see has_routed).
  static std::shared_ptr<const DeviceWeights> of(const Model& m, bool routed = true);
  // The model's shared weights if some decoder holds them (null: none).
  static std::shared_ptr<const DeviceWeights> held(const Model& m);

  // A matrix of decoder_matrices(m), by address; throws bs::Error for another.
  const Weight& weight(const WeightMatrix& w) const;
  // A norm, bias or correction-bias vector of the model, by its data.
  float* vector(const float* data) const;
  // RoPE frequencies (rope_table): axis −1 every pair; 0..2 one axis's pairs (multimodal RoPE).
  const double* inv_freq(int axis) const { return inv_freq_[axis + 1]; }
  bool has_routed() const { return routed_; }
  // The device's address of a range inside a mapped model file, read in place (the file
  // registered once by these weights' context, for the expert slots of every decoder sharing
  // them); nullptr when the range is in no mapped file.
  const uint8_t* mapped(const void* host, size_t bytes) const;
  // Device bytes of the matrices (0 read in place on an integrated device counts as copied).
  size_t bytes() const { return bytes_; }
  // Whether the routed stack w is one of the model's MoE layers' experts.
  static bool is_routed(const Model& m, const WeightMatrix* w);

 private:
  std::unique_ptr<Context> own_;
  Context& c_;
  bool routed_;
  size_t bytes_ = 0;
  std::unordered_map<const void*, Weight> weights_;  // by the matrix's first byte
  std::unordered_map<const void*, float*> vectors_;
  const double* inv_freq_[4] = {};
  mutable std::mutex mu_;  // mapped() from the decoders of several sessions
};

}  // namespace bs::BS_CUDA_NS
