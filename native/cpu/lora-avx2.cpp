// AVX2 LoRA delta: t = A·x per token (dot products of 8-wide FMAs over the input), then every
// output row adds scale · B[o]·t. Both phases split over the pool only when the work is large
// enough to pay for waking it (decode shapes run on the calling thread).
#include <immintrin.h>

#include "common/cpu-features.h"
#include "cpu/fast-common.h"
#include "cpu/lora-fast.h"

namespace bs {

namespace {

template <DType T>
inline __m256 load8(const uint8_t* p, int64_t i) {
  if constexpr (T == DType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  } else if constexpr (T == DType::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  } else {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Σ_c row[c] · x[c] over n elements of a T row.
template <DType T>
float dot(const uint8_t* row, const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    a0 = _mm256_fmadd_ps(load8<T>(row, c), _mm256_loadu_ps(x + c), a0);
    a1 = _mm256_fmadd_ps(load8<T>(row, c + 8), _mm256_loadu_ps(x + c + 8), a1);
  }
  if (c + 8 <= n) {
    a0 = _mm256_fmadd_ps(load8<T>(row, c), _mm256_loadu_ps(x + c), a0);
    c += 8;
  }
  float s = hsum(_mm256_add_ps(a0, a1));
  for (; c < n; ++c) s += load_float(row, T, static_cast<size_t>(c)) * x[c];
  return s;
}

// Sums of each of 8 vectors, as one vector [Σa0, …, Σa7].
inline __m256 hsum8(const __m256 a[8]) {
  const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

// y[tok, o..o+8) += scale · B[o..o+8)·t[tok] for rank % 8 == 0: eight rows reduced together.
template <DType T>
void rows8(const LoraWeights& l, const float* t, int64_t n, int64_t o, float* y) {
  const int64_t rank = l.b.cols, out = l.b.rows;
  const size_t b_row = l.b.row_bytes();
  const __m256 scale = _mm256_set1_ps(l.scale);
  for (int64_t tok = 0; tok < n; ++tok) {
    const float* tt = t + tok * rank;
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) {
      const uint8_t* b = l.b.w + (o + j) * b_row;
      acc[j] = _mm256_mul_ps(load8<T>(b, 0), _mm256_loadu_ps(tt));
      for (int64_t k = 8; k < rank; k += 8) acc[j] = _mm256_fmadd_ps(load8<T>(b, k), _mm256_loadu_ps(tt + k), acc[j]);
    }
    float* yo = y + tok * out + o;
    _mm256_storeu_ps(yo, _mm256_fmadd_ps(scale, hsum8(acc), _mm256_loadu_ps(yo)));
  }
}

template <DType T>
void lora_delta_t(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  const int64_t rank = l.a.rows, in = l.a.cols, out = l.b.rows;
  const size_t a_row = l.a.row_bytes(), b_row = l.b.row_bytes();
  float* t = fast::scratch_of<float>(fast::Slot::Lora, static_cast<size_t>(n * rank));  // no allocation once warm
  lora_run(ctx, n * rank, in, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t tok = i / rank, k = i % rank;
      t[i] = dot<T>(l.a.w + k * a_row, x + tok * in, in);
    }
  });
  // Phase 2 in blocks of 8 output rows (the pool splits blocks, so every row is computed the
  // same way for any thread count).
  const int64_t blocks = rank % 8 == 0 ? out / 8 : 0;
  lora_run(ctx, blocks, 8 * n * rank, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) rows8<T>(l, t, n, blk * 8, y);
  });
  lora_run(ctx, out - blocks * 8, n * rank, [&](int64_t o0, int64_t o1) {
    for (int64_t o = blocks * 8 + o0; o < blocks * 8 + o1; ++o) {
      const uint8_t* b = l.b.w + o * b_row;
      for (int64_t tok = 0; tok < n; ++tok) y[tok * out + o] += l.scale * dot<T>(b, t + tok * rank, rank);
    }
  });
}

}  // namespace

bool lora_delta_avx2_usable() {
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma && f.f16c;
}

void lora_delta_avx2(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  switch (l.a.dtype) {
    case DType::F32: return lora_delta_t<DType::F32>(ctx, l, x, n, y);
    case DType::F16: return lora_delta_t<DType::F16>(ctx, l, x, n, y);
    default: return lora_delta_t<DType::BF16>(ctx, l, x, n, y);
  }
}

}  // namespace bs
