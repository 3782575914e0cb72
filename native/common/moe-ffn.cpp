#include <algorithm>

#include "common/blocks.h"

namespace bs {

void mlp_block(const Model& m, const MlpWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora) {
  const int64_t inter = w.gate.w.rows;
  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  s.gate.resize(n * inter);
  s.up.resize(n * inter);
  run_linear(m, w.gate, xn, n, s.gate.data(), s, delta(LoraSlot::Gate));
  run_linear(m, w.up, xn, n, s.up.data(), s, delta(LoraSlot::Up));
  m.dispatch().pick(Op::SiluMul).silu_mul(m.ctx(), s.gate.data(), s.up.data(), n * inter, s.gate.data());
  run_linear(m, w.down, s.gate.data(), n, out, s, delta(LoraSlot::Down));
}

void moe_block(const Model& m, const MoeWeights& w, const float* xn, int64_t n, Scratch& s, float* out,
               const LayerLora* lora) {
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t hidden = m.cfg.hidden, inter = w.gate.rows, E = w.spec.n_experts;
  const int k = m.top_k;
  const int64_t rows = n * k;

  s.logits.resize(n * E);
  s.ids.resize(rows);
  s.weights.resize(rows);
  run_linear(m, w.router, xn, n, s.logits.data(), s);
  route(d, ctx, w.spec, s.logits.data(), n, k, s.ids.data(), s.weights.data());

  // Exact path: order the (token, slot) rows by expert so each routed expert is read once
  // and applied to every token routed to it (a stable counting sort: no allocation once the
  // scratch has grown).
  s.order.resize(rows);
  s.expert_start.assign(E + 1, 0);
  for (int64_t r = 0; r < rows; ++r) ++s.expert_start[s.ids[r] + 1];
  for (int64_t e = 0; e < E; ++e) s.expert_start[e + 1] += s.expert_start[e];
  for (int64_t r = 0; r < rows; ++r) s.order[s.expert_start[s.ids[r]]++] = r;
  s.order_ids.resize(rows);
  s.rows.resize(rows * hidden);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = s.order[r];
    s.order_ids[r] = s.ids[src];
    std::copy_n(xn + (src / k) * hidden, hidden, s.rows.data() + r * hidden);
    if (r == 0 || s.order_ids[r] != s.order_ids[r - 1]) {
      s.bytes_touched += m.expert_bytes;
      ++s.experts_touched;
    }
  }
  s.gate.resize(rows * inter);
  s.up.resize(rows * inter);
  s.act.resize(rows * hidden);
  const Kernels& kg = d.pick(Op::GatherMatMul, &w.gate);
  kg.gather_matmul(ctx, w.gate, s.order_ids.data(), s.rows.data(), rows, s.gate.data());
  d.pick(Op::GatherMatMul, &w.up).gather_matmul(ctx, w.up, s.order_ids.data(), s.rows.data(), rows, s.up.data());
  d.pick(Op::SiluMul).silu_mul(ctx, s.gate.data(), s.up.data(), rows * inter, s.gate.data());
  d.pick(Op::GatherMatMul, &w.down)
      .gather_matmul(ctx, w.down, s.order_ids.data(), s.gate.data(), rows, s.act.data());

  if (w.has_shared) {
    mlp_block(m, w.shared, xn, n, s, out, lora);
  } else {
    std::fill_n(out, n * hidden, 0.0f);
  }
  const Kernels& ka = d.pick(Op::Add);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = s.order[r];
    ka.add(ctx, s.act.data() + r * hidden, s.weights[src], hidden, out + (src / k) * hidden);
  }
}

}  // namespace bs
