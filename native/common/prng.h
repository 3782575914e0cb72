// splitmix64: a small seeded generator for engine-side randomness (head initialisation,
// minibatch order), identical on every platform (std distributions are not).
#pragma once
#include <cmath>
#include <cstdint>

namespace bs {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return next() % n; }
  double normal() {
    double u = 0;
    while (u == 0) u = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * uniform());
  }

 private:
  uint64_t s_;
};

}  // namespace bs
