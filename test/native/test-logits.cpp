// The sampler's passes over logits. argmax: hand cases for ties, NaN, -inf and tails, then
// seeded random vectors (with planted ties and NaNs) against the plain first-maximum loop.
// exp_shifted: hand values and the sum.
#include <cmath>
#include <vector>

#include "common/logits.h"
#include "harness.h"

namespace {

int64_t first_max(const std::vector<float>& x) {
  int64_t best = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] > -INFINITY && (best < 0 || x[i] > x[best])) best = static_cast<int64_t>(i);
  }
  return best;
}

int64_t am(const std::vector<float>& x) { return bs::argmax_f32(x.data(), static_cast<int64_t>(x.size())); }

}  // namespace

TEST(argmax_hand_cases) {
  const float nan = std::nanf(""), inf = INFINITY;
  EXPECT(am({}) == -1);
  EXPECT(am({-inf, -inf}) == -1);
  EXPECT(am({nan, nan, -inf}) == -1);
  EXPECT(am({nan, 1.0f, 3.0f, 3.0f}) == 2) << "NaN first, tie: lowest index";
  EXPECT(am({-5.0f}) == 0);
  std::vector<float> x(37, 0.5f);
  x[36] = 0.75f;  // in the tail past two blocks of 16
  EXPECT(am(x) == 36) << am(x);
  x[20] = inf;
  x[33] = inf;
  EXPECT(am(x) == 20) << am(x);
  x[3] = nan;
  EXPECT(am(x) == 20) << am(x);
}

TEST(argmax_matches_the_first_maximum_on_random_vectors) {
  bt::Rng r(4242);
  for (int c = 0; c < 500; ++c) {
    const size_t n = r.below(300);
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(r.below(40)) - 20.0f;  // few values: many ties
    for (int k = 0; k < 3 && n > 0; ++k) x[r.below(n)] = std::nanf("");
    if (c % 7 == 0 && n > 0) x[r.below(n)] = -INFINITY;
    EXPECT(am(x) == first_max(x)) << "seed 4242 case " << c << " n " << n << ": " << am(x) << " vs " << first_max(x);
  }
}

TEST(exp_shifted_hand_values) {
  const float x[] = {2.0f, 1.0f, -INFINITY, std::nanf(""), 0.5f};
  double out[5];
  const double sum = bs::exp_shifted(x, 5, 2.0, 0.5, out);
  const double want[] = {1.0, std::exp(-2.0), 0.0, 0.0, std::exp(-3.0)};
  for (int i = 0; i < 5; ++i) EXPECT(out[i] == want[i]) << "out[" << i << "] " << out[i] << " want " << want[i];
  EXPECT(sum == ((1.0 + std::exp(-2.0)) + 0.0) + 0.0 + std::exp(-3.0)) << sum;
}
