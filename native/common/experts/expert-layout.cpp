#include "common/experts/expert-layout.h"

#include "common/error.h"

namespace bs {

void LayerLayout::views(uint8_t* const* bases, int64_t n_mats, WeightMatrix out[3]) const {
  const size_t per = ranges.size() / 3;
  for (int p = 0; p < 3; ++p) {
    out[p] = proto[p];
    out[p].n_mats = n_mats;
    out[p].w = bases[p * per];
    if (per == 3) {
      out[p].scales = bases[p * per + 1];
      out[p].biases = bases[p * per + 2];
    }
  }
}

LayerLayout layer_layout(const Model& m, int64_t l) {
  const MoeWeights& w = m.layers[l].moe;
  LayerLayout lay;
  lay.layer = l;
  lay.n_experts = w.spec.n_experts;
  lay.proto[0] = w.gate;
  lay.proto[1] = w.up;
  lay.proto[2] = w.down;
  const auto& files = m.store->files();
  for (const TensorInfo* t : w.expert_tensors) {
    ExpertRange r;
    r.tensor = t->name;
    r.file = -1;
    for (size_t f = 0; f < files.size(); ++f) {
      if (&files[f]->path() == t->file || files[f]->path() == *t->file) r.file = static_cast<int>(f);
    }
    if (r.file < 0) fail("internal: tensor ", t->name, " belongs to no open file");
    if (t->nbytes % static_cast<uint64_t>(lay.n_experts) != 0) {
      fail(*t->file, ": tensor ", t->name, " (", t->nbytes, " bytes) does not split into ", lay.n_experts,
           " equal expert slices");
    }
    r.offset = t->file_offset;
    r.bytes = t->nbytes / static_cast<uint64_t>(lay.n_experts);
    lay.expert_bytes += r.bytes;
    lay.ranges.push_back(std::move(r));
  }
  if (lay.ranges.size() != 9 && lay.ranges.size() != 3) {
    fail("internal: layer ", l, " has ", lay.ranges.size(), " expert tensors (want 9 or 3)");
  }
  return lay;
}

}  // namespace bs
