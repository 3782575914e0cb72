// SIMD traits for the AVX2 kernels (cpu-avx2, and cpu-avx512's LoRA delta): 8-lane AVX2
// vectors, a 4-bit chunk is 64 codes in 32 bytes. Included only by files compiled with
// AVX2+FMA+F16C (ops-avx2.cpp, ops-avx512.cpp: the file names carry the flags).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace bs {
namespace {

struct Avx2 {
  static constexpr int L = 8;
  static constexpr bool kIntDot = true;
  // Weight-stream prefetch locality (__builtin_prefetch's third argument): 1 (prefetcht2) fills L2
  // without holding L1 fill buffers; moe-small decode 68 -> 88 tok/s on a Zen VM against 3 (t0).
  static constexpr int kStreamLocality = 1;
  // Integer prefill GEMM for one-byte activations only (activation_bits 8): a two-byte tile
  // would take two vpmaddubsw per 32 multiply-adds, at most 8% faster than the float GEMM's two
  // FMA pipes (Zen 4; none on an older Zen), where the decode path below is faster.
  static constexpr bool kIntGemm = true;
  static constexpr int kIntGemmBytes = 1;
  // Runs of any length take the integer decode path (fast-int-dot.h, four tokens per pass over
  // the codes) at two bytes: faster than the float GEMM (1 thread, Zen 4: 2048x2048 over 64
  // tokens 6.7 -> 6.4 ms, 8 experts x 16 tokens 1.79 -> 1.67 ms, x 8 tokens 1.03 -> 0.83 ms).
  static constexpr int kIntRunBytes = 2;
  static constexpr bool kRawTile8 = false;  // 8-bit prefill tiles as nibbles: a code byte overflows vpmaddubsw
  // 8-bit codes take the integer paths for one-byte activations only: with two, the nibble
  // halves' four vpmaddubsw + four vpmaddwd per 32 codes decoded 10% slower than the float
  // path (8 experts 512x1024, 1 thread: 240 against 217 us; one byte 171).
  static constexpr int kCodes8Bytes = 1;
  static constexpr int kGemmT = 3, kGemmR = 4;  // prefill register tile: tokens × rows
  using F = __m256;
  using I = __m256i;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F round(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], built in the exponent field.
  static F pow2i(F n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  static I load_codes(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // The last, partial chunk of a row: `bytes` (< 32) bytes, the rest zero; never reads past them.
  static I load_codes_part(const uint8_t* p, int bytes) {
    alignas(32) uint8_t tmp[32] = {};
    __builtin_memcpy(tmp, p, bytes);
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
  }
  template <uint32_t M>
  static F masked(I w) {
    return _mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(M))));
  }
  template <int S>
  static F top(I w) {
    return _mm256_cvtepi32_ps(_mm256_srli_epi32(w, S));
  }
  // Lanes j → s[j / lanes_per_group] (lanes_per_group < 8: only 4 here, 4-bit group 32).
  static F expand(const float* s, int) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_broadcast_ss(s)), _mm_broadcast_ss(s + 1), 1);
  }
  static F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  // Σ_k 2^(8k) · (nibbles · byte k) per 32-bit lane (8 codes each): u8 × s8 pairs (maddubs:
  // nibble × signed top byte, unsigned low bytes × nibble, ≤ 4·15·255 per 16-bit lane), then
  // pairs of 16-bit lanes summed and weighted by 2^(8k) (madd, and a shift for 2^16).
  template <int BYTES>
  static I isum(I w, const I* x) {
    const I m = _mm256_set1_epi8(0x0F);
    const I lo = _mm256_and_si256(w, m), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m);
    constexpr int T = BYTES - 1;
    auto byte_sum = [&](int k, short scale) {
      const I p = k == T ? _mm256_add_epi16(_mm256_maddubs_epi16(lo, x[2 * k]), _mm256_maddubs_epi16(hi, x[2 * k + 1]))
                         : _mm256_add_epi16(_mm256_maddubs_epi16(x[2 * k], lo), _mm256_maddubs_epi16(x[2 * k + 1], hi));
      return _mm256_madd_epi16(p, _mm256_set1_epi16(scale));
    };
    if constexpr (BYTES == 3) {
      const I top = _mm256_add_epi32(byte_sum(2, 256), byte_sum(1, 1));
      return _mm256_add_epi32(_mm256_slli_epi32(top, 8), byte_sum(0, 1));
    } else if constexpr (BYTES == 1) {
      return byte_sum(0, 1);
    } else {
      return _mm256_add_epi32(byte_sum(1, 256), byte_sum(0, 1));
    }
  }
  // 8-bit codes, one-byte activations (kCodes8Bytes): Σ codes · Q per 32-bit lane (4 codes
  // each) as Σ lo · Q + 16 · Σ hi · Q over the codes' nibbles: u8 × s8 pairs (maddubs,
  // ≤ 2·15·127 per 16-bit lane), widened with weights 1 and 16 (madd).
  template <int BYTES>
  static I isum8(I w, const I* x) {
    static_assert(BYTES == 1, "cpu-avx2 takes 8-bit codes on the integer path with one-byte activations");
    const I m = _mm256_set1_epi8(0x0F);
    const I lo = _mm256_and_si256(w, m), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, x[0]), _mm256_set1_epi16(1)),
                            _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x[0]), _mm256_set1_epi16(16)));
  }
  // Prefill (fast-int-gemm.h): a block of 32 elements of 8 rows (lane = row; W tile words,
  // nibbles lo/hi at 64i, 64i + 32) against T tokens' one-byte activations, broadcast a dword
  // at a time: vpmaddubsw pairs nibbles × signed bytes into 16 bits (≤ 2·15·127), the low and
  // high nibbles' sums apart over the block (≤ 8·2·15·127 < 2^15), then vpmaddwd widens them
  // with weights 1 and HI. The high nibbles meet the activations XHI bytes on.
  template <int W, int XHI, int HI, int T>
  static void nibble_block(const uint8_t* wt, const int8_t* const* x, I* out) {
    I sl[T], sh[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sl[t] = sh[t] = _mm256_setzero_si256();
    auto bcast = [](const int8_t* p) {
      int32_t v;
      __builtin_memcpy(&v, p, 4);
      return _mm256_set1_epi32(v);
    };
#pragma GCC unroll 8
    for (int i = 0; i < W; ++i) {
      const I wl = _mm256_loadu_si256(reinterpret_cast<const I*>(wt + 64 * i));
      const I wh = _mm256_loadu_si256(reinterpret_cast<const I*>(wt + 64 * i + 32));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        sl[t] = _mm256_add_epi16(sl[t], _mm256_maddubs_epi16(wl, bcast(x[t] + 4 * i)));
        sh[t] = _mm256_add_epi16(sh[t], _mm256_maddubs_epi16(wh, bcast(x[t] + XHI + 4 * i)));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      out[t] = _mm256_add_epi32(_mm256_madd_epi16(sl[t], _mm256_set1_epi16(1)),
                                _mm256_madd_epi16(sh[t], _mm256_set1_epi16(HI)));
    }
  }
  // 4-bit codes: four words, the high nibbles (odd elements) against the odd activations.
  template <int BYTES, int T>
  static void block_isum(const uint8_t* wt, const int8_t* const* x, I* out) {
    static_assert(BYTES == 1, "cpu-avx2's integer GEMM takes one-byte activations");
    nibble_block<4, 4 * L, 1, T>(wt, x, out);
  }
  // 8-bit codes: eight words, both nibbles of a code against its activation, the high ones × 16.
  template <int BYTES, int T>
  static void block_isum8(const uint8_t* wt, const int8_t* const* x, int64_t, I* out) {
    static_assert(BYTES == 1, "cpu-avx2's integer GEMM takes one-byte activations");
    nibble_block<8, 0, 16, T>(wt, x, out);
  }
  // Prefill tile (fast-int-gemm.h decode_tile): words [w0, w0 + 8) of 8 rows, transposed so
  // word w of every row is one vector (an 8×8 dword transpose), its low and high nibbles to
  // o + 2L·w and o + 2L·w + L (the only tile this set uses: kRawTile8 false); lanes of rows ≥ nr are zero.
  template <bool SPLIT>
  static void tile_words(const uint8_t* const* rows, int64_t w0, int nr, uint32_t* o) {
    static_assert(SPLIT, "cpu-avx2 tiles are nibbles");
    I r[8], a[8], b[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const I*>(rows[i] + 4 * w0));
    for (int i = 0; i < 8; i += 2) {  // a[i], a[i+1]: words {0,1,4,5} and {2,3,6,7} of rows i, i+1
      a[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
      a[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int h = 0; h < 8; h += 4) {  // b[h + k]: words k and k + 4 of rows h..h+3
      b[h] = _mm256_unpacklo_epi64(a[h], a[h + 2]);
      b[h + 1] = _mm256_unpackhi_epi64(a[h], a[h + 2]);
      b[h + 2] = _mm256_unpacklo_epi64(a[h + 1], a[h + 3]);
      b[h + 3] = _mm256_unpackhi_epi64(a[h + 1], a[h + 3]);
    }
    const I live = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const I m = _mm256_set1_epi8(0x0F);
    auto put = [&](int w, I v) {
      v = _mm256_and_si256(v, live);
      _mm256_storeu_si256(reinterpret_cast<I*>(o + 2 * L * w), _mm256_and_si256(v, m));
      _mm256_storeu_si256(reinterpret_cast<I*>(o + 2 * L * w + L), _mm256_and_si256(_mm256_srli_epi32(v, 4), m));
    };
    for (int k = 0; k < 4; ++k) {  // 128-bit halves: words k (low) and k + 4 (high)
      put(k, _mm256_permute2x128_si256(b[k], b[4 + k], 0x20));
      put(k + 4, _mm256_permute2x128_si256(b[k], b[4 + k], 0x31));
    }
  }
  // 32 activations as BYTES bytes each: byte k of the even elements to qe + k·ls, of the odd
  // ones to qo + k·ls (16 bytes each), Q = x·(qmax/m) rounded to nearest even, m = max|x|;
  // returns d = m/qmax. CODES8 (the 8-bit codes' layout): elements 0-15 to qe, 16-31 to qo,
  // the top of two bytes a signed digit (Q + 128) >> 8.
  template <int BYTES, bool CODES8>
  static float quant_block(const float* x, float qmax, int8_t* qe, int8_t* qo, int64_t ls) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16),
                 v3 = _mm256_loadu_ps(x + 24);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 mv = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                              _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    const float m = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    const __m256 inv = _mm256_set1_ps(m > 0.0f ? qmax / m : 0.0f);
    // shuffle_ps picks evens (0x88) or odds (0xDD) of two vectors per 128-bit lane; the
    // 64-bit permute puts them in element order.
    auto pick = [&](__m256 a, __m256 b, bool odd) {
      const __m256 s = odd ? _mm256_shuffle_ps(a, b, 0xDD) : _mm256_shuffle_ps(a, b, 0x88);
      return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xD8)), inv));
    };
    // Byte k of two vectors of 8 int32 to 16 bytes in order (unsigned packs of values 0..255).
    auto narrow = [](__m256i lo, __m256i hi, int k, int8_t* q) {
      const __m256i b = _mm256_set1_epi32(255);
      if (CODES8 && k == 1) {
        lo = _mm256_add_epi32(lo, _mm256_set1_epi32(128));
        hi = _mm256_add_epi32(hi, _mm256_set1_epi32(128));
      }
      lo = _mm256_and_si256(_mm256_srli_epi32(lo, 8 * k), b);
      hi = _mm256_and_si256(_mm256_srli_epi32(hi, 8 * k), b);
      const __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(lo, hi), _mm256_setzero_si256());
      const __m256i r = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 3, 6, 7));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm256_castsi256_si128(r));
    };
    auto store = [&](__m256i a, __m256i b, int8_t* q) {
      for (int k = 0; k < BYTES; ++k) narrow(a, b, k, q + k * ls);
    };
    if constexpr (CODES8) {
      store(_mm256_cvtps_epi32(_mm256_mul_ps(v0, inv)), _mm256_cvtps_epi32(_mm256_mul_ps(v1, inv)), qe);
      store(_mm256_cvtps_epi32(_mm256_mul_ps(v2, inv)), _mm256_cvtps_epi32(_mm256_mul_ps(v3, inv)), qo);
    } else {
      store(pick(v0, v1, false), pick(v2, v3, false), qe);
      store(pick(v0, v1, true), pick(v2, v3, true), qo);
    }
    return m / qmax;
  }
  static F load_bf16(const uint8_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static F load_f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // [hsum(a[0]), …, hsum(a[7])] as one vector (the LoRA delta reduces eight rows at once).
  static F hsums(const F a[8]) {
    const F s0123 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const F s4567 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
  }
};

}  // namespace
}  // namespace bs
