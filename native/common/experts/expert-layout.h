// Where the experts of one MoE layer lie in the files. Experts are stacked [E, ...] in the
// gate, up and down tensors (each with scales and biases when quantised), so expert e is one
// contiguous slice of each: 9 byte ranges (3 for plain weights) read per expert.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"

namespace bs {

struct ExpertRange {
  int file = 0;         // index into the model's WeightStore::files()
  uint64_t offset = 0;  // file offset of expert 0's slice
  uint64_t bytes = 0;   // one expert's slice = the stride between experts
  std::string tensor;   // name, for messages
};

struct LayerLayout {
  int64_t layer = 0;
  int n_experts = 0;
  std::vector<ExpertRange> ranges;  // gate.{weight,scales,biases}, up.{…}, down.{…}
  uint64_t expert_bytes = 0;        // Σ ranges' bytes
  WeightMatrix proto[3];            // gate, up, down as loaded (pointers into the mapping)

  // gate, up, down re-pointed at `bases` (one base per range, stacks of n_mats matrices).
  void views(uint8_t* const* bases, int64_t n_mats, WeightMatrix out[3]) const;
};

// The layout of MoE layer `l` of a loaded model; throws bs::Error when a slice of a stacked
// tensor is not contiguous (never for safetensors written row-major).
LayerLayout layer_layout(const Model& m, int64_t l);

}  // namespace bs
