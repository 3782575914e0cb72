// SIMD traits of the dot-product extension (sdot / udot: four s8 × s8 or u8 × u8 products per
// 32-bit lane; the nibbles 0..15 fit either): the integer decode path and prefill GEMM of
// cpu-neon-dotprod, and the base of cpu-neon-i8mm. Included only by files built with +dotprod.
#pragma once
#include "cpu/neon-traits.h"

namespace bs {
namespace {

struct NeonDot : Neon {
  static constexpr bool kIntDot = true;
  static constexpr bool kIntGemm = true;    // prefill: fast-int-gemm.h on sdot / udot
  static constexpr int kIntGemmBytes = 2;   // two- and one-byte activations
  static constexpr int kIntRunBytes = 2;    // runs of any length on integers: the GEMM's widths
  static constexpr bool kRawTile8 = false;  // 8-bit prefill tiles as nibbles (sdot: s8 × s8)
  static constexpr int kCodes8Bytes = 2;    // 8-bit codes: integer paths for two- and one-byte activations
  static F cvt(I v) { return vcvtq_f32_s32(vreinterpretq_s32_u32(v)); }
  // 32 activations as BYTES bytes each: byte k of the even elements to qe + k·ls, of the odd
  // ones to qo + k·ls (16 bytes each), Q = x·(qmax/m) rounded to nearest even, m = max|x|;
  // returns d = m/qmax. CODES8 (the 8-bit codes' layout): elements 0-15 to qe, 16-31 to qo,
  // the top of two bytes a signed digit (Q + 128) >> 8.
  template <int BYTES, bool CODES8>
  static float quant_block(const float* x, float qmax, int8_t* qe, int8_t* qo, int64_t ls) {
    float32x4x2_t v[4];
    float32x4_t mv = vdupq_n_f32(0.0f);
    for (int i = 0; i < 4; ++i) {  // vld2q splits 8 floats into evens and odds; CODES8 takes halves
      v[i] = CODES8 ? float32x4x2_t{{vld1q_f32(x + 4 * i), vld1q_f32(x + 16 + 4 * i)}} : vld2q_f32(x + 8 * i);
      mv = vmaxq_f32(mv, vmaxq_f32(vabsq_f32(v[i].val[0]), vabsq_f32(v[i].val[1])));
    }
    const float m = vmaxvq_f32(mv);
    const float inv = m > 0.0f ? qmax / m : 0.0f;
    for (int h = 0; h < 2; ++h) {
      int32x4_t Q[4];
      for (int i = 0; i < 4; ++i) Q[i] = vcvtnq_s32_f32(vmulq_n_f32(v[i].val[h], inv));
      auto store = [&](int8_t* q, auto shift) {
        const int16x8_t a = vcombine_s16(vmovn_s32(shift(Q[0])), vmovn_s32(shift(Q[1])));
        const int16x8_t b = vcombine_s16(vmovn_s32(shift(Q[2])), vmovn_s32(shift(Q[3])));
        vst1q_s8(q, vcombine_s8(vmovn_s16(a), vmovn_s16(b)));
      };
      int8_t* q = h == 0 ? qe : qo;
      // vmovn keeps low halves: byte k of Q after a shift by 8k.
      store(q, [](int32x4_t t) { return t; });
      if constexpr (BYTES >= 2) {
        store(q + ls, [](int32x4_t t) { return vshrq_n_s32(CODES8 ? vaddq_s32(t, vdupq_n_s32(128)) : t, 8); });
      }
      if constexpr (BYTES == 3) store(q + 2 * ls, [](int32x4_t t) { return vshrq_n_s32(t, 16); });
    }
    return m / qmax;
  }
  // Prefill (fast-int-gemm.h): a block of 32 elements of 4 rows (lane = row; tile words w[i]
  // lo/hi at 32i, 32i + 16) against T tokens' activation bytes, broadcast a word at a time:
  // sdot for codes × the signed top byte, udot for the unsigned low byte × codes.
  template <int BYTES, int T>
  static void block_isum(const uint8_t* wt, const int8_t* const* x, I* out) {
    int32x4_t hi[T];
    uint32x4_t lo[T];
    // Every loop over T unrolled: GCC's -O2 would vectorise one through memory, spilling the tile.
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) hi[t] = vdupq_n_s32(0), lo[t] = vdupq_n_u32(0);
    auto bcast = [](const int8_t* p) {
      uint32_t v;
      __builtin_memcpy(&v, p, 4);
      return vreinterpretq_u8_u32(vdupq_n_u32(v));
    };
    constexpr int top = 4 * L * (2 * BYTES - 2);  // the signed top byte's lo plane
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const uint8x16_t wl = vld1q_u8(wt + 32 * i), wh = vld1q_u8(wt + 32 * i + 16);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        hi[t] = vdotq_s32(vdotq_s32(hi[t], vreinterpretq_s8_u8(wl), vreinterpretq_s8_u8(bcast(x[t] + top + 4 * i))),
                          vreinterpretq_s8_u8(wh), vreinterpretq_s8_u8(bcast(x[t] + top + 4 * L + 4 * i)));
        if constexpr (BYTES == 2) {
          lo[t] = vdotq_u32(vdotq_u32(lo[t], bcast(x[t] + 4 * i), wl), bcast(x[t] + 4 * L + 4 * i), wh);
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      out[t] =
          BYTES == 2 ? vaddq_u32(vshlq_n_u32(vreinterpretq_u32_s32(hi[t]), 8), lo[t]) : vreinterpretq_u32_s32(hi[t]);
    }
  }
  // Prefill, 8-bit codes: a block of 32 elements (8 words, nibbles lo/hi at 32i, 32i + 16) of
  // 4 rows against T tokens' signed digits (planes `plane` bytes apart): sdot per nibble half,
  // the high halves weighted 16 at the end.
  template <int BYTES, int T>
  static void block_isum8(const uint8_t* wt, const int8_t* const* x, int64_t plane, I* out) {
    int32x4_t lo[BYTES][T], hi[BYTES][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      for (int k = 0; k < BYTES; ++k) lo[k][t] = hi[k][t] = vdupq_n_s32(0);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const int8x16_t wl = vld1q_s8(reinterpret_cast<const int8_t*>(wt + 32 * i));
      const int8x16_t wh = vld1q_s8(reinterpret_cast<const int8_t*>(wt + 32 * i + 16));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        for (int k = 0; k < BYTES; ++k) {
          int32_t v;
          __builtin_memcpy(&v, x[t] + k * plane + 4 * i, 4);
          const int8x16_t xb = vreinterpretq_s8_s32(vdupq_n_s32(v));
          lo[k][t] = vdotq_s32(lo[k][t], wl, xb);
          hi[k][t] = vdotq_s32(hi[k][t], wh, xb);
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      int32x4_t a = vaddq_s32(lo[BYTES - 1][t], vshlq_n_s32(hi[BYTES - 1][t], 4));
      if constexpr (BYTES == 2) a = vaddq_s32(vshlq_n_s32(a, 8), vaddq_s32(lo[0][t], vshlq_n_s32(hi[0][t], 4)));
      out[t] = vreinterpretq_u32_s32(a);
    }
  }
  // Prefill tile (fast-int-gemm.h decode_tile): words [w0, w0 + 4) of 4 rows, transposed so
  // word w of every row is one vector, its low and high nibbles to o + 2L·w and o + 2L·w + L
  // (the only tile this set uses: kRawTile8 false); lanes of rows ≥ nr are zero.
  template <bool SPLIT>
  static void tile_words(const uint8_t* const* rows, int64_t w0, int nr, uint32_t* o) {
    static_assert(SPLIT, "cpu-neon-dotprod tiles are nibbles");
    uint32x4_t r[4];
    for (int i = 0; i < 4; ++i) r[i] = vld1q_u32(reinterpret_cast<const uint32_t*>(rows[i] + 4 * w0));
    const uint32x4x2_t a = vtrnq_u32(r[0], r[1]), b = vtrnq_u32(r[2], r[3]);  // pairs of words 0/2 and 1/3
    const uint32x4_t t[4] = {vcombine_u32(vget_low_u32(a.val[0]), vget_low_u32(b.val[0])),
                             vcombine_u32(vget_low_u32(a.val[1]), vget_low_u32(b.val[1])),
                             vcombine_u32(vget_high_u32(a.val[0]), vget_high_u32(b.val[0])),
                             vcombine_u32(vget_high_u32(a.val[1]), vget_high_u32(b.val[1]))};
    const uint32_t lanes[4] = {0u, 1u, 2u, 3u};
    const uint32x4_t live = vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(nr)));
    const uint32x4_t m = vdupq_n_u32(0x0F0F0F0Fu);
    for (int w = 0; w < 4; ++w) {
      const uint32x4_t v = vandq_u32(t[w], live);
      vst1q_u32(o + 2 * L * w, vandq_u32(v, m));
      vst1q_u32(o + 2 * L * w + L, vandq_u32(vshrq_n_u32(v, 4), m));
    }
  }
  // Σ_k 2^(8k) · (nibbles · byte k) per 32-bit lane (8 codes each), Horner from the top byte:
  // sdot for the signed top byte, udot for the unsigned low bytes (the same two's-complement
  // sum in the int32 lanes).
  template <int BYTES>
  static I isum(I w, const I* x) {
    const uint8x16_t b = vreinterpretq_u8_u32(w);
    const uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(b, 4);
    constexpr int T = BYTES - 1;
    int32x4_t a = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(lo), vreinterpretq_s8_u32(x[2 * T])),
                            vreinterpretq_s8_u8(hi), vreinterpretq_s8_u32(x[2 * T + 1]));
    uint32x4_t u = vreinterpretq_u32_s32(a);
    for (int k = T - 1; k >= 0; --k) {
      u = vdotq_u32(vdotq_u32(vshlq_n_u32(u, 8), lo, vreinterpretq_u8_u32(x[2 * k])), hi,
                    vreinterpretq_u8_u32(x[2 * k + 1]));
    }
    return u;
  }
  // 8-bit codes: Σ_k 2^(8k) · (codes · digit k) per 32-bit lane (4 codes each), the codes' low
  // and high nibbles apart (s8 × s8 sdot, every digit signed), Horner from the top digit.
  template <int BYTES>
  static I isum8(I w, const I* x) {
    const uint8x16_t b = vreinterpretq_u8_u32(w);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F))), hi = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
    int32x4_t l = vdotq_s32(vdupq_n_s32(0), lo, vreinterpretq_s8_u32(x[BYTES - 1]));
    int32x4_t h = vdotq_s32(vdupq_n_s32(0), hi, vreinterpretq_s8_u32(x[BYTES - 1]));
    for (int k = BYTES - 2; k >= 0; --k) {
      l = vdotq_s32(vshlq_n_s32(l, 8), lo, vreinterpretq_s8_u32(x[k]));
      h = vdotq_s32(vshlq_n_s32(h, 8), hi, vreinterpretq_s8_u32(x[k]));
    }
    return vreinterpretq_u32_s32(vaddq_s32(l, vshlq_n_s32(h, 4)));
  }
};

}  // namespace
}  // namespace bs
