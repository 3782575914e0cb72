// Where the experts of one MoE layer lie in the files. Each expert is one slice of each of the
// gate, up and down tensors (with scales and biases when quantised): 9 byte ranges (3 for plain
// weights) read per expert. Stacked experts (mlx-lm's switch_mlp) follow each other in one
// tensor; per-expert and fused gate_up tensors put them elsewhere (ExpertPart).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/model.h"

namespace bs {

struct ExpertRange {
  uint64_t bytes = 0;                // one expert's slice
  std::vector<int> file;             // [E] index into the model's WeightStore::files()
  std::vector<uint64_t> offset;      // [E] file offset of expert e's slice
  const ExpertPart* part = nullptr;  // the slices in the mapping (pointers, tensor names)
  const std::string& tensor(int64_t e) const { return part->tensor[e]->name; }
};

// A run of experts [e0, e1) whose slices of one range follow each other in one file.
struct ExpertRun {
  int e0 = 0, e1 = 0;
};

struct LayerLayout {
  int64_t layer = 0;
  int n_experts = 0;
  bool stacked = true;              // proto spans all experts [E, ...] in the mapping
  std::vector<ExpertRange> ranges;  // gate.{weight,scales,biases}, up.{…}, down.{…}
  uint64_t expert_bytes = 0;        // Σ ranges' bytes
  WeightMatrix proto[3];            // gate, up, down as loaded (pointers into the mapping)

  // gate, up, down re-pointed at `bases` (one base per range, stacks of n_mats matrices).
  void views(const uint8_t* const* bases, int64_t n_mats, WeightMatrix out[3]) const;
  // Expert e's gate, up, down in the mapping (one matrix each).
  void mapped_views(int e, WeightMatrix out[3]) const;
  // Range r's experts as runs of consecutive file bytes (one run when stacked).
  std::vector<ExpertRun> runs(size_t r) const;
};

// The layout of MoE layer `l` of a loaded model; throws bs::Error when a slice is not whole.
LayerLayout layer_layout(const Model& m, int64_t l);

}  // namespace bs
