// The fast elementwise ops and norms: rmsnorm, rope, silu_mul, add.
#pragma once
#include <cmath>

#include "cpu/fast-common.h"
#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastElementwise {
  using F = typename V::F;
  static constexpr int L = V::L;
  using Vec = FastVector<V>;

  static void rmsnorm(const ExecCtx&, const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* xr = x + r * d;
      const double ss = Vec::dot(xr, xr, d);
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
      const F iv = V::set1(inv);
      float* yr = y + r * d;
      int64_t i = 0;
      for (; i + L <= d; i += L) V::store(yr + i, V::mul(V::mul(V::load(xr + i), iv), V::load(w + i)));
      for (; i < d; ++i) yr[i] = xr[i] * inv * w[i];
    }
  }

  static void rope(const ExecCtx&, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) {
    const int half = p.rot_dims / 2;
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* cs = fast::rope_table(positions[t], p);
      const float* sn = cs + half;
      for (int h = 0; h < p.n_heads; ++h) {
        float* v = x + (t * p.n_heads + h) * p.head_dim;
        int i = 0;
        for (; i + L <= half; i += L) {
          const F a = V::load(v + i), b = V::load(v + i + half), c = V::load(cs + i), s = V::load(sn + i);
          V::store(v + i, V::fma(a, c, V::mul(V::neg(b), s)));
          V::store(v + i + half, V::fma(b, c, V::mul(a, s)));
        }
        for (; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cs[i] - b * sn[i];
          v[i + half] = b * cs[i] + a * sn[i];
        }
      }
    }
  }

  static void silu_mul(const ExecCtx&, const float* gate, const float* up, int64_t n, float* out) {
    int64_t i = 0;
    const F one = V::set1(1.0f);
    for (; i + L <= n; i += L) {
      const F g = V::load(gate + i);
      V::store(out + i, V::mul(V::div(g, V::add(one, Vec::exp(V::neg(g)))), V::load(up + i)));
    }
    for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }

  static void add(const ExecCtx&, const float* x, float s, int64_t n, float* y) {
    int64_t i = 0;
    const F sv = V::set1(s);
    for (; i + L <= n; i += L) V::store(y + i, V::fma(sv, V::load(x + i), V::load(y + i)));
    for (; i < n; ++i) y[i] += s * x[i];
  }
};

}  // namespace
}  // namespace bs
