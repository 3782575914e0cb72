// The MoE FFN: routing, rows sorted by expert, the expert math through the gathered matmul,
// and the weighted scatter back to tokens. The expert executor (experts/streamer.cpp) runs the
// same pieces over slot buffers; without one, experts are read from the mapped file (exact).
#include <algorithm>
#include <cmath>
#include <optional>

#include "common/blocks.h"
#include "common/error.h"
#include "common/experts/streamer.h"

namespace bs {

void check_expert_finite(const MoeWeights& w, int64_t e, const uint8_t* const* data) {
  if (!w.expert_checked) return;
  std::atomic<bool>& done = w.expert_checked[e];
  if (done.load(std::memory_order_acquire)) return;
  for (size_t r = 0; r < w.expert_parts.size(); ++r) {
    const ExpertPart& p = w.expert_parts[r];
    const TensorInfo& t = *p.tensor[e];
    const int64_t i = first_non_finite(data ? data[r] : p.data(e), t.dtype, p.bytes / dtype_size(t.dtype));
    if (i >= 0) {
      fail(*t.file, ": tensor ", t.name, " holds a non-finite value (NaN or ±Inf) in expert ", e, " at element ", i,
           " of its slice; the model's weights are corrupt");
    }
  }
  done.store(true, std::memory_order_release);
}

namespace {
// Each routed expert on its first use: a corrupt one is a model error, not NaN logits. An
// executor (`streamed`) checks each expert where its bytes land instead.
void check_experts_finite(const MoeWeights& w, const std::vector<ExpertGroup>& groups, bool streamed) {
  for (size_t g = 0; !streamed && g < groups.size(); ++g) check_expert_finite(w, groups[g].expert);
}
}  // namespace

void mlp_block(const Model& m, const MlpWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora, const Linear* side, float* side_out) {
  const int64_t inter = w.gate.w.rows;
  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  s.gate.resize(n * inter);
  s.up.resize(n * inter);
  const Linear* ls[3] = {&w.gate, &w.up, side};
  float* ys[3] = {s.gate.data(), s.up.data(), side_out};
  const bool adapted = delta(LoraSlot::Gate) || delta(LoraSlot::Up);
  if (adapted || !run_linears_fused(m, ls, side ? 3 : 2, xn, n, ys, s)) {
    run_linear(m, w.gate, xn, n, s.gate.data(), s, delta(LoraSlot::Gate));
    run_linear(m, w.up, xn, n, s.up.data(), s, delta(LoraSlot::Up));
    if (side) run_linear(m, *side, xn, n, side_out, s);
  }
  m.dispatch().pick(Op::SiluMul).silu_mul(m.ctx(), s.gate.data(), s.up.data(), n * inter, s.gate.data());
  run_linear(m, w.down, s.gate.data(), n, out, s, delta(LoraSlot::Down));
}

void route_tokens(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s) {
  const int64_t E = w.spec.n_experts;
  s.logits.resize(n * E);
  const int k = routing_k(m, s);
  s.ids.resize(n * k);
  s.weights.resize(n * k);
  run_linear(m, w.router, xn, n, s.logits.data(), s);
  route(m.dispatch(), m.ctx(), w.spec, s.logits.data(), n, k, s.ids.data(), s.weights.data());
}

std::vector<ExpertGroup>& sort_routed_rows(const Model& m, const float* xn, int64_t n, int k, const int32_t* ids,
                                           Scratch& s) {
  const int64_t hidden = m.cfg.hidden, rows = n * k;
  int64_t E = 0;
  for (int64_t r = 0; r < rows; ++r) E = std::max<int64_t>(E, ids[r] + 1);
  // A stable counting sort by expert: no allocation once the scratch has grown (decode path).
  s.order.resize(rows);
  s.expert_start.assign(E + 1, 0);
  for (int64_t r = 0; r < rows; ++r) ++s.expert_start[ids[r] + 1];
  for (int64_t e = 0; e < E; ++e) s.expert_start[e + 1] += s.expert_start[e];
  for (int64_t r = 0; r < rows; ++r) s.order[s.expert_start[ids[r]]++] = r;
  s.order_ids.resize(rows);
  s.rows.resize(rows * hidden);
  s.groups.clear();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = s.order[r];
    s.order_ids[r] = ids[src];
    std::copy_n(xn + (src / k) * hidden, hidden, s.rows.data() + r * hidden);
    if (r == 0 || s.order_ids[r] != s.order_ids[r - 1]) {
      s.groups.push_back({s.order_ids[r], r, r + 1});
      s.bytes_touched += m.expert_bytes;
      ++s.experts_touched;
    } else {
      s.groups.back().end = r + 1;
    }
  }
  return s.groups;
}

void expert_rows(const Model& m, const WeightMatrix* v, const int32_t* ids, const float* x, int64_t rows, Scratch& s,
                 float* act) {
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t inter = v[0].rows;
  s.gate.resize(rows * inter);
  s.up.resize(rows * inter);
  std::optional<StageScope> stage(std::in_place, s.profile, Stage::GateUp);
  const Kernels& kg = d.pick(Op::GatherMatMul, &v[0]);
  if (kg.gather_matmul_multi && &kg == &d.pick(Op::GatherMatMul, &v[1])) {
    // Gate and up in one parallel loop over activations laid out once (the same bits).
    const WeightMatrix* gu[2] = {&v[0], &v[1]};
    float* ys[2] = {s.gate.data(), s.up.data()};
    kg.gather_matmul_multi(ctx, gu, 2, ids, x, rows, ys);
  } else {
    kg.gather_matmul(ctx, v[0], ids, x, rows, s.gate.data());
    d.pick(Op::GatherMatMul, &v[1]).gather_matmul(ctx, v[1], ids, x, rows, s.up.data());
  }
  stage.emplace(s.profile, Stage::SiluMul);
  d.pick(Op::SiluMul).silu_mul(ctx, s.gate.data(), s.up.data(), rows * inter, s.gate.data());
  stage.emplace(s.profile, Stage::Down);
  d.pick(Op::GatherMatMul, &v[2]).gather_matmul(ctx, v[2], ids, s.gate.data(), rows, act);
}

void moe_experts(const Model& m, int64_t layer, const MoeWeights& w, const float* xn, int64_t n, Phase phase,
                 const int32_t* ids, const float* weights, Scratch& s, float* out, const LayerLora* lora) {
  const int64_t hidden = m.cfg.hidden, k = routing_k(m, s), rows = n * k;
  const bool streamed = m.streamer && layer >= 0;
  {
    StageScope st(s.profile, Stage::DenseMlp);
    if (w.has_shared) {
      if (w.shared_gated) s.shared_gate.resize(n);
      mlp_block(m, w.shared, xn, n, s, out, lora, w.shared_gated ? &w.shared_gate : nullptr, s.shared_gate.data());
      if (w.shared_gated) {
        for (int64_t t = 0; t < n; ++t) {
          const float g = 1.0f / (1.0f + std::exp(-s.shared_gate[t]));
          for (int64_t i = 0; i < hidden; ++i) out[t * hidden + i] *= g;
        }
      }
    } else {
      std::fill_n(out, n * hidden, 0.0f);
    }
  }
  {
    StageScope st(s.profile, Stage::ExpertSort);
    check_experts_finite(w, sort_routed_rows(m, xn, n, static_cast<int>(k), ids, s), streamed);
    s.act.resize(rows * hidden);
  }
  // expert_rows times its own stages
  if (streamed) {
    m.streamer->run(m, layer, phase, s);
  } else {
    if (!w.stacked) fail("internal: experts that are not stacked run through the expert streamer");
    const WeightMatrix v[3] = {w.gate, w.up, w.down};
    expert_rows(m, v, s.order_ids.data(), s.rows.data(), rows, s, s.act.data());
  }
  // Scatter in row order whatever the path, so every path sums in the same order.
  StageScope st(s.profile, Stage::Combine);
  const Kernels& ka = m.dispatch().pick(Op::Add);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = s.order[r];
    ka.add(m.ctx(), s.act.data() + r * hidden, weights[src], hidden, out + (src / k) * hidden);
  }
}

void moe_block(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora) {
  route_tokens(m, w, xn, n, s);
  moe_experts(m, -1, w, xn, n, Phase::Prefill, s.ids.data(), s.weights.data(), s, out, lora);
}

}  // namespace bs
