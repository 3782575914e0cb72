// The fast matmul of plain F16/BF16/F32 weights (dense_matmul): rows in blocks against tiles
// of tokens, weights widened to float in registers.
#pragma once
#include <algorithm>

#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastDense {
  using F = typename V::F;
  static constexpr int L = V::L;
  using Vec = FastVector<V>;

  template <int T>
  static void ddotT(const uint8_t* row, DType dt, int64_t cols, const float* const* x, float* out) {
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero();
    int64_t c = 0;
    for (; c + L <= cols; c += L) {
      const F wv = dt == DType::F32    ? V::load(reinterpret_cast<const float*>(row) + c)
                   : dt == DType::BF16 ? V::load_bf16(row + 2 * c)
                                       : V::load_f16(row + 2 * c);
      for (int t = 0; t < T; ++t) acc[t] = V::fma(wv, V::load(x[t] + c), acc[t]);
    }
    for (int t = 0; t < T; ++t) {
      out[t] = V::hsum(acc[t]);
      for (int64_t i = c; i < cols; ++i) out[t] += load_float(row, dt, static_cast<size_t>(i)) * x[t][i];
    }
  }

  static void dense_matmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n,
                           float* y) {
    ctx.parallel_for(
        w.rows,
        [&](int64_t r0, int64_t r1) {
          for (int64_t rb = r0; rb < r1; rb += Vec::kRowBlock) {
            const int64_t re = std::min(r1, rb + Vec::kRowBlock);
            for (int64_t tt = 0; tt < n; tt += Vec::kTile) {
              const int T = static_cast<int>(std::min<int64_t>(Vec::kTile, n - tt));
              const float* xs[Vec::kTile];
              for (int t = 0; t < T; ++t) xs[t] = x + (tt + t) * w.cols;
              for (int64_t r = rb; r < re; ++r) {
                float out[Vec::kTile];
                const uint8_t* row = w.w_row(mat, r);
                switch (T) {
                  case 1: ddotT<1>(row, w.dtype, w.cols, xs, out); break;
                  case 2: ddotT<2>(row, w.dtype, w.cols, xs, out); break;
                  case 3: ddotT<3>(row, w.dtype, w.cols, xs, out); break;
                  default: ddotT<4>(row, w.dtype, w.cols, xs, out); break;
                }
                for (int t = 0; t < T; ++t) y[(tt + t) * w.rows + r] = out[t];
              }
            }
          }
        },
        Vec::grain_for(ctx, w.rows, static_cast<int64_t>(w.row_bytes()), n));
  }
};

}  // namespace
}  // namespace bs
