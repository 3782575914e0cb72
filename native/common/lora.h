// Unmerged LoRA adapters in the engine's one internal form: per layer, the deltas of the
// attention projections and of the layer's dense MLP or shared experts, A [r, in] and
// B [out, r] in their file dtype. The bytes are copied out of the adapter file; the base model's
// files are never written. The TS side (daemon/engine/adapters/) turns PEFT / mlx-lm / Edge0
// configs into the LoraSpec below; this file checks it against the model and loads the tensors.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/backend.h"

namespace bs {

class Model;
struct Linear;

// The projections of a layer a LoRA may target. Gate/Up/Down are the layer's dense MLP, or its
// shared experts in a MoE layer (a layer has one or the other); routed experts never. The Lin*
// slots are a Gated DeltaNet layer's projections (linear_attn.in_proj_*, out_proj).
enum class LoraSlot : uint8_t { Q, K, V, O, Gate, Up, Down, LinQkv, LinZ, LinB, LinA, LinQkvz, LinBa, LinOut, Count };

struct LoraModule {
  std::string path;  // model.layers.3.self_attn.q_proj
  LoraWeights w;     // views into a_bytes / b_bytes
  std::vector<uint8_t> a_bytes, b_bytes;
};

struct LayerLora {
  const LoraModule* slot[static_cast<int>(LoraSlot::Count)] = {};
  const LoraWeights* get(LoraSlot s) const {
    const LoraModule* m = slot[static_cast<int>(s)];
    return m ? &m->w : nullptr;
  }
};

// One module of a load request, in the form the TS plan gives it.
struct LoraModuleSpec {
  std::string module;    // MLX module path, e.g. model.layers.3.self_attn.q_proj
  std::string a_tensor;  // tensor names in the adapter file
  std::string b_tensor;
  bool transposed = false;  // mlx-lm layout: lora_a [in, r], lora_b [r, out]; else A [r, in], B [out, r]
  double scale = 1.0;
};

struct LoraSpec {
  std::string name;
  std::string file;  // the adapter's safetensors file
  std::vector<LoraModuleSpec> modules;
};

class LoraAdapter {
 public:
  const std::string& name() const { return name_; }
  // Loaded for `m` (by its id: a freed model's address may come back as another's).
  bool belongs_to(const Model& m) const;
  // Per-layer deltas; every layer has an entry (empty slots where the adapter has none).
  const LayerLora& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }
  const std::vector<std::unique_ptr<LoraModule>>& modules() const { return modules_; }
  // Bytes of all A and B matrices held in memory.
  uint64_t bytes() const;

 private:
  friend std::shared_ptr<const LoraAdapter> load_lora(const Model& m, const LoraSpec& spec);
  std::string name_;
  uint64_t model_id_ = 0;
  std::vector<std::unique_ptr<LoraModule>> modules_;
  std::vector<LayerLora> layers_;
};

// Checks every module against the model (exists, may carry a LoRA, shapes) and copies its
// tensors; throws bs::Error naming the module, the tensor, what was expected and what was found.
std::shared_ptr<const LoraAdapter> load_lora(const Model& m, const LoraSpec& spec);

}  // namespace bs
