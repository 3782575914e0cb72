#include <algorithm>
#include <cmath>

#include "common/blocks.h"

namespace bs {

void attention_block(const Model& m, const AttentionWeights& w, const float* xn, int64_t n, int64_t pos0, void* k_cache,
                     void* v_cache, Scratch& s, float* out, const LayerLora* lora) {
  const ModelConfig& c = m.cfg;
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  s.q.resize(n * q_dim);
  s.k.resize(n * kv_dim);
  s.v.resize(n * kv_dim);
  s.attn.resize(n * q_dim);
  s.positions.resize(n);
  for (int64_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + t);

  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  if (c.attn_output_gate) {
    // q_proj gives per head [q head_dim | gate head_dim]; the gate scales the output below.
    s.q_gate.resize(2 * n * q_dim);
    s.attn_gate.resize(n * q_dim);
    run_linear(m, w.q, xn, n, s.q_gate.data(), s, delta(LoraSlot::Q));
    for (int64_t i = 0; i < n * c.n_heads; ++i) {
      const float* src = s.q_gate.data() + 2 * i * c.head_dim;
      std::copy_n(src, c.head_dim, s.q.data() + i * c.head_dim);
      std::copy_n(src + c.head_dim, c.head_dim, s.attn_gate.data() + i * c.head_dim);
    }
  } else {
    run_linear(m, w.q, xn, n, s.q.data(), s, delta(LoraSlot::Q));
  }
  run_linear(m, w.k, xn, n, s.k.data(), s, delta(LoraSlot::K));
  run_linear(m, w.v, xn, n, s.v.data(), s, delta(LoraSlot::V));
  if (!w.q_norm.empty()) {
    const Kernels& kn = d.pick(Op::RmsNorm);
    kn.rmsnorm(ctx, s.q.data(), w.q_norm.data(), n * c.n_heads, c.head_dim, c.rms_eps, s.q.data());
    kn.rmsnorm(ctx, s.k.data(), w.k_norm.data(), n * c.n_kv_heads, c.head_dim, c.rms_eps, s.k.data());
  }
  const Kernels& kr = d.pick(Op::Rope);
  RopeParams rp{static_cast<int>(c.n_heads), static_cast<int>(c.head_dim), static_cast<int>(c.rot_dims), c.rope_theta};
  kr.rope(ctx, s.q.data(), s.positions.data(), n, rp);
  rp.n_heads = static_cast<int>(c.n_kv_heads);
  kr.rope(ctx, s.k.data(), s.positions.data(), n, rp);

  // This chunk's keys and values go into cache rows pos0.. (rounded to half when the cache is F16).
  const int64_t count = n * kv_dim, at = pos0 * kv_dim;
  if (m.kv_f16()) {
    uint16_t* kc = static_cast<uint16_t*>(k_cache) + at;
    uint16_t* vc = static_cast<uint16_t*>(v_cache) + at;
    for (int64_t i = 0; i < count; ++i) {
      kc[i] = f32_to_f16(s.k[i]);
      vc[i] = f32_to_f16(s.v[i]);
    }
  } else {
    std::copy_n(s.k.data(), count, static_cast<float*>(k_cache) + at);
    std::copy_n(s.v.data(), count, static_cast<float*>(v_cache) + at);
  }

  const AttentionParams ap{static_cast<int>(c.n_heads), static_cast<int>(c.n_kv_heads), static_cast<int>(c.head_dim),
                           static_cast<float>(1.0 / std::sqrt(double(c.head_dim))), m.kv_f16()};
  d.pick(Op::Attention).attention(ctx, s.q.data(), k_cache, v_cache, pos0, n, ap, s.attn.data());
  if (c.attn_output_gate) {
    for (int64_t i = 0; i < n * q_dim; ++i) s.attn[i] /= 1.0f + std::exp(-s.attn_gate[i]);
  }
  run_linear(m, w.o, s.attn.data(), n, out, s, delta(LoraSlot::O));
}

}  // namespace bs
