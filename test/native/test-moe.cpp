// The MoE FFN block (exact path) against a float64 oracle built from dequant(): routing,
// per-expert SwiGLU, weighted sum and shared experts; batching tokens (dedupe) must not
// change any token's output.
#include <cmath>
#include <numeric>
#include <set>

#include "common/blocks.h"
#include "fixtures.h"

namespace {

struct MoeFixture {
  bt::OwnedMatrix router, gate, up, down, sg, su, sd;
  bs::MoeWeights w;
};

MoeFixture make_moe(bt::Rng& r, int64_t E, int64_t hidden, int64_t inter, bool shared, bool sigmoid) {
  MoeFixture f;
  const auto dt = bs::DType::BF16;
  f.router = sigmoid ? bt::random_dense(r, 1, E, hidden, dt) : bt::random_affine(r, 1, E, hidden, 8, 64, dt);
  f.gate = bt::random_affine(r, E, inter, hidden, 4, 64, dt);
  f.up = bt::random_affine(r, E, inter, hidden, 4, 32, dt);
  f.down = bt::random_affine(r, E, hidden, inter, 4, 64, dt);
  f.w.router.w = f.router.m;
  f.w.gate = f.gate.m;
  f.w.up = f.up.m;
  f.w.down = f.down.m;
  if (shared) {
    f.sg = bt::random_affine(r, 1, inter, hidden, 4, 64, dt);
    f.su = bt::random_affine(r, 1, inter, hidden, 8, 64, dt);
    f.sd = bt::random_affine(r, 1, hidden, inter, 4, 32, dt);
    f.w.has_shared = true;
    f.w.shared = {{f.sg.m, {}}, {f.su.m, {}}, {f.sd.m, {}}};
  }
  return f;
}

double dq(const bs::WeightMatrix& m, int64_t mat, int64_t row, int64_t col) { return bs::dequant(m, mat, row, col); }

// down(silu(gate x) * up x) of matrix `e` in double; bound accumulates Σ|down·h|.
std::vector<double> swiglu(const bs::WeightMatrix& g, const bs::WeightMatrix& u, const bs::WeightMatrix& d, int64_t e,
                           const float* x, std::vector<double>& bound, double scale) {
  std::vector<double> h(g.rows), y(d.rows);
  for (int64_t i = 0; i < g.rows; ++i) {
    double a = 0, b = 0;
    for (int64_t c = 0; c < g.cols; ++c) {
      a += dq(g, e, i, c) * x[c];
      b += dq(u, e, i, c) * x[c];
    }
    h[i] = a / (1 + std::exp(-a)) * b;
  }
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t c = 0; c < d.cols; ++c) {
      y[r] += dq(d, e, r, c) * h[c];
      bound[r] += std::fabs(scale * dq(d, e, r, c) * h[c]);
    }
  }
  return y;
}

}  // namespace

TEST(moe_block_matches_float64_oracle) {
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(500 + c);
    const bool sigmoid = c % 2 == 1, shared = c % 4 >= 2;
    const int64_t E = 8, hidden = 64, inter = 64, n = 1 + r.below(6);
    MoeFixture f = make_moe(r, E, hidden, inter, shared, sigmoid);
    bs::Model m(bs::reference_backend(), 1 + c % 2);
    m.cfg.hidden = hidden;
    bs::RouterSpec& s = f.w.spec;
    s.n_experts = static_cast<int>(E);
    s.top_k = 2 + static_cast<int>(r.below(3));
    s.norm_topk_prob = true;
    if (sigmoid) {
      s.family = bs::RoutingFamily::SigmoidGroup;
      s.n_group = 2;
      s.topk_group = 1;
      s.routed_scaling_factor = 1.5f;
      s.correction_bias = bt::random_vec(r, E, 0.2);
      s.top_k = 2;
    }
    m.top_k = s.top_k;
    m.expert_bytes = f.gate.m.mat_bytes() + f.up.m.mat_bytes() + f.down.m.mat_bytes();
    const auto x = bt::random_vec(r, n * hidden);
    std::vector<float> out(n * hidden);
    bs::Scratch scratch;
    bs::moe_block(m, f.w, x.data(), n, scratch, out.data());

    std::set<int32_t> used;
    for (int64_t t2 = 0; t2 < n; ++t2) {
      const float* xt = x.data() + t2 * hidden;
      std::vector<float> logits(E);
      for (int64_t e = 0; e < E; ++e) {
        double a = 0;
        for (int64_t col = 0; col < hidden; ++col) a += dq(f.router.m, 0, e, col) * xt[col];
        logits[e] = static_cast<float>(a);
      }
      std::vector<int32_t> ids(s.top_k);
      std::vector<float> wts(s.top_k);
      bs::route(bs::Dispatch(bs::reference_backend()), bs::ExecCtx{}, s, logits.data(), 1, 0, ids.data(), wts.data());
      std::vector<double> want(hidden), bound(hidden, 1e-6);
      for (int j = 0; j < s.top_k; ++j) {
        used.insert(ids[j]);
        const auto y = swiglu(f.gate.m, f.up.m, f.down.m, ids[j], xt, bound, wts[j]);
        for (int64_t i = 0; i < hidden; ++i) want[i] += wts[j] * y[i];
      }
      if (shared) {
        const auto y = swiglu(f.sg.m, f.su.m, f.sd.m, 0, xt, bound, 1.0);
        for (int64_t i = 0; i < hidden; ++i) want[i] += y[i];
      }
      for (int64_t i = 0; i < hidden; ++i) {
        EXPECT(std::fabs(out[t2 * hidden + i] - want[i]) <= 1e-4 * bound[i])
            << "seed " << 500 + c << (sigmoid ? " sigmoid" : " softmax") << (shared ? " +shared" : "") << " token "
            << t2 << " dim " << i << ": " << out[t2 * hidden + i] << " vs " << want[i];
      }
    }
    EXPECT(scratch.experts_touched == used.size()) << "each routed expert computed once, seed " << 500 + c;

    // Token by token gives the same outputs as the batch.
    for (int64_t t2 = 0; t2 < n; ++t2) {
      std::vector<float> one(hidden);
      bs::Scratch s1;
      bs::moe_block(m, f.w, x.data() + t2 * hidden, 1, s1, one.data());
      const bt::Diff d = bt::compare(one.data(), out.data() + t2 * hidden, hidden, 1e-6, 1e-5);
      EXPECT(d.worst <= 1.0) << "token " << t2 << " alone differs from the batch at dim " << d.at << ", seed "
                             << 500 + c;
    }
  }
}
