// cpu-neon-i8mm: cpu-neon-dotprod plus the int8 matrix multiply extension (FEAT_I8MM: Apple
// M2 and later, Graviton 3/4, Cortex-A510/A710/X2 and later) for the prefill GEMM: one
// smmla / ummla / usmmla multiplies a 2×8 block of two weight rows by 8 bytes of two tokens
// into a 2×2 int32 tile, 32 multiply-adds where sdot does 16; and usdot (u8 × s8) for 8-bit
// codes in decode. Compiled with +dotprod+i8mm and chosen at run time when the core has it.
#include "common/cpu-features.h"
#include "cpu/fast-kernels.h"
#include "cpu/neon-dot-traits.h"
#include "cpu/ops-neon.h"

namespace bs {

namespace {

struct NeonMmla : NeonDot {
  static constexpr bool kRawTile8 = true;  // 8-bit prefill tiles hold whole codes (usmmla: u8 × s8)

  // Prefill tile (fast-int-gemm.h decode_tile): words [w0, w0 + 4) of 4 rows. A pair of words
  // (2·8 nibbles or 2·4 codes of a row) is one matrix operand row, so each word pair holds
  // rows 0-1 then rows 2-3 as [row r: word j, word j+1][row r+1: word j, word j+1] (16 bytes):
  // SPLIT, the low nibbles' two operands then the high nibbles' (64 bytes at o + 2L·j);
  // whole codes, the two operands (32 bytes at o + L·j). Rows ≥ nr are zero. The pairs never
  // straddle a row's end: a row has a multiple of 4 words (cols is a multiple of 32).
  template <bool SPLIT>
  static void tile_words(const uint8_t* const* rows, int64_t w0, int nr, uint32_t* o) {
    uint8x16_t r[4];
    for (int i = 0; i < 4; ++i) r[i] = i < nr ? vld1q_u8(rows[i] + 4 * w0) : vdupq_n_u8(0);
    uint8_t* out = reinterpret_cast<uint8_t*>(o);
    const uint8x16_t m = vdupq_n_u8(0x0F);
    for (int h = 0; h < 2; ++h) {  // word pairs (w0, w0 + 1) and (w0 + 2, w0 + 3): 64-bit halves
      auto half = [&](int i) { return h == 0 ? vget_low_u8(r[i]) : vget_high_u8(r[i]); };
      const uint8x16_t a01 = vcombine_u8(half(0), half(1)), a23 = vcombine_u8(half(2), half(3));
      if constexpr (SPLIT) {
        uint8_t* p = out + 64 * h;
        vst1q_u8(p, vandq_u8(a01, m));
        vst1q_u8(p + 16, vandq_u8(a23, m));
        vst1q_u8(p + 32, vshrq_n_u8(a01, 4));
        vst1q_u8(p + 48, vshrq_n_u8(a23, 4));
      } else {
        vst1q_u8(out + 32 * h, a01);
        vst1q_u8(out + 32 * h + 16, a23);
      }
    }
  }
  // Two tokens' 8 activation bytes at offset `off` as one operand (an odd last token pairs
  // with itself; its second result is dropped).
  static uint8x16_t token_pair(const int8_t* a, const int8_t* b, int64_t off) {
    return vcombine_u8(vld1_u8(reinterpret_cast<const uint8_t*>(a + off)),
                       vld1_u8(reinterpret_cast<const uint8_t*>(b + off)));
  }
  // The 2×2 tiles [row 0, 1 | row 2, 3] × (token A, B) of each pair to one vector of 4 rows per
  // token (lane = row, as the GEMM's scales expect).
  template <int T, int P>
  static void rows_per_token(const int32x4_t (&acc)[P][2], I* out) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const int32x4_t a01 = acc[t / 2][0], a23 = acc[t / 2][1];
      out[t] = vreinterpretq_u32_s32(t % 2 == 0 ? vuzp1q_s32(a01, a23) : vuzp2q_s32(a01, a23));
    }
  }
  // Prefill, 4-bit codes: a block of 32 elements (two word pairs, 64 bytes each) of 4 rows
  // against T tokens in pairs: smmla for the nibbles × the signed top byte, ummla for the
  // unsigned low byte × the nibbles.
  template <int BYTES, int T>
  static void block_isum(const uint8_t* wt, const int8_t* const* x, I* out) {
    constexpr int P = (T + 1) / 2;
    constexpr int top = 4 * L * (2 * BYTES - 2);  // the signed top byte's lo plane
    int32x4_t hi[P][2];
    uint32x4_t lo[P][2];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) hi[q][0] = hi[q][1] = vdupq_n_s32(0), lo[q][0] = lo[q][1] = vdupq_n_u32(0);
#pragma GCC unroll 2
    for (int p = 0; p < 2; ++p) {
      const uint8_t* w = wt + 64 * p;
      const uint8x16_t l01 = vld1q_u8(w), l23 = vld1q_u8(w + 16), h01 = vld1q_u8(w + 32), h23 = vld1q_u8(w + 48);
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) {
        const int8_t *xa = x[2 * q], *xb = x[2 * q + 1 < T ? 2 * q + 1 : 2 * q];
        const int8x16_t tl = vreinterpretq_s8_u8(token_pair(xa, xb, top + 8 * p));
        const int8x16_t th = vreinterpretq_s8_u8(token_pair(xa, xb, top + 4 * L + 8 * p));
        hi[q][0] = vmmlaq_s32(vmmlaq_s32(hi[q][0], vreinterpretq_s8_u8(l01), tl), vreinterpretq_s8_u8(h01), th);
        hi[q][1] = vmmlaq_s32(vmmlaq_s32(hi[q][1], vreinterpretq_s8_u8(l23), tl), vreinterpretq_s8_u8(h23), th);
        if constexpr (BYTES == 2) {
          const uint8x16_t ul = token_pair(xa, xb, 8 * p), uh = token_pair(xa, xb, 4 * L + 8 * p);
          lo[q][0] = vmmlaq_u32(vmmlaq_u32(lo[q][0], l01, ul), h01, uh);
          lo[q][1] = vmmlaq_u32(vmmlaq_u32(lo[q][1], l23, ul), h23, uh);
        }
      }
    }
    int32x4_t acc[P][2];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      for (int j = 0; j < 2; ++j) {
        acc[q][j] = BYTES == 2 ? vaddq_s32(vshlq_n_s32(hi[q][j], 8), vreinterpretq_s32_u32(lo[q][j])) : hi[q][j];
      }
    }
    rows_per_token<T>(acc, out);
  }
  // Prefill, 8-bit codes: a block of 32 elements (four word pairs of whole codes, 32 bytes
  // each) of 4 rows against T tokens' signed digits (planes `plane` bytes apart) in pairs:
  // usmmla takes the codes as they are.
  template <int BYTES, int T>
  static void block_isum8(const uint8_t* wt, const int8_t* const* x, int64_t plane, I* out) {
    constexpr int P = (T + 1) / 2;
    int32x4_t d[BYTES][P][2];
#pragma GCC unroll 2
    for (int k = 0; k < BYTES; ++k) {
      for (int q = 0; q < P; ++q) d[k][q][0] = d[k][q][1] = vdupq_n_s32(0);
    }
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const uint8x16_t w01 = vld1q_u8(wt + 32 * p), w23 = vld1q_u8(wt + 32 * p + 16);
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) {
        const int8_t *xa = x[2 * q], *xb = x[2 * q + 1 < T ? 2 * q + 1 : 2 * q];
        for (int k = 0; k < BYTES; ++k) {
          const int8x16_t b = vreinterpretq_s8_u8(token_pair(xa, xb, k * plane + 8 * p));
          d[k][q][0] = vusmmlaq_s32(d[k][q][0], w01, b);
          d[k][q][1] = vusmmlaq_s32(d[k][q][1], w23, b);
        }
      }
    }
    int32x4_t acc[P][2];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      for (int j = 0; j < 2; ++j)
        acc[q][j] = BYTES == 2 ? vaddq_s32(vshlq_n_s32(d[1][q][j], 8), d[0][q][j]) : d[0][q][j];
    }
    rows_per_token<T>(acc, out);
  }
  // 8-bit codes in decode: Σ_k 2^(8k) · (codes · digit k) per 32-bit lane with usdot (u8 codes
  // × s8 digits), Horner from the top digit: BYTES dot products where sdot needs two per byte.
  template <int BYTES>
  static I isum8(I w, const I* x) {
    const uint8x16_t c = vreinterpretq_u8_u32(w);
    int32x4_t a = vusdotq_s32(vdupq_n_s32(0), c, vreinterpretq_s8_u32(x[BYTES - 1]));
    for (int k = BYTES - 2; k >= 0; --k) a = vusdotq_s32(vshlq_n_s32(a, 8), c, vreinterpretq_s8_u32(x[k]));
    return vreinterpretq_u32_s32(a);
  }
};

bool usable() { return cpu_features().neon && cpu_features().dotprod && cpu_features().i8mm; }

}  // namespace

const Backend& cpu_neon_i8mm_backend() {
  static const Backend b = FastKernels<NeonMmla>::make(
      "cpu-neon-i8mm", "NEON + dot-product + int8 matrix multiply kernels (integer prefill GEMM on smmla)", usable);
  return b;
}

}  // namespace bs
