// Prefill on the integer path: runs of tokens of two- or one-byte activations (the decode
// layout of fast-activations.h) against 4- or 8-bit codes, L rows at a time. The rows' code
// words are decoded once into a tile where word j of the L rows is one vector, its low nibbles
// and high nibbles apart (4-bit: a block's even and odd elements, in the order of the
// activation bytes; 8-bit: a code's two halves), or as they are (8-bit, V::kRawTile8: VNNI
// takes a code byte whole); so each vector lane is one row: byte dot products against a token's
// broadcast activation dword (V::block_isum, block_isum8) give every row's exact Σ q·Q of a
// block of 32 at once, the scale s·d applies per block to L rows, and no horizontal sum is
// needed. Sets with V::kIntGemm use it for up to V::kIntGemmBytes bytes (cpu-avx512 on
// vpdpbusd, cpu-neon-dotprod on sdot/udot and cpu-neon-i8mm on 2×2-tile int8 matrix multiplies:
// two; cpu-avx2 on vpmaddubsw: one, activation_bits 8).
#pragma once
#include <algorithm>
#include <cstring>

#include "cpu/fast-activations.h"
#include "cpu/fast-codes.h"
#include "cpu/fast-common.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastIntGemm {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  using Codes = FastCodes<V>;
  using Acts = FastActivations<V>;
  using Act = typename Acts::Act;
  static constexpr int kT = 4;                                    // tokens per register tile
  static constexpr int64_t kMinTokens = Acts::kIntGemmMinTokens;  // shorter runs: the decode path (use_ints)
  static constexpr int64_t kAhead = 3;                            // tiles of rows prefetched ahead
  // uint32 per tile word: [lo, hi] × L rows, or L rows of whole code words.
  template <bool SPLIT>
  static constexpr int64_t kWordU32 = SPLIT ? 2 * L : L;

  // Rows [r0, r0 + nr) of W[mat] (nr ≤ L) into tile[word][lo, hi][row][4 bytes] (SPLIT) or
  // tile[word][row][4 bytes] (rows past nr and words past the row are zero) and their group
  // scales and biases into st/bt[group][row] (rm: 2·L·G floats of scratch for the rows'
  // scales and biases as read, [row][group]).
  template <bool SPLIT>
  static void decode_tile(const WeightMatrix& w, int64_t mat, int64_t r0, int nr, int64_t words, uint32_t* tile,
                          float* st, float* bt, float* rm) {
    constexpr int64_t WU = kWordU32<SPLIT>;
    const int64_t G = w.groups_per_row(), row_words = w.cols * w.bits / 32;
    const uint8_t* rows[L];
    for (int i = 0; i < L; ++i) rows[i] = w.w_row(mat, r0 + std::min(i, nr - 1));
    // Word by word, rows innermost: the stores run in order (rows past nr repeat the last row
    // and are zeroed, so the inner loop has no branch).
    int64_t j = 0;
    if constexpr (requires { V::template tile_words<SPLIT>(rows, j, nr, tile); }) {  // L words of L rows per step
      for (; j + L <= row_words; j += L) V::template tile_words<SPLIT>(rows, j, nr, tile + WU * j);
    }
    for (; j < row_words; ++j) {
      uint32_t* o = tile + WU * j;
      for (int i = 0; i < L; ++i) {
        uint32_t v;
        std::memcpy(&v, rows[i] + 4 * j, 4);
        o[i] = SPLIT ? v & 0x0F0F0F0Fu : v;
        if constexpr (SPLIT) o[L + i] = (v >> 4) & 0x0F0F0F0Fu;
      }
      for (int i = nr; i < L; ++i) o[i] = o[WU - L + i] = 0;
    }
    std::memset(tile + WU * row_words, 0, static_cast<size_t>((words - row_words) * WU * 4));
    // The rows' scales and biases are contiguous: one conversion each into [row][group], then
    // transposed to [group][row] (lanes past nr zero).
    const size_t at = Codes::scale_offset(w, mat, r0);
    FastVector<V>::to_float(w.scales + at, w.dtype, nr * G, rm);
    FastVector<V>::to_float(w.biases + at, w.dtype, nr * G, rm + L * G);
    for (int64_t g = 0; g < G; ++g) {
      for (int i = 0; i < L; ++i) {
        st[g * L + i] = i < nr ? rm[i * G + g] : 0.0f;
        bt[g * L + i] = i < nr ? rm[(L + i) * G + g] : 0.0f;
      }
    }
  }

  // acc[t] (L rows) for T tokens: Σ over blocks of cvt(Σ q·Q) · s_g · d_t, then the bias term.
  template <int BITS, int BYTES, int T>
  static void tile_tokens(const WeightMatrix& w, const uint32_t* tile, const float* st, const float* bt, const Act& a,
                          int64_t tok, float* out) {
    const int64_t nch = Codes::n_chunks(w), G = w.groups_per_row(), qb = a.q_stride;
    const int gshift = __builtin_ctz(static_cast<unsigned>(w.group));
    F acc[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t] = V::zero();
    if constexpr (BITS == 8) {  // blocks of 32 (8 words); cols is a multiple of 32 (use_ints)
      constexpr int64_t U = Acts::unit_elems(8), WU = kWordU32<!V::kRawTile8>;
      for (int64_t b = 0; b < w.cols / 32; ++b) {
        const int64_t e0 = 32 * b, off = e0 / U * BYTES * U + e0 % U;
        const int8_t* x[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) x[t] = a.xq + (tok + t) * qb + off;
        I s[T];
        V::template block_isum8<BYTES, T>(reinterpret_cast<const uint8_t*>(tile + WU * 8 * b), x, U, s);
        const F sc = V::load(st + (e0 >> gshift) * L);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const float d = a.dl[(tok + t) * a.xs_stride + 8 * b];  // lane e0 / 4 of the token's
          acc[t] = V::fma(V::cvt(s[t]), V::mul(sc, V::set1(d)), acc[t]);
        }
      }
    } else {
      constexpr int64_t QB = BYTES * 8 * L;  // 4-bit activation bytes per chunk
      for (int64_t c = 0; c < nch; ++c) {
        for (int k = 0; k < L / 4; ++k) {
          const int64_t e0 = c * 8 * L + 32 * k;
          if (e0 >= w.cols) break;
          const int8_t* x[T];
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) x[t] = a.xq + (tok + t) * qb + c * QB + 16 * k;
          I s[T];
          V::template block_isum<BYTES, T>(reinterpret_cast<const uint8_t*>(tile + 2 * L * (c * L + 4 * k)), x, s);
          const F sc = V::load(st + (e0 >> gshift) * L);
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            const float d = a.dl[(tok + t) * a.xs_stride + c * L + 4 * k];
            acc[t] = V::fma(V::cvt(s[t]), V::mul(sc, V::set1(d)), acc[t]);
          }
        }
      }
    }
    for (int64_t g = 0; g < G; ++g) {
      const F b = V::load(bt + g * L);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[t] = V::fma(b, V::set1(a.gsum[(tok + t) * a.g_stride + g]), acc[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) V::store(out + t * L, acc[t]);
  }

  template <int BITS, int BYTES>
  static void tokens_any(int T, const WeightMatrix& w, const uint32_t* tile, const float* st, const float* bt,
                         const Act& a, int64_t tok, float* out) {
    switch (T) {
      case 1: tile_tokens<BITS, BYTES, 1>(w, tile, st, bt, a, tok, out); break;
      case 2: tile_tokens<BITS, BYTES, 2>(w, tile, st, bt, a, tok, out); break;
      case 3: tile_tokens<BITS, BYTES, 3>(w, tile, st, bt, a, tok, out); break;
      default: tile_tokens<BITS, BYTES, 4>(w, tile, st, bt, a, tok, out); break;
    }
  }

  // Rows [r0, r1) of W[mat] for tokens [t0, t0 + nt) (two- or one-byte activations, 4- or 8-bit codes).
  static void qrows(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0, int64_t nt,
                    float* y, int64_t ldy) {
    const bool b8 = w.bits == 8;
    if constexpr (V::kIntGemmBytes >= 2) {
      if (a.bytes == 2) {
        return b8 ? qrows_n<8, 2>(w, mat, r0, r1, a, t0, nt, y, ldy) : qrows_n<4, 2>(w, mat, r0, r1, a, t0, nt, y, ldy);
      }
    }
    b8 ? qrows_n<8, 1>(w, mat, r0, r1, a, t0, nt, y, ldy) : qrows_n<4, 1>(w, mat, r0, r1, a, t0, nt, y, ldy);
  }

  template <int BITS, int BYTES>
  static void qrows_n(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0, int64_t nt,
                      float* y, int64_t ldy) {
    constexpr bool kSplit = BITS == 4 || !V::kRawTile8;
    const int64_t words = Codes::n_chunks(w) * L, G = w.groups_per_row();
    const int gshift = __builtin_ctz(static_cast<unsigned>(w.group));
    uint32_t* tile = fast::scratch_of<uint32_t>(fast::Slot::Gemm, static_cast<size_t>(words * 2 * L + 4 * G * L));
    float* st = reinterpret_cast<float*>(tile + words * 2 * L);
    float* bt = st + G * L;
    float* rm = bt + G * L;
    // Rows stream from DRAM kAhead tiles ahead of their decode (the first tiles all at once),
    // into L2, not past the call's rows: a run of 16 tokens computes too briefly to hide a
    // whole tile's fetch.
    const uint8_t* pf = w.w_row(mat, r0);  // a matrix's rows are contiguous
    for (int64_t rb = r0; rb < r1; rb += L) {
      const int nr = static_cast<int>(std::min<int64_t>(L, r1 - rb));
      for (const uint8_t* end = w.w_row(mat, std::min(r1, rb + kAhead * L)); pf < end; pf += 64)
        __builtin_prefetch(pf, 0, V::kStreamLocality);
      decode_tile<kSplit>(w, mat, rb, nr, words, tile, st, bt, rm);
      for (int64_t tt = 0; tt < nt; tt += kT) {
        const int T = static_cast<int>(std::min<int64_t>(kT, nt - tt));
        float out[kT * L];
        tokens_any<BITS, BYTES>(T, w, tile, st, bt, a, t0 + tt, out);
        for (int t = 0; t < T; ++t) {
          const int64_t tok = t0 + tt + t;
          // Activations split_outliers took out: scale · code · x per row (the bias term's
          // group sums already hold them), as the decode path adds them.
          for (int32_t o = 0; a.on && o < a.on[tok]; ++o) {
            const int64_t e = a.oi[tok * a.o_stride + o];
            const float v = a.ov[tok * a.o_stride + o];
            for (int i = 0; i < nr; ++i) {
              const uint8_t* row = w.w_row(mat, rb + i);
              const int code = BITS == 8 ? row[e] : (row[e >> 1] >> ((e & 1) * 4)) & 15;
              out[t * L + i] += st[(e >> gshift) * L + i] * static_cast<float>(code) * v;
            }
          }
          // A whole tile's row as one vector store (copy_n of 64 bytes compiles to rep movsq).
          if (nr == L) {
            V::store(y + tok * ldy + rb, V::load(out + t * L));
          } else {
            std::copy_n(out + t * L, nr, y + tok * ldy + rb);
          }
        }
      }
    }
  }
};

}  // namespace
}  // namespace bs
