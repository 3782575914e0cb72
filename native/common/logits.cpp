#include "common/logits.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

namespace bs {

namespace {

// Four floats in a register (SSE2 / NEON baseline): four of them hide the max latency.
typedef float F4 __attribute__((vector_size(16)));
typedef int I4 __attribute__((vector_size(16)));

F4 load4(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

int64_t argmax_f32(const float* x, int64_t n) {
  // Pass 1: the maximum (`v > m ? v : m`: NaN never wins); pass 2: its first index, 16 floats
  // per equality test.
  constexpr int64_t W = 16;
  const F4 ninf = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  F4 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;  // named: an array would live in memory at -O2
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const F4 a = load4(x + i), b = load4(x + i + 4), c = load4(x + i + 8), d = load4(x + i + 12);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
    m2 = c > m2 ? c : m2;
    m3 = d > m3 ? d : m3;
  }
  float m = -INFINITY;
  for (const F4& v : {m0, m1, m2, m3}) {
    for (int k = 0; k < 4; ++k) m = v[k] > m ? v[k] : m;
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  if (!(m > -INFINITY)) return -1;
  const F4 mv = {m, m, m, m};
  for (i = 0; i + W <= n; i += W) {
    I4 hit = (load4(x + i) == mv) | (load4(x + i + 4) == mv) | (load4(x + i + 8) == mv) | (load4(x + i + 12) == mv);
    if (hit[0] | hit[1] | hit[2] | hit[3]) break;
  }
  // Bounded: a SharedArrayBuffer's values can change between the passes.
  while (i < n && x[i] != m) ++i;
  return i < n ? i : -1;
}

double exp_shifted(const float* x, int64_t n, double max, double temperature, double* out) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = (static_cast<double>(x[i]) - max) / temperature;
    out[i] = z > -INFINITY ? std::exp(z) : 0.0;  // NaN compares false
    sum += out[i];
  }
  return sum;
}

}  // namespace bs
