// cpu-avx512: the fast kernels over 16-lane AVX-512 vectors (a 4-bit chunk is 128 codes in 64
// bytes; partial chunks use masked loads), with VNNI (vpdpbusd) for the integer decode path.
// Chosen at run time when AVX-512F/BW/VL/DQ and VNNI exist.
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*()
// (GCC bug 105593); the warning says nothing about this file. Clang has no such group.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "common/cpu-features.h"
#include "cpu/avx2-traits.h"
#include "cpu/fast-kernels.h"
#include "cpu/ops-x86.h"

namespace bs {

namespace {

struct Avx512 {
  static constexpr int L = 16;
  static constexpr bool kIntDot = true;
  static constexpr int kStreamLocality = 1;     // as AVX2 (avx2-traits.h): L2 prefetch, measured
  static constexpr bool kIntGemm = true;        // prefill: fast-int-gemm.h on vpdpbusd
  static constexpr int kIntGemmBytes = 2;       // two- and one-byte activations
  static constexpr int kIntRunBytes = 2;        // runs of any length on integers: the GEMM's widths
  static constexpr bool kRawTile8 = true;       // 8-bit prefill tiles hold whole codes (u8 for vpdpbusd)
  static constexpr int kCodes8Bytes = 2;        // 8-bit codes: integer paths for two- and one-byte activations
  static constexpr int kGemmT = 4, kGemmR = 6;  // prefill register tile: tokens × rows
  using F = __m512;
  using I = __m512i;

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F neg(F a) {
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
  }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F round(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F pow2i(F n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }

  static I load_codes(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I load_codes_part(const uint8_t* p, int bytes) {
    return _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << (bytes / 4)) - 1u), p);
  }
  template <uint32_t M>
  static F masked(I w) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(M))));
  }
  template <int S>
  static F top(I w) {
    return _mm512_cvtepi32_ps(_mm512_srli_epi32(w, S));
  }
  // Lanes j → s[j / lanes_per_group] for lanes_per_group 4 or 8 (reads ≤ 4 scales).
  static F expand(const float* s, int lanes_per_group) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx = _mm512_srl_epi32(lane, _mm_cvtsi32_si128(lanes_per_group == 4 ? 2 : 3));
    return _mm512_permutexvar_ps(idx, _mm512_maskz_loadu_ps(lanes_per_group == 4 ? 0xF : 0x3, s));
  }
  static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  // Σ_k 2^(8k) · (nibbles · byte k) per 32-bit lane, Horner from the top byte: vpdpbusd
  // accumulates four u8 × s8 products per lane, nibble × signed top byte, then unsigned
  // byte × nibble (|sum| < 8·15·2^23, no overflow).
  template <int BYTES>
  static I isum(I w, const I* x) {
    const I m = _mm512_set1_epi8(0x0F);
    const I lo = _mm512_and_si512(w, m), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m);
    constexpr int T = BYTES - 1;
    I a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x[2 * T]), hi, x[2 * T + 1]);
    for (int k = T - 1; k >= 0; --k) {
      a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(a, 8), x[2 * k], lo), x[2 * k + 1], hi);
    }
    return a;
  }
  // 8-bit codes: Σ_k 2^(8k) · (codes · digit k) per 32-bit lane (4 codes each), Horner from the
  // top digit; every digit is signed (fast-activations.h), so vpdpbusd takes the codes as
  // they are (|sum| < 4·255·2^15).
  template <int BYTES>
  static I isum8(I w, const I* x) {
    I a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x[BYTES - 1]);
    for (int k = BYTES - 2; k >= 0; --k) a = _mm512_dpbusd_epi32(_mm512_slli_epi32(a, 8), w, x[k]);
    return a;
  }
  // Prefill (fast-int-gemm.h): a block of 32 elements of 16 rows (lane = row; tile words
  // w[i] lo/hi at 128i, 128i + 64) against T tokens' activation bytes, broadcast a dword at a
  // time: vpdpbusd sums into int32 (codes × signed top byte, unsigned low byte × codes).
  template <int BYTES, int T>
  static void block_isum(const uint8_t* wt, const int8_t* const* x, I* out) {
    I hi[T], lo[T];
    // Every loop over T unrolled: GCC's -O2 would vectorise one through memory, spilling the tile.
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) hi[t] = lo[t] = _mm512_setzero_si512();
    auto bcast = [](const int8_t* p) {
      int32_t v;
      __builtin_memcpy(&v, p, 4);
      return _mm512_set1_epi32(v);
    };
    constexpr int top = 4 * L * (2 * BYTES - 2);  // the signed top byte's lo plane
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const I wl = _mm512_loadu_si512(wt + 128 * i), wh = _mm512_loadu_si512(wt + 128 * i + 64);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        hi[t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(hi[t], wl, bcast(x[t] + top + 4 * i)), wh,
                                    bcast(x[t] + top + 4 * L + 4 * i));
        if constexpr (BYTES == 2) {
          lo[t] =
              _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(lo[t], bcast(x[t] + 4 * i), wl), bcast(x[t] + 4 * L + 4 * i), wh);
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[t] = BYTES == 2 ? _mm512_add_epi32(_mm512_slli_epi32(hi[t], 8), lo[t]) : hi[t];
  }
  // Prefill, 8-bit codes: a block of 32 elements (8 whole words, at 64i) of 16 rows against T
  // tokens' signed digits (planes `plane` bytes apart), broadcast a dword at a time.
  template <int BYTES, int T>
  static void block_isum8(const uint8_t* wt, const int8_t* const* x, int64_t plane, I* out) {
    I acc[BYTES][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      for (int k = 0; k < BYTES; ++k) acc[k][t] = _mm512_setzero_si512();
    }
    auto bcast = [](const int8_t* p) {
      int32_t v;
      __builtin_memcpy(&v, p, 4);
      return _mm512_set1_epi32(v);
    };
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const I w = _mm512_loadu_si512(wt + 64 * i);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        for (int k = 0; k < BYTES; ++k) acc[k][t] = _mm512_dpbusd_epi32(acc[k][t], w, bcast(x[t] + k * plane + 4 * i));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      out[t] = BYTES == 2 ? _mm512_add_epi32(_mm512_slli_epi32(acc[1][t], 8), acc[0][t]) : acc[0][t];
  }
  // Prefill tile (fast-int-gemm.h decode_tile): words [w0, w0 + 16) of 16 rows, transposed
  // so word w of every row is one vector (a 16×16 dword transpose in 64 shuffles), its low
  // and high nibbles to o + 2L·w and o + 2L·w + L (SPLIT), or whole to o + L·w; lanes of rows
  // ≥ nr are zero.
  template <bool SPLIT>
  static void tile_words(const uint8_t* const* rows, int64_t w0, int nr, uint32_t* o) {
    I r[16], a[16], b[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(rows[i] + 4 * w0);
    for (int i = 0; i < 16; i += 2) {
      a[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
      a[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    // b[4g + k], 128-bit lane l: word 4l + k of rows 4g .. 4g + 3.
    for (int g = 0; g < 16; g += 4) {
      b[g] = _mm512_unpacklo_epi64(a[g], a[g + 2]);
      b[g + 1] = _mm512_unpackhi_epi64(a[g], a[g + 2]);
      b[g + 2] = _mm512_unpacklo_epi64(a[g + 1], a[g + 3]);
      b[g + 3] = _mm512_unpackhi_epi64(a[g + 1], a[g + 3]);
    }
    const __mmask16 live = static_cast<__mmask16>((1u << nr) - 1u);
    const I m = _mm512_set1_epi8(0x0F);
    auto put = [&](int w, I v) {
      v = _mm512_maskz_mov_epi32(live, v);
      if constexpr (SPLIT) {
        _mm512_storeu_si512(o + 2 * L * w, _mm512_and_si512(v, m));
        _mm512_storeu_si512(o + 2 * L * w + L, _mm512_and_si512(_mm512_srli_epi32(v, 4), m));
      } else {
        _mm512_storeu_si512(o + L * w, v);
      }
    };
    for (int k = 0; k < 4; ++k) {  // a 4×4 transpose of 128-bit lanes: b[k], b[4+k], b[8+k], b[12+k]
      const I c0 = _mm512_shuffle_i32x4(b[k], b[4 + k], 0x44), c1 = _mm512_shuffle_i32x4(b[k], b[4 + k], 0xEE);
      const I c2 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], 0x44),
              c3 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], 0xEE);
      put(k, _mm512_shuffle_i32x4(c0, c2, 0x88));
      put(4 + k, _mm512_shuffle_i32x4(c0, c2, 0xDD));
      put(8 + k, _mm512_shuffle_i32x4(c1, c3, 0x88));
      put(12 + k, _mm512_shuffle_i32x4(c1, c3, 0xDD));
    }
  }
  // 32 activations as BYTES bytes each: byte k of the even elements to qe + k·ls, of the odd
  // ones to qo + k·ls (16 bytes each), Q = x·(qmax/m) rounded to nearest even, m = max|x|;
  // returns d = m/qmax. CODES8 (the 8-bit codes' layout): elements 0-15 to qe, 16-31 to qo,
  // the top of two bytes a signed digit (Q + 128) >> 8.
  template <int BYTES, bool CODES8>
  static float quant_block(const float* x, float qmax, int8_t* qe, int8_t* qo, int64_t ls) {
    const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
    const __m512 inv = _mm512_set1_ps(m > 0.0f ? qmax / m : 0.0f);
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    auto store = [&](__m512 v, int8_t* q) {
      const __m512i Q = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
      // vpmovdb keeps each lane's low byte: byte k of Q after a shift by 8k.
      for (int k = 0; k < BYTES; ++k) {
        const __m512i d = CODES8 && k == 1 ? _mm512_add_epi32(Q, _mm512_set1_epi32(128)) : Q;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k * ls), _mm512_cvtepi32_epi8(_mm512_srli_epi32(d, 8 * k)));
      }
    };
    if constexpr (CODES8) {
      store(a, qe);
      store(b, qo);
    } else {
      store(_mm512_permutex2var_ps(a, ev, b), qe);
      store(_mm512_permutex2var_ps(a, od, b), qo);
    }
    return m / qmax;
  }
  static F load_bf16(const uint8_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static F load_f16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};

bool usable() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx2 && f.fma && f.f16c;
}

}  // namespace

const Backend& cpu_avx512_backend() {
  // The LoRA delta runs on AVX2 vectors, as it always has here (results identical to cpu-avx2's).
  static const Backend b =
      FastKernels<Avx512, Avx2>::make("cpu-avx512", "AVX-512F/BW/VL/DQ+VNNI kernels, MLX codes read in place", usable);
  return b;
}

}  // namespace bs
