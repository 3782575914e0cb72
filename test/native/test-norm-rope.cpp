// RMSNorm and RoPE: hand-computed values, partial rotary, and RoPE's relative-position property;
// the llama3 and YaRN rope_scaling frequency tables by hand.
#include <cmath>

#include "common/backend.h"
#include "common/rope-scaling.h"
#include "fixtures.h"

namespace {
const bs::Kernels& ref() { return bs::reference_backend().k; }
}  // namespace

TEST(rmsnorm_hand_computed) {
  const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
  float y[4];
  // mean(x²) = 7.5; + eps 0.5 = 8 → 1/sqrt(8).
  ref().rmsnorm(bs::ExecCtx{}, x, w, 1, 4, 0.5f, y);
  const double inv = 1 / std::sqrt(8.0);
  const double want[4] = {inv, 2 * inv, 6 * inv, 2 * inv};
  for (int i = 0; i < 4; ++i) EXPECT(std::fabs(y[i] - want[i]) < 1e-6) << i << ": " << y[i] << " vs " << want[i];
  // In place, two rows.
  float xy[8] = {1, 2, 3, 4, -2, 0, 0, 0};
  ref().rmsnorm(bs::ExecCtx{}, xy, w, 2, 4, 0.0f, xy);
  EXPECT(std::fabs(xy[0] - 1 / std::sqrt(7.5)) < 1e-6);
  EXPECT(std::fabs(xy[4] - (-2.0f)) < 1e-6) << "mean(x²) = 1 → y = x · w";
}

TEST(rope_hand_computed_with_partial_rotary) {
  // head_dim 6, rot 4: pairs (0, 2) at frequency 1 and (1, 3) at 10000^(-1/2) = 0.01;
  // dims 4, 5 pass through.
  bs::RopeParams p{1, 6, 4, 10000.0};
  float x[12] = {1, 0, 0, 0, 7, 8,   // position 1
                 0, 1, 0, 0, 7, 8};  // position 2
  const int32_t pos[2] = {1, 2};
  ref().rope(bs::ExecCtx{}, x, pos, 2, p);
  EXPECT(std::fabs(x[0] - std::cos(1.0)) < 1e-6 && std::fabs(x[2] - std::sin(1.0)) < 1e-6);
  EXPECT(x[1] == 0 && x[3] == 0 && x[4] == 7 && x[5] == 8);
  EXPECT(std::fabs(x[7] - std::cos(0.02)) < 1e-6 && std::fabs(x[9] - std::sin(0.02)) < 1e-6) << x[7] << " " << x[9];
  EXPECT(x[6] == 0 && x[8] == 0 && x[10] == 7 && x[11] == 8);
  // Position 0 is the identity.
  float y[6] = {1, 2, 3, 4, 5, 6};
  const int32_t zero = 0;
  ref().rope(bs::ExecCtx{}, y, &zero, 1, p);
  for (int i = 0; i < 6; ++i) EXPECT(y[i] == i + 1);
}

TEST(rope_scores_depend_only_on_relative_position) {
  bt::Rng r(3);
  for (int c = 0; c < 50; ++c) {
    const int hd = 2 * (1 + static_cast<int>(r.below(32)));
    const int rot = 2 * (1 + static_cast<int>(r.below(hd / 2)));
    bs::RopeParams p{1, hd, rot, r.uniform(100, 1e6)};
    const auto q = bt::random_vec(r, hd), k = bt::random_vec(r, hd);
    const int32_t a = static_cast<int32_t>(r.below(1000)), b = static_cast<int32_t>(r.below(1000));
    const int32_t d = static_cast<int32_t>(r.below(1000));
    auto score = [&](int32_t pq, int32_t pk) {
      std::vector<float> qq = q, kk = k;
      ref().rope(bs::ExecCtx{}, qq.data(), &pq, 1, p);
      ref().rope(bs::ExecCtx{}, kk.data(), &pk, 1, p);
      double s = 0;
      for (int i = 0; i < hd; ++i) s += static_cast<double>(qq[i]) * kk[i];
      return s;
    };
    const double s1 = score(a, b), s2 = score(a + d, b + d);
    EXPECT(std::fabs(s1 - s2) < 1e-4 * (1 + std::fabs(s1)))
        << "case " << c << " hd " << hd << " rot " << rot << " pos " << a << "," << b << " shift " << d << ": " << s1
        << " vs " << s2;
  }
}

TEST(llama3_rope_scaling_table_hand_computed) {
  // rot 8, θ 1e4: base frequencies 1, 0.1, 0.01, 0.001 (wavelengths 2π·1, 2π·10, 2π·100, 2π·1000).
  // factor 8, low 1, high 4, original 1000: wavelengths below 250 stay, above 1000 are divided by 8,
  // 2π·100 ≈ 628 blends with s = (1000/(200π) − 1)/3 = 0.19718314: 0.01·((1 − s)/8 + s).
  const bs::Llama3Scaling sc{8.0, 1.0, 4.0, 1000.0};
  const std::vector<double> inv = bs::llama3_inv_freq(8, 10000.0, sc);
  const double s = (10.0 / (2 * M_PI) - 1) / 3;
  const double want[4] = {1.0, 0.1, 0.01 * ((1 - s) / 8 + s), 0.001 / 8};
  EXPECT(inv.size() == 4) << inv.size();
  for (int i = 0; i < 4; ++i) EXPECT(std::fabs(inv[i] - want[i]) < 1e-15) << i << ": " << inv[i] << " vs " << want[i];
  EXPECT(std::fabs(want[2] - 0.0029753525) < 1e-10) << want[2];
  // Factor 1 changes nothing.
  const std::vector<double> same = bs::llama3_inv_freq(8, 10000.0, bs::Llama3Scaling{1.0, 1.0, 4.0, 1000.0});
  for (int i = 0; i < 4; ++i) EXPECT(std::fabs(same[i] - std::pow(10000.0, -i / 4.0)) < 1e-15) << i;
}

TEST(yarn_rope_scaling_table_hand_computed) {
  // rot 8, θ 1e4, factor 4, original 1000: the correction dims of 32 and 1 rotations are
  // 8·ln(1000/(64π))/(2·ln 1e4) = 0.697 → 0 and 8·ln(1000/2π)/(2·ln 1e4) = 2.202 → 3, so pair i
  // is interpolated by ramp i/3: f·(ramp/4 + 1 − ramp).
  bs::YarnScaling sc;
  sc.factor = 4.0;
  sc.original_max_positions = 1000.0;
  const std::vector<double> inv = bs::yarn_inv_freq(8, 10000.0, sc);
  const double want[4] = {1.0, 0.1 * 0.75, 0.01 * 0.5, 0.001 / 4};
  EXPECT(inv.size() == 4) << inv.size();
  for (int i = 0; i < 4; ++i) EXPECT(std::fabs(inv[i] - want[i]) < 1e-15) << i << ": " << inv[i] << " vs " << want[i];
  EXPECT(std::fabs(bs::yarn_mscale(4.0) - (0.1 * std::log(4.0) + 1)) < 1e-15);
  EXPECT(bs::yarn_mscale(1.0) == 1.0);
  // Qwen3's documented setting (rot 128, θ 1e6, factor 4, original 32768): ramp over pairs 23..40;
  // values from a transcription of Hugging Face's _compute_yarn_parameters.
  bs::YarnScaling q;
  q.factor = 4.0;
  q.original_max_positions = 32768.0;
  const std::vector<double> qi = bs::yarn_inv_freq(128, 1e6, q);
  const std::pair<int, double> known[] = {{0, 1.0},
                                          {15, 0.03924189758484536},
                                          {20, 0.01333521432163324},
                                          {30, 0.001064360981247002},
                                          {40, 4.445698525097307e-05},
                                          {63, 3.102344401879299e-07}};
  for (const auto& [i, v] : known) EXPECT(std::fabs(qi[i] / v - 1) < 1e-12) << i << ": " << qi[i] << " vs " << v;
  // Factor 1 changes nothing.
  bs::YarnScaling one;
  one.original_max_positions = 1000.0;
  const std::vector<double> same = bs::yarn_inv_freq(8, 10000.0, one);
  for (int i = 0; i < 4; ++i) EXPECT(std::fabs(same[i] - std::pow(10000.0, -i / 4.0)) < 1e-15) << i;
}
