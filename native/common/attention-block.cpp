#include <algorithm>
#include <cmath>
#include <optional>

#include "common/blocks.h"
#include "common/rope-scaling.h"

namespace bs {

int mrope_axis(const ModelConfig& c, int i) {
  const std::vector<int>& s = c.mrope_section;
  if (c.mrope_interleaved) {
    if (i % 3 == 1 && i < 3 * s[1]) return 1;
    if (i % 3 == 2 && i < 3 * s[2]) return 2;
    return 0;
  }
  return i < s[0] ? 0 : i < s[0] + s[1] ? 1 : 2;
}

namespace {

// Multimodal RoPE on x[n, heads, head_dim] (non-traditional pairs i, i + rot/2; angles in double).
void mrope(const ModelConfig& c, float* x, int64_t n, int64_t heads, const int32_t* pos, int64_t stride) {
  const int half = static_cast<int>(c.rot_dims / 2);
  std::vector<double> cs(2 * half);
  for (int64_t t = 0; t < n; ++t) {
    for (int i = 0; i < half; ++i) {
      const double angle = pos[mrope_axis(c, i) * stride + t] * std::pow(c.rope_theta, -2.0 * i / c.rot_dims);
      cs[2 * i] = std::cos(angle);
      cs[2 * i + 1] = std::sin(angle);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * c.head_dim;
      for (int i = 0; i < half; ++i) {
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<float>(a * cs[2 * i] - b * cs[2 * i + 1]);
        v[i + half] = static_cast<float>(b * cs[2 * i] + a * cs[2 * i + 1]);
      }
    }
  }
}

// RoPE with the model's own frequency table (llama3 scaling) on x[n, heads, head_dim]:
// non-traditional pairs i, i + rot/2; angles in double.
void table_rope(const ModelConfig& c, float* x, int64_t n, int64_t heads, const int32_t* pos) {
  const int64_t half = c.rot_dims / 2;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos[t] * c.rope_inv_freq[i], cs = std::cos(angle), sn = std::sin(angle);
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + (t * heads + h) * c.head_dim;
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<float>(a * cs - b * sn);
        v[i + half] = static_cast<float>(b * cs + a * sn);
      }
    }
  }
}

}  // namespace

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
  for (int64_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + s.rope_shift + t);

  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  std::optional<StageScope> stage(std::in_place, s.profile, Stage::AttnProj);
  if (c.fused_qkv) {
    // One projection gives per token [q | k | v] (its LoRA sits in the Q slot).
    s.q_gate.resize(n * (q_dim + 2 * kv_dim));
    run_linear(m, w.q, xn, n, s.q_gate.data(), s, delta(LoraSlot::Q));
    for (int64_t t = 0; t < n; ++t) {
      const float* row = s.q_gate.data() + t * (q_dim + 2 * kv_dim);
      std::copy_n(row, q_dim, s.q.data() + t * q_dim);
      std::copy_n(row + q_dim, kv_dim, s.k.data() + t * kv_dim);
      std::copy_n(row + q_dim + kv_dim, kv_dim, s.v.data() + t * kv_dim);
    }
  } else {
    if (c.attn_output_gate) {
      // q_proj gives per head [q head_dim | gate head_dim]; the gate scales the output below.
      s.q_gate.resize(2 * n * q_dim);
      s.attn_gate.resize(n * q_dim);
    }
    float* q_out = c.attn_output_gate ? s.q_gate.data() : s.q.data();
    const Linear* qkv[3] = {&w.q, &w.k, &w.v};
    float* qkv_out[3] = {q_out, s.k.data(), s.v.data()};
    const bool adapted = delta(LoraSlot::Q) || delta(LoraSlot::K) || delta(LoraSlot::V);
    if (adapted || !run_linears_fused(m, qkv, 3, xn, n, qkv_out, s)) {
      run_linear(m, w.q, xn, n, q_out, s, delta(LoraSlot::Q));
      run_linear(m, w.k, xn, n, s.k.data(), s, delta(LoraSlot::K));
      run_linear(m, w.v, xn, n, s.v.data(), s, delta(LoraSlot::V));
    }
    if (c.attn_output_gate) {
      for (int64_t i = 0; i < n * c.n_heads; ++i) {
        const float* src = s.q_gate.data() + 2 * i * c.head_dim;
        std::copy_n(src, c.head_dim, s.q.data() + i * c.head_dim);
        std::copy_n(src + c.head_dim, c.head_dim, s.attn_gate.data() + i * c.head_dim);
      }
    }
  }
  stage.emplace(s.profile, Stage::Attention);
  if (!w.q_norm.empty()) {
    const Kernels& kn = d.pick(Op::RmsNorm);
    kn.rmsnorm(ctx, s.q.data(), w.q_norm.data(), n * c.n_heads, c.head_dim, c.rms_eps, s.q.data());
    kn.rmsnorm(ctx, s.k.data(), w.k_norm.data(), n * c.n_kv_heads, c.head_dim, c.rms_eps, s.k.data());
  }
  if (s.mrope) {
    mrope(c, s.q.data(), n, c.n_heads, s.mrope, s.mrope_stride);
    mrope(c, s.k.data(), n, c.n_kv_heads, s.mrope, s.mrope_stride);
  } else if (!c.rope_inv_freq.empty()) {
    table_rope(c, s.q.data(), n, c.n_heads, s.positions.data());
    table_rope(c, s.k.data(), n, c.n_kv_heads, s.positions.data());
  } else {
    const Kernels& kr = d.pick(Op::Rope);
    RopeParams rp{static_cast<int>(c.n_heads), static_cast<int>(c.head_dim), static_cast<int>(c.rot_dims),
                  c.rope_theta};
    kr.rope(ctx, s.q.data(), s.positions.data(), n, rp);
    rp.n_heads = static_cast<int>(c.n_kv_heads);
    kr.rope(ctx, s.k.data(), s.positions.data(), n, rp);
  }

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
                           static_cast<float>(attention_scale(c)), m.kv_f16()};
  d.pick(Op::Attention).attention(ctx, s.q.data(), k_cache, v_cache, pos0, n, ap, s.attn.data());
  if (c.attn_output_gate) {
    for (int64_t i = 0; i < n * q_dim; ++i) s.attn[i] /= 1.0f + std::exp(-s.attn_gate[i]);
  }
  stage.emplace(s.profile, Stage::AttnProj);
  run_linear(m, w.o, s.attn.data(), n, out, s, delta(LoraSlot::O));
}

}  // namespace bs
