// A model's weights as the Metal decoder binds them, made once per (model, device) and shared by
// the decoders of its sessions: every matrix wrapped in place (copied where the device refuses
// the pages), norms, biases and the RoPE frequencies uploaded. A model whose experts stream
// through staged slots (slot_experts) has the slot slabs wrapped instead of its expert stacks.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/decoder-walk.h"
#include "common/model.h"
#include "metal/metal-device.h"

namespace bs::metal {

class DeviceWeights {
 public:
  // Codes, scales and biases (dummies when plain) with the byte offsets of the matrix inside them.
  struct Weight {
    Arg codes, scales, biases;
    uint32_t w_off = 0, s_off = 0, b_off = 0;
  };

  // Throws bs::Error when a buffer cannot be allocated.
  DeviceWeights(Device& d, const Model& m);
  // Shared per (model, device) while a session holds them; made on first use.
  static std::shared_ptr<const DeviceWeights> of(Device& d, const Model& m);

  // A matrix of decoder_matrices(m), by address; throws bs::Error for another.
  const Weight& weight(const WeightMatrix& w) const;
  // Slot mode: a MoE layer's routed gate, up or down (the model's MoeWeights member) over its
  // staged slot slabs, stacked [slots + 1, ...] (the last one the zero slot).
  const Weight& slots(const WeightMatrix& w) const;
  // A norm, bias or correction-bias vector of the model, by its data.
  Arg vector(const float* data) const;
  // RoPE frequencies (rope_table): axis −1 every pair; 0..2 one axis's pairs (multimodal RoPE).
  Arg inv_freq(int axis) const { return inv_freq_[axis + 1]; }
  // Bytes copied because the device refused to wrap them (0 when every matrix is wrapped).
  uint64_t copied_bytes() const { return copied_; }

 private:
  Arg buffer(size_t bytes);
  Arg floats(const std::vector<float>& v);
  void bind(const WeightMatrix& w);
  void bind_slots(const Model& m);

  Device& d_;
  std::vector<std::unique_ptr<Buffer>> owned_;
  std::vector<std::unique_ptr<Weight>> weights_;
  std::unordered_map<const void*, const Weight*> index_;  // by the matrix's first byte
  std::unordered_map<const WeightMatrix*, const Weight*> slots_;
  std::unordered_map<const void*, Arg> vectors_;
  Arg inv_freq_[4];
  uint64_t copied_ = 0;
};

}  // namespace bs::metal
