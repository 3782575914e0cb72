// Vector helpers the fast CPU kernels share, written once over a SIMD traits type V (see
// fast-kernels.h): sums and dot products, F16/BF16 rows to float, e^x, and the row blocking
// of the matmuls.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/backend.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastVector {
  using F = typename V::F;
  static constexpr int L = V::L;
  static constexpr int kTile = 4;      // tokens per register tile
  static constexpr int kRowBlock = 8;  // rows sharing one token tile (kept in L1)

  static float sum(const float* x, int64_t n) {
    F a = V::zero(), b = V::zero();
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      a = V::add(a, V::load(x + i));
      b = V::add(b, V::load(x + i + L));
    }
    for (; i + L <= n; i += L) a = V::add(a, V::load(x + i));
    float s = V::hsum(V::add(a, b));
    for (; i < n; ++i) s += x[i];
    return s;
  }

  static float dot(const float* a, const float* b, int64_t n) {
    F s0 = V::zero(), s1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      s0 = V::fma(V::load(a + i), V::load(b + i), s0);
      s1 = V::fma(V::load(a + i + L), V::load(b + i + L), s1);
    }
    for (; i + L <= n; i += L) s0 = V::fma(V::load(a + i), V::load(b + i), s0);
    float s = V::hsum(V::add(s0, s1));
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
  }

  // n floats of type dt (F32, F16 or BF16) at p into out. The tail goes through a zeroed
  // vector-sized buffer, so short rows of scales (G = 8 for 512 columns) stay vectorised.
  static void to_float(const uint8_t* p, DType dt, int64_t n, float* out) {
    if (dt == DType::F32) {
      std::memcpy(out, p, static_cast<size_t>(n) * 4);
      return;
    }
    const bool bf = dt == DType::BF16;
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store(out + i, bf ? V::load_bf16(p + 2 * i) : V::load_f16(p + 2 * i));
    if (i < n) {
      uint8_t tmp[2 * L] = {};
      float f[L];
      std::memcpy(tmp, p + 2 * i, static_cast<size_t>(n - i) * 2);
      V::store(f, bf ? V::load_bf16(tmp) : V::load_f16(tmp));
      std::memcpy(out + i, f, static_cast<size_t>(n - i) * 4);
    }
  }

  // e^x, |relative error| < 3e-7 on [-87, 88] (clamped outside): the Cephes expf polynomial
  // on x - n·ln2, scaled by 2^n built in the exponent bits.
  static F exp(F x) {
    x = V::min(V::max(x, V::set1(-87.0f)), V::set1(88.0f));
    const F n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
    F r = V::fma(n, V::set1(-0.693359375f), x);
    r = V::fma(n, V::set1(2.12194440e-4f), r);
    F p = V::set1(1.9875691500e-4f);
    p = V::fma(p, r, V::set1(1.3981999507e-3f));
    p = V::fma(p, r, V::set1(8.3334519073e-3f));
    p = V::fma(p, r, V::set1(4.1665795894e-2f));
    p = V::fma(p, r, V::set1(1.6666665459e-1f));
    p = V::fma(p, r, V::set1(5.0000001201e-1f));
    p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
    return V::mul(p, V::pow2i(n));
  }

  // Rows per parallel range: several ranges per thread (the VM's cores are shared, so
  // dynamic hand-out evens out a stalled thread), multiples of the row block.
  static int64_t row_grain(const ExecCtx& ctx, int64_t rows) {
    const int64_t g = rows / (4 * ctx.threads());
    return std::clamp<int64_t>((g + kRowBlock - 1) / kRowBlock * kRowBlock, kRowBlock, 256);
  }

  // Rows per range when a call reads its weights once for at most kTile tokens (decode):
  // each new range restarts the weight stream (a prefetch ramp from DRAM), so ranges are as
  // large as leaves kStreamRanges per thread, up to kStreamRangeBytes. Measured on moe-small
  // decode (2 threads): the LM head's 256-row ranges 3.2 ms, 1,800-row and larger 2.6-2.8.
  static constexpr int kStreamRanges = 2;
  static constexpr int64_t kStreamRangeBytes = int64_t{4} << 20;
  static int64_t stream_grain(const ExecCtx& ctx, int64_t rows, int64_t row_bytes) {
    const int64_t g = std::min((rows + kStreamRanges * ctx.threads() - 1) / (kStreamRanges * ctx.threads()),
                               std::max<int64_t>(1, kStreamRangeBytes / std::max<int64_t>(1, row_bytes)));
    return std::max<int64_t>(kRowBlock, (g + kRowBlock - 1) / kRowBlock * kRowBlock);
  }
  // The grain for n tokens: stream_grain up to kTile tokens, else row_grain.
  static int64_t grain_for(const ExecCtx& ctx, int64_t rows, int64_t row_bytes, int64_t n) {
    return n <= kTile ? stream_grain(ctx, rows, row_bytes) : row_grain(ctx, rows);
  }
};

}  // namespace
}  // namespace bs
