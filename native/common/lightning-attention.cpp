#include "common/lightning-attention.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/lora.h"
#include "common/row-math.h"

namespace bs {

namespace {

struct Heads {
  int64_t H, D;
  const float* at(const float* x, int64_t t, int64_t h) const { return x + (t * H + h) * D; }
};

void recurrent_head(const Heads& L, int64_t h, float g, const float* q, const float* k, const float* v, int64_t n,
                    float* S, float* y) {
  const float a = std::exp(g);
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = L.at(q, t, h), *kt = L.at(k, t, h), *vt = L.at(v, t, h);
    float* yt = y + (t * L.H + h) * L.D;
    for (int64_t i = 0; i < L.D; ++i) {
      float* row = S + i * L.D;
      for (int64_t j = 0; j < L.D; ++j) row[j] = a * row[j] + kt[i] * vt[j];
    }
    // y = Σ_i q_i · row_i over the updated rows, each output in a register across the sum.
    std::fill_n(yt, L.D, 0.0f);
    rows::scale_add_rows(yt, 1.0f, qt, S, L.D, L.D, L.D);
  }
}

// One block of n ≤ chunk tokens with the state at its start S0 (decay a = e^g, pw[t] = a^t):
// y_i = a^{i+1} q_iᵀ S0 + Σ_{j≤i} a^{i−j} (q_i·k_j) v_j; S = a^n S0 + Σ_j a^{n−1−j} k_j v_jᵀ.
// Each output row is summed in registers over the rows it adds (rows::scale_add_rows).
// work: pw [chunk + 1], c [max(D, chunk)].
void chunk_head(const Heads& L, int64_t h, float g, const float* q, const float* k, const float* v, int64_t n, float* S,
                float* y, float* work, int64_t chunk) {
  float* pw = work;
  float* c = work + chunk + 1;
  for (int64_t t = 0; t <= n; ++t) pw[t] = std::exp(g * static_cast<float>(t));
  const int64_t tok = L.H * L.D;  // token stride of q, k, v and y
  const float* v0 = L.at(v, 0, h);
  for (int64_t i = 0; i < n; ++i) {
    const float* qi = L.at(q, i, h);
    float* yi = y + (i * L.H + h) * L.D;
    std::fill_n(yi, L.D, 0.0f);
    for (int64_t r = 0; r < L.D; ++r) c[r] = pw[i + 1] * qi[r];
    rows::scale_add_rows(yi, 1.0f, c, S, L.D, L.D, L.D);
    for (int64_t j = 0; j <= i; ++j) c[j] = pw[i - j] * rows::dot(qi, L.at(k, j, h), L.D);
    rows::scale_add_rows(yi, 1.0f, c, v0, tok, i + 1, L.D);
  }
  for (int64_t r = 0; r < L.D; ++r) {
    for (int64_t j = 0; j < n; ++j) c[j] = pw[n - 1 - j] * L.at(k, j, h)[r];
    rows::scale_add_rows(S + r * L.D, pw[n], c, v0, tok, n, L.D);
  }
}

// ALiBi slopes: 2^(−8(i+1)/p) for a power of two p; otherwise those of the power p below n,
// then every other slope of 2p.
double slope(int64_t heads, int64_t i) {
  int64_t p = 1;
  while (p * 2 <= heads) p *= 2;
  if (i < p) return std::pow(2.0, -8.0 * static_cast<double>(i + 1) / static_cast<double>(p));
  return std::pow(2.0, -8.0 * static_cast<double>(2 * (i - p) + 1) / static_cast<double>(2 * p));
}

}  // namespace

void lightning_log_decays(int64_t heads, int64_t layer, int64_t n_layers, float* out) {
  const double factor =
      1.0 -
      static_cast<double>(std::max<int64_t>(0, layer - 1)) / static_cast<double>(std::max<int64_t>(1, n_layers - 1)) +
      1e-5;
  for (int64_t h = 0; h < heads; ++h) out[h] = static_cast<float>(-slope(heads, h) * factor);
}

void lightning_rule(const ExecCtx& ctx, int64_t heads, int64_t D, const float* log_decay, const float* q,
                    const float* k, const float* v, int64_t n, int64_t chunk, float* state, Scratch& s, float* y) {
  const Heads L{heads, D};
  const int64_t head_state = D * D;
  if (chunk <= 0) {
    ctx.parallel_for(heads, [&](int64_t b, int64_t e) {
      for (int64_t h = b; h < e; ++h) recurrent_head(L, h, log_decay[h], q, k, v, n, state + h * head_state, y);
    });
    return;
  }
  const int64_t per_head = chunk + 1 + std::max(D, chunk);
  s.lin_work.resize(heads * per_head);
  float* work = s.lin_work.data();
  ctx.parallel_for(heads, [&](int64_t b, int64_t e) {
    for (int64_t h = b; h < e; ++h) {
      for (int64_t t0 = 0; t0 < n; t0 += chunk) {
        const int64_t m = std::min(chunk, n - t0);
        const int64_t off = t0 * heads * D;
        chunk_head(L, h, log_decay[h], q + off, k + off, v + off, m, state + h * head_state, y + off,
                   work + h * per_head, chunk);
      }
    }
  });
}

void lightning_attention_block(const Model& m, const LinearAttnWeights& w, const float* xn, int64_t n, int64_t pos0,
                               float* state, Scratch& s, float* out, const LayerLora* lora) {
  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  const ModelConfig& cfg = m.cfg;
  const LinearAttnConfig& c = cfg.linear;
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t H = c.k_heads, D = c.k_dim, HD = H * D;
  // query_key_value gives per token [q heads | k heads | v heads], each head D wide; g_proj the
  // output gate's input.
  std::optional<StageScope> stage(std::in_place, s.profile, Stage::LinearProj);
  s.lin_qkv.resize(n * 3 * HD);
  s.lin_z.resize(n * HD);
  const Linear* ls[2] = {&w.qkv, &w.z};
  float* ys[2] = {s.lin_qkv.data(), s.lin_z.data()};
  if (delta(LoraSlot::LinQkv) || delta(LoraSlot::LinZ) || !run_linears_fused(m, ls, 2, xn, n, ys, s)) {
    run_linear(m, w.qkv, xn, n, s.lin_qkv.data(), s, delta(LoraSlot::LinQkv));
    run_linear(m, w.z, xn, n, s.lin_z.data(), s, delta(LoraSlot::LinZ));
  }
  stage.emplace(s.profile, Stage::LinearRecurrence);
  s.q.resize(n * HD);
  s.k.resize(n * HD);
  s.v.resize(n * HD);
  for (int64_t t = 0; t < n; ++t) {
    const float* row = s.lin_qkv.data() + t * 3 * HD;
    std::copy_n(row, HD, s.q.data() + t * HD);
    std::copy_n(row + HD, HD, s.k.data() + t * HD);
    std::copy_n(row + 2 * HD, HD, s.v.data() + t * HD);
  }
  if (!w.q_norm.empty()) {
    const Kernels& kn = d.pick(Op::RmsNorm);
    kn.rmsnorm(ctx, s.q.data(), w.q_norm.data(), n * H, D, cfg.rms_eps, s.q.data());
    kn.rmsnorm(ctx, s.k.data(), w.k_norm.data(), n * H, D, cfg.rms_eps, s.k.data());
  }
  s.positions.resize(n);
  for (int64_t t = 0; t < n; ++t) s.positions[t] = static_cast<int32_t>(pos0 + s.rope_shift + t);
  const Kernels& kr = d.pick(Op::Rope);
  const RopeParams rp{static_cast<int>(H), static_cast<int>(D), static_cast<int>(c.rot_dims), cfg.rope_theta};
  kr.rope(ctx, s.q.data(), s.positions.data(), n, rp);
  kr.rope(ctx, s.k.data(), s.positions.data(), n, rp);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (float& x : s.q) x *= scale;
  s.lin_y.resize(n * HD);
  lightning_rule(ctx, H, D, w.log_decay.data(), s.q.data(), s.k.data(), s.v.data(), n, n > 1 ? kLightningChunk : 0,
                 state, s, s.lin_y.data());
  // Group RMSNorm over each of norm_groups equal slices of [heads · D], times g_norm, times
  // sigmoid(g_proj(xn)).
  const int64_t G = c.norm_groups, width = HD / G;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t g = 0; g < G; ++g) {
      float* x = s.lin_y.data() + t * HD + g * width;
      float ss = 0.0f;
      for (int64_t i = 0; i < width; ++i) ss += x[i] * x[i];
      const float inv = 1.0f / std::sqrt(ss / static_cast<float>(width) + cfg.rms_eps);
      const float* wn = w.norm.data() + g * width;
      const float* z = s.lin_z.data() + t * HD + g * width;
      for (int64_t i = 0; i < width; ++i) x[i] = x[i] * inv * wn[i] / (1.0f + std::exp(-z[i]));
    }
  }
  stage.emplace(s.profile, Stage::LinearProj);
  run_linear(m, w.out, s.lin_y.data(), n, out, s, delta(LoraSlot::LinOut));
}

}  // namespace bs
