#include "common/experts/expert-layout.h"

#include <unordered_map>

#include "common/error.h"

namespace bs {

void LayerLayout::views(const uint8_t* const* bases, int64_t n_mats, WeightMatrix out[3]) const {
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

void LayerLayout::mapped_views(int e, WeightMatrix out[3]) const {
  const uint8_t* bases[9];
  for (size_t r = 0; r < ranges.size(); ++r) bases[r] = ranges[r].part->data(e);
  views(bases, 1, out);
}

std::vector<ExpertRun> LayerLayout::runs(size_t r) const {
  const ExpertRange& x = ranges[r];
  std::vector<ExpertRun> out;
  for (int e = 0; e < n_experts; ++e) {
    const bool follows = !out.empty() && x.file[e] == x.file[e - 1] && x.offset[e] == x.offset[e - 1] + x.bytes;
    if (follows) {
      out.back().e1 = e + 1;
    } else {
      out.push_back({e, e + 1});
    }
  }
  return out;
}

LayerLayout layer_layout(const Model& m, int64_t l) {
  const MoeWeights& w = m.layers[l].moe;
  LayerLayout lay;
  lay.layer = l;
  lay.n_experts = w.spec.n_experts;
  lay.stacked = w.stacked;
  lay.proto[0] = w.gate;
  lay.proto[1] = w.up;
  lay.proto[2] = w.down;
  std::unordered_map<std::string, int> file_index;
  const auto& files = m.store->files();
  for (size_t f = 0; f < files.size(); ++f) file_index[files[f]->path()] = static_cast<int>(f);
  for (const ExpertPart& p : w.expert_parts) {
    ExpertRange r;
    r.bytes = p.bytes;
    r.part = &p;
    for (int e = 0; e < lay.n_experts; ++e) {
      const TensorInfo& t = *p.tensor[e];
      const auto it = file_index.find(*t.file);
      if (it == file_index.end()) fail("internal: tensor ", t.name, " belongs to no open file");
      if (p.offset[e] + p.bytes > t.nbytes) {
        fail(*t.file, ": tensor ", t.name, " (", t.nbytes, " bytes) is too small for expert ", e, "'s slice of ",
             p.bytes, " bytes");
      }
      r.file.push_back(it->second);
      r.offset.push_back(t.file_offset + p.offset[e]);
    }
    lay.expert_bytes += r.bytes;
    lay.ranges.push_back(std::move(r));
  }
  if (lay.ranges.size() != 9 && lay.ranges.size() != 3) {
    fail("internal: layer ", l, " has ", lay.ranges.size(), " expert tensors (want 9 or 3)");
  }
  return lay;
}

}  // namespace bs
