// Gated DeltaNet pieces: the chunked form of the delta rule equals the token-by-token
// recurrence (outputs and final state, any split of the tokens into calls, threaded or not),
// and the causal conv gives the same output and history whether tokens come at once or one by one.
// Lightning attention (bailing): the same chunked-vs-recurrent check, and its fixed decays.
#include <algorithm>
#include <cmath>

#include "common/lightning-attention.h"
#include "common/linear-attention.h"
#include "cpu/thread-pool.h"
#include "harness.h"

namespace {

struct Inputs {
  std::vector<float> qkv, g, beta;
};

// Random q, k (unit RMS scaled as the block does), v, log-decays in (−2, 0), betas in (0, 1).
Inputs random_inputs(const bs::LinearAttnConfig& c, int64_t n, bt::Rng& rng) {
  Inputs in;
  const int64_t C = c.conv_dim(), kd = c.key_dim();
  in.qkv.resize(n * C);
  for (float& x : in.qkv) x = static_cast<float>(rng.uniform(-1, 1));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < 2 * kd; i += c.k_dim) {
      float* h = in.qkv.data() + t * C + i;
      float ss = 0;
      for (int64_t j = 0; j < c.k_dim; ++j) ss += h[j] * h[j];
      const float inv = 1.0f / std::sqrt(ss) / (i < kd ? std::sqrt(float(c.k_dim)) : 1.0f);
      for (int64_t j = 0; j < c.k_dim; ++j) h[j] *= inv;
    }
  }
  in.g.resize(n * c.v_heads);
  in.beta.resize(n * c.v_heads);
  for (float& x : in.g) x = static_cast<float>(rng.uniform(-2, 0));
  for (float& x : in.beta) x = static_cast<float>(rng.uniform(0, 1));
  return in;
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-6, worst = 0;
  for (float x : b) scale = std::max(scale, double(std::fabs(x)));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst / scale;
}

}  // namespace

TEST(gated_delta_chunked_equals_recurrence) {
  bt::Rng rng(7);
  bs::ThreadPool pool(2);
  // Shape 3: rows past the kernels' 8- and 32-float blocks with tails, an odd v_dim.
  for (int shape = 0; shape < 4; ++shape) {
    bs::LinearAttnConfig c;
    c.k_heads = shape == 3 ? 1 : 2;
    c.v_heads = shape == 0 ? 2 : shape == 3 ? 2 : 4;
    c.k_dim = shape == 2 ? 24 : shape == 3 ? 44 : 16;
    c.v_dim = shape == 1 ? 8 : shape == 3 ? 37 : 16;
    c.conv_kernel = 4;
    const int64_t S = c.v_heads * c.v_dim * c.k_dim;
    for (int64_t n : {1, 5, 64, 150}) {
      const Inputs in = random_inputs(c, n, rng);
      std::vector<float> s0(S);
      for (float& x : s0) x = static_cast<float>(rng.uniform(-0.5, 0.5));
      bs::Scratch scratch;
      std::vector<float> rec_state = s0, rec_y(n * c.value_dim());
      bs::gated_delta_rule(bs::ExecCtx{}, c, in.qkv.data(), in.g.data(), in.beta.data(), n, 0, rec_state.data(),
                           scratch, rec_y.data());
      for (int64_t chunk : {int64_t(1), int64_t(7), bs::kDeltaChunk}) {
        for (bs::ThreadPool* p : {static_cast<bs::ThreadPool*>(nullptr), &pool}) {
          std::vector<float> st = s0, y(n * c.value_dim());
          bs::gated_delta_rule(bs::ExecCtx{p}, c, in.qkv.data(), in.g.data(), in.beta.data(), n, chunk, st.data(),
                               scratch, y.data());
          EXPECT(max_rel(y, rec_y) < 2e-5)
              << "outputs: shape " << shape << " n " << n << " chunk " << chunk << " rel " << max_rel(y, rec_y);
          EXPECT(max_rel(st, rec_state) < 2e-5) << "state: shape " << shape << " n " << n << " chunk " << chunk;
        }
      }
    }
  }
}

TEST(causal_conv_history_carries_across_calls) {
  bt::Rng rng(3);
  const int64_t C = 12, K = 4, n = 9;
  std::vector<float> w(C * K), x(n * C), hist0((K - 1) * C);
  for (float& v : w) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : x) v = static_cast<float>(rng.uniform(-1, 1));
  for (float& v : hist0) v = static_cast<float>(rng.uniform(-1, 1));
  std::vector<float> h_all = hist0, out_all(n * C);
  bs::causal_conv_silu(bs::ExecCtx{}, w.data(), C, K, h_all.data(), x.data(), n, out_all.data());
  // Split calls on two threads (channels split between them) give the one serial call's bits.
  bs::ThreadPool pool(2);
  for (int64_t split : {1, 2, 5}) {
    std::vector<float> h = hist0, out(n * C);
    for (int64_t t = 0; t < n; t += split) {
      const int64_t m = std::min(split, n - t);
      bs::causal_conv_silu(bs::ExecCtx{&pool}, w.data(), C, K, h.data(), x.data() + t * C, m, out.data() + t * C);
    }
    EXPECT(out == out_all) << "outputs differ with calls of " << split << " tokens";
    EXPECT(h == h_all) << "history differs with calls of " << split << " tokens";
  }
  // Token 0 sees the history: tap j < K-1 reads history row j.
  float s = 0;
  for (int64_t j = 0; j < K - 1; ++j) s += w[j] * hist0[j * C];
  s += w[K - 1] * x[0];
  EXPECT(std::fabs(out_all[0] - s / (1 + std::exp(-s))) < 1e-6) << out_all[0];
}

TEST(lightning_chunked_equals_recurrence) {
  bt::Rng rng(11);
  bs::ThreadPool pool(2);
  // D 37: a head past the row kernels' 32-float block, with a tail.
  for (const auto& [H, D] : {std::pair<int64_t, int64_t>{2, 16}, {3, 8}, {4, 24}, {2, 37}}) {
    std::vector<float> g(H);
    bs::lightning_log_decays(H, 1, 4, g.data());  // the strongest decays (layer 1)
    for (int64_t n : {1, 5, 70, 130}) {
      std::vector<float> q(n * H * D), k(q.size()), v(q.size()), s0(H * D * D);
      for (auto* x : {&q, &k, &v, &s0}) {
        for (float& e : *x) e = static_cast<float>(rng.uniform(-1, 1) / std::sqrt(double(D)));
      }
      bs::Scratch scratch;
      std::vector<float> rec_state = s0, rec_y(q.size());
      bs::lightning_rule(bs::ExecCtx{}, H, D, g.data(), q.data(), k.data(), v.data(), n, 0, rec_state.data(), scratch,
                         rec_y.data());
      for (int64_t chunk : {int64_t(1), int64_t(7), bs::kLightningChunk}) {
        for (bs::ThreadPool* p : {static_cast<bs::ThreadPool*>(nullptr), &pool}) {
          std::vector<float> st = s0, y(q.size());
          // Two calls (a prefill in two chunks of the session) must equal one.
          const int64_t half = n / 2, off = half * H * D;
          bs::lightning_rule(bs::ExecCtx{p}, H, D, g.data(), q.data(), k.data(), v.data(), half, chunk, st.data(),
                             scratch, y.data());
          bs::lightning_rule(bs::ExecCtx{p}, H, D, g.data(), q.data() + off, k.data() + off, v.data() + off, n - half,
                             chunk, st.data(), scratch, y.data() + off);
          EXPECT(max_rel(y, rec_y) < 2e-5) << "outputs: H " << H << " n " << n << " chunk " << chunk;
          EXPECT(max_rel(st, rec_state) < 2e-5) << "state: H " << H << " n " << n << " chunk " << chunk;
        }
      }
    }
  }
}

TEST(lightning_decays_are_alibi_slopes_scaled_by_depth) {
  // 4 heads, layer 0 of 20: −2^(−2(h+1)) · (1 + 1e-5).
  std::vector<float> g(6);
  bs::lightning_log_decays(4, 0, 20, g.data());
  for (int h = 0; h < 4; ++h) {
    const double want = -std::pow(2.0, -2.0 * (h + 1)) * (1 + 1e-5);
    EXPECT(std::fabs(g[h] - want) < 1e-7) << "head " << h << ": " << g[h] << " vs " << want;
  }
  // 6 heads (not a power of two), layer 5 of 20: the 4-head slopes, then 2^−1 and 2^−3 (every other
  // slope of 8 heads), times 1 − 4/19 + 1e-5.
  bs::lightning_log_decays(6, 5, 20, g.data());
  const double f = 1 - 4.0 / 19 + 1e-5;
  const double want[6] = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  for (int h = 0; h < 6; ++h) EXPECT(std::fabs(g[h] + want[h] * f) < 1e-7) << "head " << h << ": " << g[h];
}
