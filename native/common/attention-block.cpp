#include <algorithm>
#include <cmath>

#include "common/blocks.h"

namespace bs {

void run_linear(const Model& m, const Linear& l, const float* x, int64_t n, float* y, Scratch& s,
                const LoraWeights* lora) {
  linear_forward(m.dispatch(), m.ctx(), l, x, n, y);
  s.bytes_touched += l.w.mat_bytes();
  if (!lora) return;
  // A kernel set whose table predates the op (positional init leaves it null) runs the reference.
  auto fn = m.dispatch().pick(Op::LoraDelta, &lora->a).lora_delta;
  (fn ? fn : reference_backend().k.lora_delta)(m.ctx(), *lora, x, n, y);
  s.bytes_touched += lora->a.mat_bytes() + lora->b.mat_bytes();
}

void attention_block(const Model& m, const AttentionWeights& w, const float* xn, int64_t n, int64_t pos0,
                     float* k_cache, float* v_cache, Scratch& s, float* out, const LayerLora* lora) {
  const ModelConfig& c = m.cfg;
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  s.q.resize(n * q_dim);
  s.attn.resize(n * q_dim);
  s.positions.resize(n);
  for (int64_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + t);

  // Keys and values go straight into this chunk's cache rows.
  float* k = k_cache + pos0 * kv_dim;
  float* v = v_cache + pos0 * kv_dim;
  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  run_linear(m, w.q, xn, n, s.q.data(), s, delta(LoraSlot::Q));
  run_linear(m, w.k, xn, n, k, s, delta(LoraSlot::K));
  run_linear(m, w.v, xn, n, v, s, delta(LoraSlot::V));
  if (!w.q_norm.empty()) {
    const Kernels& kn = d.pick(Op::RmsNorm);
    kn.rmsnorm(ctx, s.q.data(), w.q_norm.data(), n * c.n_heads, c.head_dim, c.rms_eps, s.q.data());
    kn.rmsnorm(ctx, k, w.k_norm.data(), n * c.n_kv_heads, c.head_dim, c.rms_eps, k);
  }
  const Kernels& kr = d.pick(Op::Rope);
  RopeParams rp{static_cast<int>(c.n_heads), static_cast<int>(c.head_dim), static_cast<int>(c.rot_dims),
                c.rope_theta};
  kr.rope(ctx, s.q.data(), s.positions.data(), n, rp);
  rp.n_heads = static_cast<int>(c.n_kv_heads);
  kr.rope(ctx, k, s.positions.data(), n, rp);

  const AttentionParams ap{static_cast<int>(c.n_heads), static_cast<int>(c.n_kv_heads),
                           static_cast<int>(c.head_dim), static_cast<float>(1.0 / std::sqrt(double(c.head_dim)))};
  d.pick(Op::Attention).attention(ctx, s.q.data(), k_cache, v_cache, pos0, n, ap, s.attn.data());
  run_linear(m, w.o, s.attn.data(), n, out, s, delta(LoraSlot::O));
}

}  // namespace bs
