// The integer decode path of the fast quantised kernels: a token, or a run of a few (shorter
// than the integer GEMM's minimum), against 4- or 8-bit codes, each chunk's exact Σ q·Q from
// byte dot products (the activation bytes: fast-activations.h).
#pragma once
#include <algorithm>
#include <type_traits>

#include "cpu/fast-activations.h"
#include "cpu/fast-codes.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastIntDot {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  static constexpr int64_t kPrefetchBytes = 4096;
  static constexpr int kTokens = 4;  // tokens sharing each row's unpacked codes
  using Codes = FastCodes<V>;
  using Acts = FastActivations<V>;
  using Act = typename Acts::Act;
  using RowView = typename Codes::RowView;
  template <int NR>
  using RowScalesN = typename Codes::template RowScalesN<NR>;

  // R rows (same shape) against T tokens on the integer path: per chunk each row's codes are
  // loaded once for all T tokens and each token's activation bytes once for all R rows, and
  // each (row, token) adds cvt(Σ q·Q) · scale · d (exact integer sums per chunk). The
  // group-bias term Σ_g b_g·Σx_g joins the same accumulator, so each pair costs one horizontal
  // sum. Every pair runs the same operations in the same order whatever R and T are, so its
  // bits do not depend on how rows and tokens are grouped (or on threads).
  template <int R, int T, bool BCAST, int BITS, int BYTES>
  static inline __attribute__((always_inline)) void qdot_int(const RowView& shape, const uint8_t* const* rows,
                                                             const float* s, const float* b, const int8_t* const* xq,
                                                             const float* const* dl, const float* const* gs, int64_t G,
                                                             const uint8_t* pf_end, int64_t pf, float* out,
                                                             int64_t ldo) {
    // Row i's scales and biases are at s + i·G and b + i·G; the shape (and so each chunk's
    // group index) is the same for every row. Token t's result for row i goes to out[t·ldo + i].
    const int64_t nch = shape.nch, full = shape.tail_bytes ? nch - 1 : nch;
    const int gshift = shape.gshift, lpg = shape.lanes_per_group, tail = shape.tail_bytes;
    // Chunk and unit sizes as constants, chunk offsets unsigned: shifts, not signed divisions,
    // in the per-chunk address arithmetic.
    constexpr uint64_t C = 32 / BITS * L, U = Acts::unit_elems(BITS);  // U: activation bytes per plane of a unit
    F acc[R][T];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[i][t] = V::zero();
    }
    auto step = [&](int64_t c, bool part) __attribute__((always_inline)) {
      constexpr int N = BITS == 4 ? 2 * BYTES : BYTES;
      // Chunk c's bytes: 4-bit, the whole unit c; 8-bit, its place in unit c·C / U.
      const uint64_t e = static_cast<uint64_t>(c) * C, at = e / U * BYTES * U + e % U;
      const uint64_t g = e >> gshift;
      I w[R];
      F sc[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        w[i] = part ? V::load_codes_part(rows[i] + c * 4 * L, tail) : V::load_codes(rows[i] + c * 4 * L);
        sc[i] = BCAST ? V::set1(s[i * G + g]) : V::expand(s + i * G + g, lpg);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        I x[N];
        Acts::template load_act_bytes<N>(xq[t] + at, BITS == 4 ? 4 * L : U, x);
        const F d = V::load(dl[t] + c * L);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          I sum;
          if constexpr (BITS == 4) {
            sum = V::template isum<BYTES>(w[i], x);
          } else {
            sum = V::template isum8<BYTES>(w[i], x);
          }
          acc[i][t] = V::fma(V::cvt(sum), V::mul(sc[i], d), acc[i][t]);
        }
      }
    };
    // Codes stream from DRAM once per token: fetch each cache line pf bytes ahead of the
    // hardware prefetcher, which restarts at every expert's block, but not past the rows this
    // call owns (the next block may be another thread's or an unused expert's). A chunk is 4L
    // bytes: one line per 64 / 4L chunks (a line holds several chunks at L = 8).
    constexpr int64_t CPL = 64 / (4 * L) > 0 ? 64 / (4 * L) : 1;
    int64_t c = 0;
    for (; c + CPL <= full; c += CPL) {
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = rows[i] + c * 4 * L + pf;
        if (p < pf_end) __builtin_prefetch(p, 0, V::kStreamLocality);
      }
#pragma GCC unroll 4
      for (int64_t k = 0; k < CPL; ++k) step(c + k, false);
    }
    for (; c < nch; ++c) step(c, c >= full);
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        // gs is zero past G (to a multiple of L): what b holds there (the next row's) adds 0.
        F bacc = V::zero();
        for (int64_t k = 0; k < G; k += L) bacc = V::fma(V::load(b + i * G + k), V::load(gs[t] + k), bacc);
        out[t * ldo + i] = V::hsum(V::add(acc[i][t], bacc));
      }
    }
  }

  // Prefetches the cache lines of [p, min(end, p + bytes)).
  static void warm_up(const uint8_t* p, const uint8_t* end, int64_t bytes) {
    const uint8_t* e = std::min(end, p + bytes);
    for (const uint8_t* q = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}); q < e;
         q += 64) {
      __builtin_prefetch(q, 0, V::kStreamLocality);
    }
  }

  // The integer path (one token, or a short run, per matrix): rows in fours sharing the
  // activation loads, tokens in fours sharing the rows' unpacked codes.
  static void qrows_int(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                        int64_t nt, float* y, int64_t ldy) {
    if (w.bits == 8) {  // up to V::kCodes8Bytes bytes (use_ints)
      if constexpr (V::kCodes8Bytes >= 2) {
        if (a.bytes == 2) return qrows_int_n<8, 2>(w, mat, r0, r1, a, t0, nt, y, ldy);
      }
      return qrows_int_n<8, 1>(w, mat, r0, r1, a, t0, nt, y, ldy);
    }
    if (a.bytes == 3) {
      qrows_int_n<4, 3>(w, mat, r0, r1, a, t0, nt, y, ldy);
    } else if (a.bytes == 1) {
      qrows_int_n<4, 1>(w, mat, r0, r1, a, t0, nt, y, ldy);
    } else {
      qrows_int_n<4, 2>(w, mat, r0, r1, a, t0, nt, y, ldy);
    }
  }

  template <int BITS, int BYTES>
  static void qrows_int_n(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                          int64_t nt, float* y, int64_t ldy) {
    constexpr int R = 4;
    const int64_t G = w.groups_per_row(), C = Codes::chunk_elems(w.bits), nch = Codes::n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * w.bits / 8) : 0;
    const bool bcast = w.group >= C;
    const int gshift = __builtin_ctz(static_cast<unsigned>(w.group)), lpg = static_cast<int>(w.group * BITS / 32);
    const int64_t qb = a.q_stride;
    const uint8_t* pf_end = w.w_row(mat, r1);
    // At least one group of rows ahead: a shorter distance lands in rows this pass is reading.
    const int64_t pf = std::max<int64_t>(kPrefetchBytes, R * static_cast<int64_t>(w.row_bytes()));
    // The loop below prefetches pf bytes ahead, so the range's first pf bytes (and its first
    // scales) would arrive one demand miss after another: ask for all of them at once.
    warm_up(w.w_row(mat, r0), pf_end, pf);
    const size_t sat = Codes::scale_offset(w, mat, r0), send = Codes::scale_offset(w, mat, r1);
    warm_up(w.scales + sat, w.scales + send, 1024);
    warm_up(w.biases + sat, w.biases + send, 1024);
    RowScalesN<R> sc(w);
    const RowView shape{nullptr, nch, tail, nullptr, C, gshift, lpg};
    // Tokens in fours (a run of a prefill chunk's tokens on one expert): each row block's
    // codes are unpacked once for up to four tokens, so a short run needs no GEMM tile.
    for (int64_t tok = t0; tok < t0 + nt; tok += kTokens) {
      const int nt4 = static_cast<int>(std::min<int64_t>(kTokens, t0 + nt - tok));
      const int8_t* xq[kTokens];
      const float *dl[kTokens], *gs[kTokens];
      for (int t = 0; t < nt4; ++t) {
        xq[t] = a.xq + (tok + t) * qb;
        dl[t] = a.dl + (tok + t) * a.xs_stride;
        gs[t] = a.gsum + (tok + t) * a.g_stride;
      }
      for (int64_t r = r0; r < r1; r += R) {
        const int n = static_cast<int>(std::min<int64_t>(R, r1 - r));
        const uint8_t* rows[R];
        sc.load(mat, r, n);
        for (int i = 0; i < n; ++i) rows[i] = w.w_row(mat, r + i);
        float* out = y + tok * ldy + r;
        auto run = [&](auto rt, auto tt, const uint8_t* const* rs, const float* si, const float* bi, float* o) {
          constexpr int RR = decltype(rt)::value, TT = decltype(tt)::value;
          bcast ? qdot_int<RR, TT, true, BITS, BYTES>(shape, rs, si, bi, xq, dl, gs, G, pf_end, pf, o, ldy)
                : qdot_int<RR, TT, false, BITS, BYTES>(shape, rs, si, bi, xq, dl, gs, G, pf_end, pf, o, ldy);
        };
        auto tokens = [&](auto rt, const uint8_t* const* rs, const float* si, const float* bi, float* o) {
          switch (nt4) {
            case 1: run(rt, std::integral_constant<int, 1>{}, rs, si, bi, o); break;
            case 2: run(rt, std::integral_constant<int, 2>{}, rs, si, bi, o); break;
            case 3: run(rt, std::integral_constant<int, 3>{}, rs, si, bi, o); break;
            default: run(rt, std::integral_constant<int, kTokens>{}, rs, si, bi, o); break;
          }
        };
        if (n == R) {
          tokens(std::integral_constant<int, R>{}, rows, sc.s, sc.b, out);
        } else {
          for (int i = 0; i < n; ++i)
            tokens(std::integral_constant<int, 1>{}, rows + i, sc.s + i * G, sc.b + i * G, out + i);
        }
        // Activations split_outliers took out: scale · code · x per row (the bias term's group
        // sums already hold them).
        for (int t = 0; t < nt4; ++t) {
          for (int32_t o = 0; a.on && o < a.on[tok + t]; ++o) {
            const int64_t e = a.oi[(tok + t) * a.o_stride + o];
            const float v = a.ov[(tok + t) * a.o_stride + o];
            for (int i = 0; i < n; ++i) {
              const int code = BITS == 8 ? rows[i][e] : (rows[i][e >> 1] >> ((e & 1) * 4)) & 15;
              out[t * ldy + i] += sc.s[i * G + (e >> gshift)] * static_cast<float>(code) * v;
            }
          }
        }
      }
    }
  }
};

}  // namespace
}  // namespace bs
