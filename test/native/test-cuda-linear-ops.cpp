// The CUDA decoder's hybrid-model kernels over the CPU emulation, against the scalar reference:
// the causal conv + SiLU (output and advanced history, fewer tokens than taps included), the
// delta rule with its input preparation (q/k RMS scaling, β, decay) against the reference's
// token-by-token recurrence and its chunked prefill form, on odd shapes (Dv not a multiple of the
// rows a warp holds, several v heads per k head, Dk up to the 256 limit), and the sigmoid gates
// and head copies against hand loops. The decoder itself: cuda-decoder.test.ts.
#define BS_CUDA_EMULATION 1
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/linear-attention.h"
#include "cuda/causal-conv.cuh"
#include "cuda/copy-heads.cuh"
#include "cuda/delta-rule.cuh"
#include "cuda/sigmoid-mul.cuh"
#include "harness.h"

namespace {

namespace cu = bs::cuda_emu;

std::vector<float> random(bt::Rng& r, int64_t n, double lo = -1.0, double hi = 1.0) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(r.uniform(lo, hi));
  return v;
}

// Largest difference over the largest magnitude of the reference.
double max_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 1e-12, worst = 0.0;
  for (float x : want) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
  return worst / scale;
}

// The block's preparation on the host (common/linear-attention.cpp): q, k at unit RMS scaled by
// 1/Dk and 1/√Dk; β = sigmoid(b); g = a_neg · softplus(a + dt_bias).
void prepare(const bs::LinearAttnConfig& c, int64_t n, std::vector<float>& qkv, std::vector<float>& b,
             std::vector<float>& a, const std::vector<float>& a_neg, const std::vector<float>& dt) {
  const int64_t C = c.conv_dim(), kd = c.key_dim();
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < 2 * kd; i += c.k_dim) {
      float* h = qkv.data() + t * C + i;
      float ss = 0.0f;
      for (int64_t j = 0; j < c.k_dim; ++j) ss += h[j] * h[j];
      const float scale = i < kd ? 1.0f / static_cast<float>(c.k_dim) : 1.0f / std::sqrt(static_cast<float>(c.k_dim));
      const float inv = scale / std::sqrt(ss / static_cast<float>(c.k_dim) + 1e-6f);
      for (int64_t j = 0; j < c.k_dim; ++j) h[j] *= inv;
    }
    for (int64_t h = 0; h < c.v_heads; ++h) {
      float& bb = b[t * c.v_heads + h];
      float& aa = a[t * c.v_heads + h];
      bb = 1.0f / (1.0f + std::exp(-bb));
      const float x = aa + dt[h];
      aa = a_neg[h] * (x > 20.0f ? x : std::log1p(std::exp(x)));
    }
  }
}

}  // namespace

TEST(cuda_emu_causal_conv_silu_matches_the_reference_with_its_history) {
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(900 + c);
    const int64_t C = 1 + static_cast<int64_t>(r.below(600)), K = 2 + static_cast<int64_t>(r.below(3));
    const int64_t n = c % 3 == 0 ? 1 : 1 + static_cast<int64_t>(r.below(9));
    const std::vector<float> w = random(r, C * K), x = random(r, n * C, -3.0, 3.0);
    std::vector<float> hist = random(r, (K - 1) * C), hist_ref = hist, out(n * C), want(n * C);
    bs::causal_conv_silu(w.data(), C, K, hist_ref.data(), x.data(), n, want.data());
    EXPECT(cu::launch_causal_conv_silu(w.data(), C, static_cast<int>(K), hist.data(), x.data(), n, out.data(),
                                       nullptr) == cu::cudaSuccess);
    EXPECT(max_rel(out, want) < 1e-6) << "seed " << 900 + c << " C " << C << " K " << K << " n " << n << ": "
                                      << max_rel(out, want);
    EXPECT(hist == hist_ref) << "seed " << 900 + c << " C " << C << " K " << K << " n " << n << ": history";
  }
  std::vector<float> one(1), h(8);
  EXPECT(cu::launch_causal_conv_silu(one.data(), 1, 9, h.data(), one.data(), 1, one.data(), nullptr) ==
         cu::cudaErrorInvalidValue)
      << "more taps than a thread holds";
}

TEST(cuda_emu_delta_rule_matches_the_reference_recurrence_and_chunked_form) {
  struct Shape {
    int64_t Hk, Hv, Dk, Dv, n;
  };
  const Shape shapes[] = {{2, 4, 32, 32, 1}, {1, 3, 64, 37, 7}, {2, 2, 256, 8, 3}, {2, 6, 32, 5, 70}};
  for (size_t s = 0; s < std::size(shapes); ++s) {
    const Shape& sh = shapes[s];
    bt::Rng r(950 + s);
    bs::LinearAttnConfig c;
    c.k_heads = sh.Hk, c.v_heads = sh.Hv, c.k_dim = sh.Dk, c.v_dim = sh.Dv, c.conv_kernel = 4;
    const int64_t n = sh.n, C = c.conv_dim(), S = c.v_heads * c.v_dim * c.k_dim;
    std::vector<float> qkv = random(r, n * C, -2.0, 2.0), b = random(r, n * c.v_heads, -3.0, 3.0),
                       a = random(r, n * c.v_heads, -3.0, 3.0), a_neg = random(r, c.v_heads, -2.0, -0.1),
                       dt = random(r, c.v_heads, -1.0, 1.0), state = random(r, S, -0.5, 0.5);
    std::vector<float> y(n * c.value_dim()), dev_state = state;
    const cu::DeltaArgs args{qkv.data(), b.data(), a.data(),  a_neg.data(), dt.data(), dev_state.data(),
                             y.data(),   n,        c.k_heads, c.v_heads,    c.k_dim,   c.v_dim};
    EXPECT(cu::launch_delta_rule(args, nullptr) == cu::cudaSuccess);
    prepare(c, n, qkv, b, a, a_neg, dt);
    bs::Scratch scratch;
    for (const int64_t chunk : {int64_t{0}, bs::kDeltaChunk}) {
      std::vector<float> want(n * c.value_dim()), ref_state = state;
      bs::gated_delta_rule(bs::ExecCtx{}, c, qkv.data(), a.data(), b.data(), n, chunk, ref_state.data(), scratch,
                           want.data());
      EXPECT(max_rel(y, want) < 2e-5) << "shape " << s << " chunk " << chunk << ": y " << max_rel(y, want);
      EXPECT(max_rel(dev_state, ref_state) < 2e-5)
          << "shape " << s << " chunk " << chunk << ": state " << max_rel(dev_state, ref_state);
    }
  }
  std::vector<float> z(64);
  const cu::DeltaArgs bad{z.data(), z.data(), z.data(), z.data(), z.data(), z.data(), z.data(), 1, 1, 1, 48, 1};
  EXPECT(cu::launch_delta_rule(bad, nullptr) == cu::cudaErrorInvalidValue) << "Dk not a multiple of 32";
}

TEST(cuda_emu_sigmoid_gates_and_head_copies_match_hand_loops) {
  bt::Rng r(990);
  const int64_t n = 3, heads = 5, hd = 12, H = 40;
  // q_proj's rows: per head [q | gate]; the gate scales the attention output element-wise.
  const std::vector<float> qg = random(r, n * heads * 2 * hd, -4.0, 4.0);
  std::vector<float> q(n * heads * hd, -1.0f), attn = random(r, n * heads * hd), want = attn;
  const cu::HeadCopy split{qg.data(), heads * 2 * hd, 2 * hd, q.data(), heads * hd, hd, n, heads, hd};
  EXPECT(cu::launch_copy_heads(split, nullptr) == cu::cudaSuccess);
  EXPECT(cu::launch_sigmoid_mul(attn.data(), qg.data() + hd, n * heads * hd, hd, 2 * hd, 1, nullptr) ==
         cu::cudaSuccess);
  bool copied = true, gated = true;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t j = 0; j < hd; ++j) {
        const int64_t i = (t * heads + h) * hd + j, src = (t * heads + h) * 2 * hd + j;
        copied &= q[i] == qg[src];
        gated &= attn[i] == want[i] / (1.0f + std::exp(-qg[src + hd]));
      }
    }
  }
  EXPECT(copied) << "q copied out of [q | gate]";
  EXPECT(gated) << "attention output gated by its own element";
  // The shared expert: one gate per token over its hidden row.
  const std::vector<float> g = random(r, n, -4.0, 4.0);
  std::vector<float> y = random(r, n * H), y0 = y;
  EXPECT(cu::launch_sigmoid_mul(y.data(), g.data(), n * H, H, 1, 0, nullptr) == cu::cudaSuccess);
  bool shared = true;
  for (int64_t i = 0; i < n * H; ++i) shared &= y[i] == y0[i] / (1.0f + std::exp(-g[i / H]));
  EXPECT(shared) << "one gate per token";
}
