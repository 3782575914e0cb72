#include "common/linear-attention.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/lora.h"
#include "common/row-math.h"

namespace bs {

namespace {

using rows::decay_update_dot;
using rows::dot;
using rows::dots_2x2;
using rows::scale_add_rows;

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// x ← x · rsqrt(mean(x²) + eps) · scale over n values (MLX's l2-norm of q and k).
void rms_scale(float* x, int64_t n, float eps, float scale) {
  const float inv = scale / std::sqrt(dot(x, x, n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

struct Layout {
  int64_t Hk, Hv, Dk, Dv, C, ratio, key_dim;
  explicit Layout(const LinearAttnConfig& c)
      : Hk(c.k_heads),
        Hv(c.v_heads),
        Dk(c.k_dim),
        Dv(c.v_dim),
        C(c.conv_dim()),
        ratio(c.v_heads / c.k_heads),
        key_dim(c.key_dim()) {}
  const float* q(const float* qkv, int64_t t, int64_t h) const { return qkv + t * C + (h / ratio) * Dk; }
  const float* k(const float* qkv, int64_t t, int64_t h) const { return qkv + t * C + key_dim + (h / ratio) * Dk; }
  const float* v(const float* qkv, int64_t t, int64_t h) const { return qkv + t * C + 2 * key_dim + h * Dv; }
};

void recurrent_head(const Layout& L, int64_t h, const float* qkv, const float* g, const float* beta, int64_t n,
                    float* S, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    const float a = std::exp(g[t * L.Hv + h]), b = beta[t * L.Hv + h];
    const float *q = L.q(qkv, t, h), *k = L.k(qkv, t, h), *v = L.v(qkv, t, h);
    float* yt = y + (t * L.Hv + h) * L.Dv;
    // Two passes per row of S: (a·row)·k = a·(row·k), then the decay, update and q·row together.
    for (int64_t i = 0; i < L.Dv; ++i) {
      float* row = S + i * L.Dk;
      const float d = b * (v[i] - a * dot(row, k, L.Dk));
      yt[i] = decay_update_dot(row, a, d, k, q, L.Dk);
    }
  }
}

// One block of n ≤ chunk tokens with the state at its start S0. With G the running sum of g:
// u_i = β_i v_i − β_i e^{G_i} S0 k_i − Σ_{j<i} β_i e^{G_i−G_j} (k_i·k_j) u_j,
// y_i = e^{G_i} S0 q_i + Σ_{j≤i} e^{G_i−G_j} (q_i·k_j) u_j, S = e^{G_n} S0 + Σ_j e^{G_n−G_j} u_j k_jᵀ.
// S0's products for every token first (two rows of S against each token's k and q), then the
// triangular part token by token, then the new state. work: G, e^G, c [chunk] each, the decays
// e^{G_i−G_j} [chunk, chunk], U [chunk, Dv].
void chunk_head(const Layout& L, int64_t h, const float* qkv, const float* g, const float* beta, int64_t n, float* S,
                float* y, float* work, int64_t chunk) {
  float* G = work;
  float* eG = G + chunk;
  float* c = eG + chunk;
  float* D = c + chunk;
  float* U = D + chunk * chunk;
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) G[i] = acc += g[i * L.Hv + h];
  for (int64_t i = 0; i < n; ++i) {
    eG[i] = std::exp(G[i]);
    for (int64_t j = 0; j <= i; ++j) D[i * chunk + j] = std::exp(G[i] - G[j]);
  }
  const int64_t yrow = L.Hv * L.Dv, krow = L.C;  // token strides of y and of k in qkv
  float* y0 = y + h * L.Dv;
  const float* k0 = L.k(qkv, 0, h);
  for (int64_t d = 0; d < L.Dv; d += 2) {
    const float* r0 = S + d * L.Dk;
    const float* r1 = d + 1 < L.Dv ? r0 + L.Dk : r0;
    for (int64_t i = 0; i < n; ++i) {
      const float b = beta[i * L.Hv + h];
      const float *q = L.q(qkv, i, h), *k = L.k(qkv, i, h), *v = L.v(qkv, i, h);
      float p[4];
      dots_2x2(r0, r1, k, q, L.Dk, p);
      float* u = U + i * L.Dv;
      u[d] = b * (v[d] - eG[i] * p[0]);
      y0[i * yrow + d] = eG[i] * p[1];
      if (d + 1 < L.Dv) {
        u[d + 1] = b * (v[d + 1] - eG[i] * p[2]);
        y0[i * yrow + d + 1] = eG[i] * p[3];
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const float b = beta[i * L.Hv + h];
    const float *q = L.q(qkv, i, h), *k = L.k(qkv, i, h);
    for (int64_t j = 0; j < i; ++j) c[j] = -(b * D[i * chunk + j] * dot(k, L.k(qkv, j, h), L.Dk));
    scale_add_rows(U + i * L.Dv, 1.0f, c, U, L.Dv, i, L.Dv);
    for (int64_t j = 0; j <= i; ++j) c[j] = D[i * chunk + j] * dot(q, L.k(qkv, j, h), L.Dk);
    scale_add_rows(y0 + i * yrow, 1.0f, c, U, L.Dv, i + 1, L.Dv);
  }
  const float* last = D + (n - 1) * chunk;
  for (int64_t d = 0; d < L.Dv; ++d) {
    for (int64_t j = 0; j < n; ++j) c[j] = last[j] * U[j * L.Dv + d];
    scale_add_rows(S + d * L.Dk, eG[n - 1], c, k0, krow, n, L.Dk);
  }
}

}  // namespace

void causal_conv_silu(const ExecCtx& ctx, const float* w, int64_t C, int64_t K, float* history, const float* x,
                      int64_t n, float* out) {
  // Row r of the virtual input: history row r for r < K-1, else x row r - (K-1).
  auto in = [&](int64_t r) { return r < K - 1 ? history + r * C : x + (r - (K - 1)) * C; };
  // Channels split across the threads (one exp per output: most of the work in decode).
  ctx.parallel_for(C, [&](int64_t c0, int64_t c1) {
    for (int64_t t = 0; t < n; ++t) {
      float* o = out + t * C;
      for (int64_t c = c0; c < c1; ++c) {
        float s = 0.0f;
        for (int64_t j = 0; j < K; ++j) s += w[c * K + j] * in(t + j)[c];
        o[c] = s / (1.0f + std::exp(-s));
      }
    }
  });
  // The new history: the last K-1 rows of the input (shifting in place when n < K-1).
  for (int64_t r = 0; r < K - 1; ++r) {
    const int64_t src = n + r;
    if (src < K - 1) {
      std::copy_n(history + src * C, C, history + r * C);
    } else {
      std::copy_n(x + (src - (K - 1)) * C, C, history + r * C);
    }
  }
}

void gated_delta_rule(const ExecCtx& ctx, const LinearAttnConfig& c, const float* qkv, const float* g,
                      const float* beta, int64_t n, int64_t chunk, float* state, Scratch& s, float* y) {
  const Layout L(c);
  const int64_t head_state = L.Dv * L.Dk;
  if (chunk <= 0) {
    ctx.parallel_for(L.Hv, [&](int64_t b, int64_t e) {
      for (int64_t h = b; h < e; ++h) recurrent_head(L, h, qkv, g, beta, n, state + h * head_state, y);
    });
    return;
  }
  const int64_t per_head = chunk * (3 + chunk + L.Dv);
  s.lin_work.resize(L.Hv * per_head);
  float* work = s.lin_work.data();
  ctx.parallel_for(L.Hv, [&](int64_t b, int64_t e) {
    for (int64_t h = b; h < e; ++h) {
      for (int64_t t0 = 0; t0 < n; t0 += chunk) {
        const int64_t m = std::min(chunk, n - t0);
        chunk_head(L, h, qkv + t0 * L.C, g + t0 * L.Hv, beta + t0 * L.Hv, m, state + h * head_state,
                   y + t0 * L.Hv * L.Dv, work + h * per_head, chunk);
      }
    }
  });
}

void linear_attention_block(const Model& m, const LinearAttnWeights& w, const float* xn, int64_t n, float* state,
                            Scratch& s, float* out, const LayerLora* lora) {
  auto delta = [&](LoraSlot slot) { return lora ? lora->get(slot) : nullptr; };
  const ModelConfig& cfg = m.cfg;
  const LinearAttnConfig& c = cfg.linear;
  const Layout L(c);
  const int64_t VD = c.value_dim(), r = L.ratio;
  s.lin_qkv.resize(n * L.C);
  s.lin_z.resize(n * VD);
  s.lin_b.resize(n * L.Hv);
  s.lin_a.resize(n * L.Hv);
  std::optional<StageScope> stage(std::in_place, s.profile, Stage::LinearProj);
  if (w.fused) {
    // qwen3_next: per k head [q Dk | k Dk | v r·Dv | z r·Dv] and [b r | a r].
    const int64_t group = 2 * L.Dk + 2 * r * L.Dv;
    s.lin_proj.resize(n * L.Hk * group);
    s.lin_proj2.resize(n * L.Hk * 2 * r);
    const Linear* ls[2] = {&w.qkvz, &w.ba};
    float* ys[2] = {s.lin_proj.data(), s.lin_proj2.data()};
    if (delta(LoraSlot::LinQkvz) || delta(LoraSlot::LinBa) || !run_linears_fused(m, ls, 2, xn, n, ys, s)) {
      run_linear(m, w.qkvz, xn, n, s.lin_proj.data(), s, delta(LoraSlot::LinQkvz));
      run_linear(m, w.ba, xn, n, s.lin_proj2.data(), s, delta(LoraSlot::LinBa));
    }
    for (int64_t t = 0; t < n; ++t) {
      float* qkv = s.lin_qkv.data() + t * L.C;
      for (int64_t kh = 0; kh < L.Hk; ++kh) {
        const float* p = s.lin_proj.data() + (t * L.Hk + kh) * group;
        std::copy_n(p, L.Dk, qkv + kh * L.Dk);
        std::copy_n(p + L.Dk, L.Dk, qkv + L.key_dim + kh * L.Dk);
        std::copy_n(p + 2 * L.Dk, r * L.Dv, qkv + 2 * L.key_dim + kh * r * L.Dv);
        std::copy_n(p + 2 * L.Dk + r * L.Dv, r * L.Dv, s.lin_z.data() + t * VD + kh * r * L.Dv);
        const float* ba = s.lin_proj2.data() + (t * L.Hk + kh) * 2 * r;
        std::copy_n(ba, r, s.lin_b.data() + t * L.Hv + kh * r);
        std::copy_n(ba + r, r, s.lin_a.data() + t * L.Hv + kh * r);
      }
    }
  } else {
    // A decode step runs the four in one parallel loop (b and a are Hv rows each).
    const Linear* ls[4] = {&w.qkv, &w.z, &w.b, &w.a};
    float* ys[4] = {s.lin_qkv.data(), s.lin_z.data(), s.lin_b.data(), s.lin_a.data()};
    const bool adapted =
        delta(LoraSlot::LinQkv) || delta(LoraSlot::LinZ) || delta(LoraSlot::LinB) || delta(LoraSlot::LinA);
    if (adapted || !run_linears_fused(m, ls, 4, xn, n, ys, s)) {
      run_linear(m, w.qkv, xn, n, s.lin_qkv.data(), s, delta(LoraSlot::LinQkv));
      run_linear(m, w.z, xn, n, s.lin_z.data(), s, delta(LoraSlot::LinZ));
      run_linear(m, w.b, xn, n, s.lin_b.data(), s, delta(LoraSlot::LinB));
      run_linear(m, w.a, xn, n, s.lin_a.data(), s, delta(LoraSlot::LinA));
    }
  }
  stage.emplace(s.profile, Stage::LinearRecurrence);
  s.lin_conv.resize(n * L.C);
  causal_conv_silu(m.ctx(), w.conv.data(), L.C, c.conv_kernel, state, s.lin_qkv.data(), n, s.lin_conv.data());
  // q and k: unit RMS (eps 1e-6, as MLX), then q / Dk and k / √Dk, so q·k is the cosine / √Dk.
  const float inv_dk = 1.0f / static_cast<float>(L.Dk), inv_sqrt_dk = 1.0f / std::sqrt(static_cast<float>(L.Dk));
  for (int64_t t = 0; t < n; ++t) {
    float* row = s.lin_conv.data() + t * L.C;
    for (int64_t kh = 0; kh < L.Hk; ++kh) {
      rms_scale(row + kh * L.Dk, L.Dk, 1e-6f, inv_dk);
      rms_scale(row + L.key_dim + kh * L.Dk, L.Dk, 1e-6f, inv_sqrt_dk);
    }
  }
  // b → β = sigmoid(b); a → log-decay g = −exp(A_log) · softplus(a + dt_bias).
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < L.Hv; ++h) {
      float& b = s.lin_b[t * L.Hv + h];
      float& a = s.lin_a[t * L.Hv + h];
      b = sigmoid(b);
      a = w.a_neg[h] * softplus(a + w.dt_bias[h]);
    }
  }
  s.lin_y.resize(n * VD);
  gated_delta_rule(m.ctx(), c, s.lin_conv.data(), s.lin_a.data(), s.lin_b.data(), n, n > 1 ? kDeltaChunk : 0,
                   state + c.conv_floats(), s, s.lin_y.data());
  // Gated RMSNorm per head over Dv: rmsnorm(y) · w · silu(z).
  m.dispatch()
      .pick(Op::RmsNorm)
      .rmsnorm(m.ctx(), s.lin_y.data(), w.norm.data(), n * L.Hv, L.Dv, cfg.rms_eps, s.lin_y.data());
  m.ctx().parallel_for(n * VD, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float z = s.lin_z[i];
      s.lin_y[i] *= z / (1.0f + std::exp(-z));
    }
  });
  stage.emplace(s.profile, Stage::LinearProj);
  run_linear(m, w.out, s.lin_y.data(), n, out, s, delta(LoraSlot::LinOut));
}

}  // namespace bs
