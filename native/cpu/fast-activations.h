// Activations laid out once per call to match the codes (fast-codes.h): floats in the codes'
// phase order, or, on the integer paths, bytes of integers.
//
// 4- and 8-bit codes take an integer path instead when V has one (kIntDot): each block of 32
// activations becomes Q = round(x / d), |Q| < 2^23, split into bytes, and byte dot products
// (maddubs / VNNI / sdot, udot) give Σ q·Q exactly in int32 per chunk; one convert and one FMA
// per chunk follow. 4-bit codes: three bytes Q = Q2·2^16 + Q1·2^8 + Q0 (Q0, Q1 unsigned, Q2
// signed): nibble (u8) × Q2 (s8), and Q1, Q0 (u8) × nibble (s8 — a nibble fits either side).
// 8-bit codes: signed digits, Q = Q1·2^8 + Q0 with both bytes signed (|Q| ≤ 127·257), so a
// code byte (u8) meets every byte on VNNI's u8 × s8, and its nibbles do elsewhere.
// A single int8 activation would err by ~1e-2 of the output, beyond the op test's 1e-4 of
// Σ|w·x|. ExecCtx::activation_bits = 16 (the default) keeps two bytes, |Q| < 2^15, logits
// ~1e-4 of their scale off the reference; a block's few extreme values are taken out and added
// in float (split_outliers), so its others keep their precision. activation_bits = 24: three
// bytes (4-bit codes; 8-bit ones take the float path), a half more dot products, logits ~1e-6
// off; 8: one byte (as a Q8 activation block), half the dot products of 16, ~1e-2 off, no split.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/fast-codes.h"
#include "cpu/fast-common.h"
#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastActivations {
  using I = typename V::I;
  static constexpr int L = V::L;
  using Vec = FastVector<V>;
  using Codes = FastCodes<V>;

  // Laid-out activations of n tokens for one weight format.
  struct Act {
    bool ints = false;                    // integer bytes (xq, dl) instead of floats (xs)
    const float* xs = nullptr;            // [n][nch·C] float layout
    const int8_t* xq = nullptr;           // [n][q_stride]: units of [byte k < bytes][U bytes] (act_pos)
    const float* dl = nullptr;            // [n][nch][L]: the block scale d of each lane's elements
    const float* gsum = nullptr;          // [n][groups]: Σ x over each weight group
    int64_t xs_stride = 0, g_stride = 0;  // xs (or xq bytes and dl lanes) / gsum per token
    int bytes = 2;                        // bytes per activation (ints): activation_bits / 8
    int64_t q_stride = 0;                 // activation bytes per token (ints)
    // Two bytes: per token the count (on[t]) and columns and values (oi, ov: o_stride apart) of
    // activations taken out of their blocks (split_outliers), added back per row in float.
    const int32_t* on = nullptr;
    const int32_t* oi = nullptr;
    const float* ov = nullptr;
    int64_t o_stride = 0;
  };
  // Elements per unit of the integer layout: a 4-bit chunk (8L), or for 8-bit codes a chunk of
  // 4L elements but at least a block of 32 (NEON's 8-bit chunk is half a block).
  static constexpr int64_t unit_elems(int bits) { return bits == 4 ? 8 * L : std::max(4 * L, 32); }
  // Byte k of element e's Q in a token's activation bytes: units of `bytes` planes of U bytes;
  // a 4-bit plane holds the unit's even elements, then its odd ones (the order of the code
  // nibbles w & 15, w >> 4), an 8-bit plane its elements in order.
  static int64_t act_pos(int bits, int bytes, int64_t e, int k) {
    const int64_t U = unit_elems(bits), t = e % U;
    return (e / U * bytes + k) * U + (bits == 4 ? (t & 1) * 4 * L + (t >> 1) : t);
  }
  // N vectors of activation bytes, `stride` bytes apart (4-bit: [byte k][lo, hi] halves of 4L
  // bytes, N = 2·bytes; 8-bit: one per byte, U apart).
  template <int N>
  static void load_act_bytes(const int8_t* q, int64_t stride, I* x) {
#pragma GCC unroll 6
    for (int k = 0; k < N; ++k) x[k] = V::load_codes(reinterpret_cast<const uint8_t*>(q) + stride * k);
  }
  // Scale of the block maximum: |Q| must stay below 2^23 (three bytes, signed top), 2^15 (two) or
  // 2^7 (one), two signed digits at most 127·257. x·(qmax/m) rounds twice in float
  // (≤ qmax·(1 + 2^-23)), so three bytes keep one unit spare.
  static float qmax(int bytes, int bits) {
    return bytes == 3 ? 8388606.0f : bytes == 2 ? (bits == 8 ? 32639.0f : 32767.0f) : 127.0f;
  }

  static void layout_token(const WeightMatrix& w, const float* x, float* xs, float* gsum) {
    const int ph = 32 / w.bits;
    const int64_t C = Codes::chunk_elems(w.bits), nch = Codes::n_chunks(w);
    float mul[8];
    for (int p = 0; p < ph; ++p) mul[p] = p == ph - 1 ? 1.0f : std::ldexp(1.0f, -w.bits * p);
    for (int64_t c = 0; c < nch; ++c) {
      const int64_t base = c * C;
      if (base + C <= w.cols) {
        for (int j = 0; j < L; ++j) {
          const float* src = x + base + ph * j;
          for (int p = 0; p < ph; ++p) xs[base + p * L + j] = src[p] * mul[p];
        }
      } else {
        for (int p = 0; p < ph; ++p) {
          for (int j = 0; j < L; ++j) {
            const int64_t e = base + ph * j + p;
            xs[base + p * L + j] = e < w.cols ? x[e] * mul[p] : 0.0f;
          }
        }
      }
    }
    group_sums(w, x, gsum);
  }

  // Σ x over each weight group, zero-padded to a multiple of L (Act::g_stride).
  static void group_sums(const WeightMatrix& w, const float* x, float* gsum) {
    const int64_t G = w.groups_per_row();
    for (int64_t g = 0; g < G; ++g) gsum[g] = Vec::sum(x + g * w.group, w.group);
    for (int64_t g = G; g % L != 0; ++g) gsum[g] = 0.0f;
  }

  // The bytes of element e's Q into a token's activation bytes q: for 4-bit codes two's
  // complement, the low bytes read as unsigned, the top one as signed; for 8-bit codes signed
  // digits (Q0 = the low byte as signed, Q1 = (Q + 128) >> 8 counts its borrow).
  static void put_bytes(int8_t* q, int64_t e, int32_t Q, int bytes, int bits) {
    for (int k = 0; k < bytes; ++k) {
      const int32_t v = bits == 8 && k == 1 ? (Q + 128) >> 8 : Q >> (8 * k);
      q[act_pos(bits, bytes, e, k)] = static_cast<int8_t>(static_cast<uint32_t>(v));
    }
  }
  static void quant_token(const WeightMatrix& w, const float* x, int bytes, int8_t* xq, float* dl, float* gsum,
                          int32_t* on, int32_t* oi, float* ov) {
    if constexpr (V::kIntDot) {
      if (w.bits == 8) {
        quant_token8(w, x, bytes, xq, dl);
      } else {
        quant_token4(w, x, bytes, xq, dl);
      }
      if (on) *on = split_outliers(w, x, xq, dl, oi, ov);
      group_sums(w, x, gsum);
    }
  }

  // 4-bit codes: chunks of C = 8L elements, each block's even elements to its plane's lo half
  // and odd ones to the hi half; dl lane j of chunk c is the d of element c·C + 8j.
  static void quant_token4(const WeightMatrix& w, const float* x, int bytes, int8_t* xq, float* dl) {
    if constexpr (V::kIntDot) {
      const int64_t C = 8 * L, nch = Codes::n_chunks(w), full = w.cols / C;
      // Full chunks: V::quant_block takes 32 elements (16 even, 16 odd) to their bytes and
      // returns their d, with the same float operations as the scalar tail below.
      for (int64_t c = 0; c < full; ++c) {
        int8_t* q = xq + c * bytes * 8 * L;
        for (int k = 0; k < L / 4; ++k) {
          const float* xb = x + c * C + 32 * k;
          int8_t* qe = q + 16 * k;
          int8_t* qo = qe + 4 * L;
          const float d = bytes == 3   ? V::template quant_block<3, false>(xb, qmax(3, 4), qe, qo, 8 * L)
                          : bytes == 2 ? V::template quant_block<2, false>(xb, qmax(2, 4), qe, qo, 8 * L)
                                       : V::template quant_block<1, false>(xb, qmax(1, 4), qe, qo, 8 * L);
          for (int j = 0; j < 4; ++j) dl[c * L + 4 * k + j] = d;
        }
      }
      if (full < nch) quant_tail(w, x, full, bytes, xq, dl + full * L);
    }
  }

  // 8-bit codes (cols a multiple of 32: use_ints): each block's elements in order to each of
  // its unit's planes (V::quant_block's halves: elements 0-15, 16-31); dl lane j of chunk c
  // (4L elements) is the d of element c·4L + 4j, so a block's d fills 8 lanes.
  static void quant_token8(const WeightMatrix& w, const float* x, int bytes, int8_t* xq, float* dl) {
    if constexpr (V::kIntDot) {
      const int64_t U = unit_elems(8), nb = w.cols / 32;
      for (int64_t b = 0; b < nb; ++b) {
        int8_t* q = xq + act_pos(8, bytes, 32 * b, 0);
        const float d = bytes == 2 ? V::template quant_block<2, true>(x + 32 * b, qmax(2, 8), q, q + 16, U)
                                   : V::template quant_block<1, true>(x + 32 * b, qmax(1, 8), q, q + 16, U);
        std::fill_n(dl + 8 * b, 8, d);
      }
      std::fill(dl + 8 * nb, dl + Codes::n_chunks(w) * L, 0.0f);  // a partial last chunk's lanes
      // The last unit's bytes past cols are zero, as the codes a partial chunk loads there.
      const int64_t pad = (w.cols + U - 1) / U * U - w.cols;
      for (int k = 0; pad && k < bytes; ++k) std::memset(xq + act_pos(8, bytes, w.cols, k), 0, pad);
    }
  }

  // 4-bit codes' partial last chunk c, element by element; elements past cols are zero (and so is d).
  static void quant_tail(const WeightMatrix& w, const float* x, int64_t c, int bytes, int8_t* xq, float* dl) {
    const int64_t C = 8 * L;
    const float qm = qmax(bytes, 4);
    float d[L / 4], inv[L / 4];
    for (int k = 0; k < L / 4; ++k) {
      const int64_t b = c * C + 32 * k;
      float m = 0.0f;
      for (int i = 0; i < 32 && b + i < w.cols; ++i) m = std::max(m, std::fabs(x[b + i]));
      d[k] = b < w.cols ? m / qm : 0.0f;
      inv[k] = m > 0.0f ? qm / m : 0.0f;
    }
    for (int64_t t = 0; t < C; ++t) {
      const int64_t e = c * C + t;
      int32_t Q = 0;
      if (e < w.cols) {
        Q = static_cast<int32_t>(std::nearbyint(x[e] * inv[t / 32]));  // to nearest even, as cvtps2dq
      }
      put_bytes(xq, e, Q, bytes, 4);
    }
    for (int j = 0; j < L; ++j) dl[j] = d[j / 4];
  }

  // Two bytes resolve a block only to 2^-15 of its largest |x|: an activation ~1000× the others
  // leaves them a few bits. A block whose top bytes show 1..kSplit values with |Q| ≥ 2^11
  // (within 16× of its largest) gives them up, and so on while the rest again has few values
  // within 16× of its own largest and the budget of kSplit lasts; the rest is quantised again
  // (Q = 0 for those taken, d from the others) and the taken ones are kept in float for the
  // rows to add back (qrows_int_n). A block without an extreme value stays as it is.
  static constexpr int kSplit = 4;
  static int32_t split_outliers(const WeightMatrix& w, const float* x, int8_t* xq, float* dl, int32_t* oi, float* ov) {
    const float qm = qmax(2, w.bits);
    int32_t count = 0;
    for (int64_t b0 = 0; b0 < w.cols; b0 += 32) {
      int large = 0;
      for (int i = 0; i < 32 && large <= kSplit; ++i) {
        const int8_t v = xq[act_pos(w.bits, 2, b0 + i, 1)];  // top byte (past cols: zero padding)
        large += v >= 8 || v < -8;
      }
      if (large > kSplit) continue;
      const int n = static_cast<int>(std::min<int64_t>(32, w.cols - b0));
      bool taken[32] = {};
      int ntaken = 0;
      float m = 0.0f;
      for (;;) {
        m = 0.0f;
        for (int i = 0; i < n; ++i) m = taken[i] ? m : std::max(m, std::fabs(x[b0 + i]));
        int cand[kSplit + 1], nc = 0;
        for (int i = 0; i < n && nc <= kSplit - ntaken; ++i) {
          if (!taken[i] && m > 0.0f && std::fabs(x[b0 + i]) >= m / 16.0f) cand[nc++] = i;
        }
        if (nc == 0 || ntaken + nc > kSplit) break;
        for (int j = 0; j < nc; ++j) {
          taken[cand[j]] = true;
          oi[count] = static_cast<int32_t>(b0 + cand[j]);
          ov[count++] = x[b0 + cand[j]];
        }
        ntaken += nc;
      }
      if (ntaken == 0) continue;
      const float inv = m > 0.0f ? qm / m : 0.0f;
      for (int i = 0; i < 32; ++i) {
        const int32_t Q = i >= n || taken[i] ? 0 : static_cast<int32_t>(std::nearbyint(x[b0 + i] * inv));
        put_bytes(xq, b0 + i, Q, 2, w.bits);
      }
      // The block's lanes (32 / bits elements each): bits lanes from b0 · bits / 32.
      for (int j = 0; j < w.bits; ++j) dl[b0 * w.bits / 32 + j] = m / qm;
    }
    return count;
  }

  // Runs of tokens on one matrix shorter than this take the integer decode path (fast-int-dot.h,
  // four tokens at a time) where the layout is integer; longer ones the integer GEMM
  // (fast-int-gemm.h): its tile costs about two tokens' dot products per row block.
  static constexpr int64_t kIntGemmMinTokens = 8;

  // Whether a run of n tokens sharing w takes the integer path: 4-bit codes, or 8-bit ones
  // with whole blocks of 32 and at most V::kCodes8Bytes activation bytes; runs shorter than
  // kIntGemmMinTokens at any width (the decode path), longer ones at up to V::kIntRunBytes
  // activation bytes (the integer GEMM where V has it for the width, else the decode path;
  // wider activations take the float GEMM: three bytes lost to it from 8 tokens on). Decided
  // per run, so a call's grouping of runs (the staged path's waves) does not change its bits.
  static bool use_ints(const ExecCtx& ctx, const WeightMatrix& w, int64_t n) {
    if constexpr (V::kIntDot) {
      const bool codes = w.bits == 4 || (w.bits == 8 && ctx.activation_bits <= 8 * V::kCodes8Bytes && w.cols % 32 == 0);
      return codes && (n < kIntGemmMinTokens || ctx.activation_bits <= 8 * V::kIntRunBytes);
    } else {
      return false;
    }
  }

  // Lays out n tokens into the calling thread's scratch `slot` (valid until its next call). Rows
  // equal to the previous one (the MoE block's copies of one token) are copied, not redone.
  static Act prepare(const ExecCtx& ctx, const WeightMatrix& w, const float* x, int64_t n, bool ints,
                     fast::Slot slot = fast::Slot::Act) {
    Act a;
    a.ints = ints;
    a.bytes = ctx.activation_bits / 8;
    a.g_stride = (w.groups_per_row() + L - 1) / L * L;  // zero-padded: vector loops may read to a multiple of L
    const int64_t nch = Codes::n_chunks(w);
    // Per token: float layout nch·C floats, or whole units of activation bytes + nch·L scale floats.
    a.xs_stride = ints ? nch * L : nch * Codes::chunk_elems(w.bits);
    const int64_t U = unit_elems(w.bits), qbytes = a.q_stride = ints ? (w.cols + U - 1) / U * U * a.bytes : 0;
    const int64_t os = a.o_stride = ints && a.bytes == 2 ? (w.cols + 31) / 32 * kSplit : 0;  // per block at most kSplit
    uint8_t* base = static_cast<uint8_t*>(
        fast::scratch(slot, static_cast<size_t>(n * (qbytes + 4 * (a.xs_stride + a.g_stride) + 4 * (1 + 2 * os)))));
    int8_t* xq = reinterpret_cast<int8_t*>(base);
    float* xs = reinterpret_cast<float*>(base + n * qbytes);
    float* gs = xs + n * a.xs_stride;
    int32_t* on = reinterpret_cast<int32_t*>(gs + n * a.g_stride);
    int32_t* oi = on + n;
    float* ov = reinterpret_cast<float*>(oi + n * os);
    a.xq = xq;
    a.xs = ints ? nullptr : xs;
    a.dl = ints ? xs : nullptr;
    a.gsum = gs;
    if (os) a.on = on, a.oi = oi, a.ov = ov;
    auto run = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const float* xt = x + t * w.cols;
        if (t > t0 && std::memcmp(xt, xt - w.cols, static_cast<size_t>(w.cols) * 4) == 0) {
          std::memcpy(xq + t * qbytes, xq + (t - 1) * qbytes, static_cast<size_t>(qbytes));
          std::memcpy(xs + t * a.xs_stride, xs + (t - 1) * a.xs_stride, static_cast<size_t>(a.xs_stride) * 4);
          std::memcpy(gs + t * a.g_stride, gs + (t - 1) * a.g_stride, static_cast<size_t>(a.g_stride) * 4);
          if (os) {
            on[t] = on[t - 1];
            std::memcpy(oi + t * os, oi + (t - 1) * os, static_cast<size_t>(on[t]) * 4);
            std::memcpy(ov + t * os, ov + (t - 1) * os, static_cast<size_t>(on[t]) * 4);
          }
        } else if (ints) {
          quant_token(w, xt, a.bytes, xq + t * qbytes, xs + t * a.xs_stride, gs + t * a.g_stride, os ? on + t : nullptr,
                      oi + t * os, ov + t * os);
        } else {
          layout_token(w, xt, xs + t * a.xs_stride, gs + t * a.g_stride);
        }
      }
    };
    if (n >= 16) {
      ctx.parallel_for(n, run, 4);
    } else {
      run(0, n);
    }
    return a;
  }
};

}  // namespace
}  // namespace bs
