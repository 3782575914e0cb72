// Routing, both families, hand-computed: softmax top-k with and without renormalisation,
// sigmoid-group (noaux_tc) with group masking, the correction bias used for selection only,
// ties, the top-k override, and mlx-lm's 0.0 for masked groups.
#include <cmath>

#include "common/routing.h"
#include "fixtures.h"

namespace {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> w;
};

Routed run(const bs::RouterSpec& spec, const std::vector<float>& logits, int k = 0) {
  const int kk = k > 0 ? k : spec.top_k;
  const int64_t n = static_cast<int64_t>(logits.size()) / spec.n_experts;
  Routed r{std::vector<int32_t>(n * kk), std::vector<float>(n * kk)};
  bs::route(bs::Dispatch(bs::reference_backend()), bs::ExecCtx{}, spec, logits.data(), n, k, r.ids.data(), r.w.data());
  return r;
}

float logit(double p) { return static_cast<float>(std::log(p / (1 - p))); }

bs::RouterSpec sigmoid_spec(int E, int k, int n_group, int topk_group, float scaling, bool norm = true) {
  bs::RouterSpec s;
  s.family = bs::RoutingFamily::SigmoidGroup;
  s.n_experts = E;
  s.top_k = k;
  s.n_group = n_group;
  s.topk_group = topk_group;
  s.routed_scaling_factor = scaling;
  s.norm_topk_prob = norm;
  s.correction_bias.assign(E, 0.0f);
  return s;
}

}  // namespace

TEST(route_softmax_topk_hand_computed) {
  bs::RouterSpec s;
  s.n_experts = 4;
  s.top_k = 2;
  s.norm_topk_prob = true;
  // softmax(ln [1, 2, 3, 4]) = [0.1, 0.2, 0.3, 0.4]; two tokens, the second reversed.
  const std::vector<float> l = {0.0f,           std::log(2.0f), std::log(3.0f), std::log(4.0f),
                                std::log(4.0f), std::log(3.0f), std::log(2.0f), 0.0f};
  Routed r = run(s, l);
  EXPECT(r.ids == (std::vector<int32_t>{3, 2, 0, 1}));
  EXPECT(std::fabs(r.w[0] - 0.4f / 0.7f) < 1e-6f && std::fabs(r.w[1] - 0.3f / 0.7f) < 1e-6f) << r.w[0] << " " << r.w[1];
  s.norm_topk_prob = false;
  r = run(s, l);
  EXPECT(std::fabs(r.w[0] - 0.4f) < 1e-6f && std::fabs(r.w[1] - 0.3f) < 1e-6f && std::fabs(r.w[3] - 0.3f) < 1e-6f);
  r = run(s, l, 3);  // routing width override
  EXPECT(r.ids.size() == 6u && r.ids[0] == 3 && r.ids[1] == 2 && r.ids[2] == 1);
  EXPECT(std::fabs(r.w[2] - 0.2f) < 1e-6f);
  s.norm_topk_prob = true;
  r = run(s, l, 1);  // Qwen renormalises even a single expert (mlx-lm qwen3_moe)
  EXPECT(r.ids[0] == 3 && r.w[0] == 1.0f) << r.w[0];
}

TEST(route_softmax_ties_go_to_the_lower_id) {
  bs::RouterSpec s;
  s.n_experts = 4;
  s.top_k = 2;
  const Routed r = run(s, {1.0f, 2.0f, 2.0f, 2.0f});
  EXPECT(r.ids == (std::vector<int32_t>{1, 2}));
  EXPECT(r.w[0] == 0.5f && r.w[1] == 0.5f);
}

TEST(route_sigmoid_group_masks_groups_by_top2_sum) {
  // 8 experts in 4 groups of 2; s = [.9 .1 | .6 .5 | .8 .7 | .2 .3]: group sums 1.0, 1.1,
  // 1.5, 0.5 → keep groups 2 and 1, so expert 0 (the best single score) is masked out.
  bs::RouterSpec s = sigmoid_spec(8, 2, 4, 2, 2.5f);
  std::vector<float> l;
  for (double p : {0.9, 0.1, 0.6, 0.5, 0.8, 0.7, 0.2, 0.3}) l.push_back(logit(p));
  Routed r = run(s, l);
  EXPECT(r.ids == (std::vector<int32_t>{4, 5})) << r.ids[0] << "," << r.ids[1];
  EXPECT(std::fabs(r.w[0] - 0.8f / 1.5f * 2.5f) < 1e-5f && std::fabs(r.w[1] - 0.7f / 1.5f * 2.5f) < 1e-5f)
      << r.w[0] << " " << r.w[1];

  // The correction bias steers selection only: +0.5 on expert 3 lifts group 1 and expert 3,
  // but its weight is its raw sigmoid 0.5.
  s.correction_bias[3] = 0.5f;
  r = run(s, l);
  EXPECT(r.ids == (std::vector<int32_t>{3, 4})) << r.ids[0] << "," << r.ids[1];
  EXPECT(std::fabs(r.w[0] - 0.5f / 1.3f * 2.5f) < 1e-5f && std::fabs(r.w[1] - 0.8f / 1.3f * 2.5f) < 1e-5f);

  // Without renormalisation the weights are raw s × routed_scaling_factor.
  s.norm_topk_prob = false;
  r = run(s, l);
  EXPECT(std::fabs(r.w[0] - 0.5f * 2.5f) < 1e-5f && std::fabs(r.w[1] - 0.8f * 2.5f) < 1e-5f);

  // n_group = 1: no masking, expert 0 wins.
  r = run(sigmoid_spec(8, 2, 1, 1, 1.0f), l);
  EXPECT(r.ids == (std::vector<int32_t>{0, 4}));
}

TEST(route_sigmoid_group_score_is_top2_not_max) {
  // Groups of 3: [.9 .1 .1] sums its top two to 1.0, [.6 .6 .5] to 1.2, so group 1 wins
  // although group 0 holds the maximum; the tie 0.6/0.6 goes to the lower id.
  const bs::RouterSpec s = sigmoid_spec(6, 2, 2, 1, 1.0f);
  std::vector<float> l;
  for (double p : {0.9, 0.1, 0.1, 0.6, 0.6, 0.5}) l.push_back(logit(p));
  const Routed r = run(s, l);
  EXPECT(r.ids == (std::vector<int32_t>{3, 4}));
  EXPECT(std::fabs(r.w[0] - 0.5f) < 1e-6f && std::fabs(r.w[1] - 0.5f) < 1e-6f);
}

TEST(route_sigmoid_masked_groups_score_zero_like_mlx_lm) {
  // With negative biased scores the masked group's 0.0 outranks the kept group: mlx-lm's
  // behaviour, which this engine follows. k = 1 is not renormalised (mlx-lm: top_k > 1).
  bs::RouterSpec s = sigmoid_spec(4, 1, 2, 1, 1.0f);
  s.correction_bias.assign(4, -1.0f);
  std::vector<float> l;
  for (double p : {0.5, 0.5, 0.4, 0.4}) l.push_back(logit(p));
  const Routed r = run(s, l);
  EXPECT(r.ids[0] == 2) << r.ids[0];
  EXPECT(std::fabs(r.w[0] - 0.4f) < 1e-6f) << r.w[0];
  EXPECT(s.max_k() == 2);
}
