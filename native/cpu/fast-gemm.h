// Prefill of the fast quantised kernels: many tokens against one block of rows dequantised
// once, then a register-tiled GEMM.
#pragma once
#include <algorithm>

#include "cpu/fast-activations.h"
#include "cpu/fast-codes.h"
#include "cpu/fast-common.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastGemm {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  using Codes = FastCodes<V>;
  using Act = typename FastActivations<V>::Act;
  using RowView = typename Codes::RowView;
  using RowScales = typename Codes::RowScales;

  // Runs of many tokens dequantise a block of rows once into float (in the activation's
  // phase order, phase p scaled by 2^(bits·p) like the codes, so w'·x' = w·x exactly) and
  // multiply it with the tokens in register tiles of kGT tokens × kGR rows: 1/8 FMA per MAC
  // once the dequantisation is spread over the run.
  static constexpr int kGT = V::kGemmT, kGR = V::kGemmR;
  static constexpr int kGemmRows = 3 * kGR;  // rows dequantised per block
  static constexpr int64_t kGemmMinTokens = 4;

  template <int BITS>
  static void dequant_scaled(const WeightMatrix& w, int64_t mat, int64_t r, const float* s, const float* b,
                             float* out) {
    constexpr int PH = 32 / BITS;
    const int64_t C = Codes::chunk_elems(BITS), nch = Codes::n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * BITS / 8) : 0;
    const RowView rs{w.w_row(mat, r),
                     nch,
                     tail,
                     s,
                     C,
                     __builtin_ctz(static_cast<unsigned>(w.group)),
                     static_cast<int>(w.group / PH)};
    RowView rbias = rs;
    rbias.s = b;
    const bool bcast = w.group >= C;
    for (int64_t c = 0; c < nch; ++c) {
      const I q = Codes::load_chunk(rs, c);
      const F sc = bcast ? Codes::template lane_scales<true>(rs, c) : Codes::template lane_scales<false>(rs, c);
      const F bi = bcast ? Codes::template lane_scales<true>(rbias, c) : Codes::template lane_scales<false>(rbias, c);
      float* o = out + c * C;
      auto step = [&](auto pc) {
        constexpr int P = decltype(pc)::value;
        const F bp = P == PH - 1 ? bi : V::mul(bi, V::set1(static_cast<float>(1u << (BITS * P))));
        V::store(o + P * L, V::fma(Codes::template phase<BITS, P>(q), sc, bp));
      };
      for_phases<PH>(step);
    }
  }

  // out[t·R + r] = Σ_k x[t][k] · wr[r][k] over K (a multiple of L).
  template <int T, int R>
  static void gemm_tile(const float* const* x, const float* const* wr, int64_t K, float* out) {
    F acc[T][R];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) acc[t][r] = V::zero();
    }
    for (int64_t k = 0; k < K; k += L) {
      F xv[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) xv[t] = V::load(x[t] + k);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const F wv = V::load(wr[r] + k);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[t][r] = V::fma(xv[t], wv, acc[t][r]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) out[t * R + r] = V::hsum(acc[t][r]);
    }
  }

  template <int T>
  static void gemm_rows_of(int R, const float* const* x, const float* const* wr, int64_t K, float* out) {
    static_assert(kGR <= 6);
    switch (R) {
      case 1: gemm_tile<T, 1>(x, wr, K, out); break;
      case 2:
        if constexpr (kGR >= 2) gemm_tile<T, 2>(x, wr, K, out);
        break;
      case 3:
        if constexpr (kGR >= 3) gemm_tile<T, 3>(x, wr, K, out);
        break;
      case 4:
        if constexpr (kGR >= 4) gemm_tile<T, 4>(x, wr, K, out);
        break;
      case 5:
        if constexpr (kGR >= 5) gemm_tile<T, 5>(x, wr, K, out);
        break;
      default:
        if constexpr (kGR >= 6) gemm_tile<T, 6>(x, wr, K, out);
        break;
    }
  }

  static void gemm_tile_any(int T, int R, const float* const* x, const float* const* wr, int64_t K, float* out) {
    static_assert(kGT <= 4);
    switch (T) {
      case 1: gemm_rows_of<1>(R, x, wr, K, out); break;
      case 2:
        if constexpr (kGT >= 2) gemm_rows_of<2>(R, x, wr, K, out);
        break;
      case 3:
        if constexpr (kGT >= 3) gemm_rows_of<3>(R, x, wr, K, out);
        break;
      default:
        if constexpr (kGT >= 4) gemm_rows_of<4>(R, x, wr, K, out);
        break;
    }
  }

  static void qrows_gemm(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                         int64_t nt, float* y, int64_t ldy) {
    const int64_t K = a.xs_stride;
    float* wbuf = fast::scratch_of<float>(fast::Slot::Gemm, static_cast<size_t>(kGemmRows * K));
    RowScales sc(w);
    for (int64_t rb = r0; rb < r1; rb += kGemmRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, r1 - rb));
      for (int i = 0; i < nr; ++i) {
        sc.load(mat, rb + i);
        if (w.bits == 4) {
          dequant_scaled<4>(w, mat, rb + i, sc.s, sc.b, wbuf + i * K);
        } else {
          dequant_scaled<8>(w, mat, rb + i, sc.s, sc.b, wbuf + i * K);
        }
      }
      for (int64_t tt = 0; tt < nt; tt += kGT) {
        const int T = static_cast<int>(std::min<int64_t>(kGT, nt - tt));
        const float* xs[kGT];
        for (int t = 0; t < T; ++t) xs[t] = a.xs + (t0 + tt + t) * a.xs_stride;
        for (int rr = 0; rr < nr; rr += kGR) {
          const int R = std::min(kGR, nr - rr);
          const float* wr[kGR];
          for (int r = 0; r < R; ++r) wr[r] = wbuf + (rr + r) * K;
          float out[kGT * kGR];
          gemm_tile_any(T, R, xs, wr, K, out);
          for (int t = 0; t < T; ++t) {
            for (int r = 0; r < R; ++r) y[(t0 + tt + t) * ldy + rb + rr + r] = out[t * R + r];
          }
        }
      }
    }
  }
};

}  // namespace
}  // namespace bs
