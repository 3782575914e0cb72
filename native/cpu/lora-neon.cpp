// NEON LoRA delta (arm64: Apple silicon, Jetson): the AVX2 kernel's two phases with 4-wide FMAs,
// F16 widened by vcvt, BF16 by a 16-bit shift; horizontal sums by vaddvq.
#include <arm_neon.h>

#include "common/cpu-features.h"
#include "cpu/fast-common.h"
#include "cpu/lora-fast.h"

namespace bs {

namespace {

template <DType T>
inline float32x4_t load4(const uint8_t* p, int64_t i) {
  if constexpr (T == DType::F32) {
    return vld1q_f32(reinterpret_cast<const float*>(p) + i);
  } else if constexpr (T == DType::F16) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p) + i)));
  } else {
    const uint32x4_t w = vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p) + i), 16);
    return vreinterpretq_f32_u32(w);
  }
}

template <DType T>
float dot(const uint8_t* row, const float* x, int64_t n) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0), a2 = vdupq_n_f32(0), a3 = vdupq_n_f32(0);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    a0 = vfmaq_f32(a0, load4<T>(row, c), vld1q_f32(x + c));
    a1 = vfmaq_f32(a1, load4<T>(row, c + 4), vld1q_f32(x + c + 4));
    a2 = vfmaq_f32(a2, load4<T>(row, c + 8), vld1q_f32(x + c + 8));
    a3 = vfmaq_f32(a3, load4<T>(row, c + 12), vld1q_f32(x + c + 12));
  }
  for (; c + 4 <= n; c += 4) a0 = vfmaq_f32(a0, load4<T>(row, c), vld1q_f32(x + c));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; c < n; ++c) s += load_float(row, T, static_cast<size_t>(c)) * x[c];
  return s;
}

template <DType T>
void lora_delta_t(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  const int64_t rank = l.a.rows, in = l.a.cols, out = l.b.rows;
  const size_t a_row = l.a.row_bytes(), b_row = l.b.row_bytes();
  float* t = fast::scratch_of<float>(fast::Slot::Lora, static_cast<size_t>(n * rank));  // no allocation once warm
  lora_run(ctx, n * rank, in, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) t[i] = dot<T>(l.a.w + (i % rank) * a_row, x + (i / rank) * in, in);
  });
  lora_run(ctx, out, n * rank, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const uint8_t* b = l.b.w + o * b_row;
      for (int64_t tok = 0; tok < n; ++tok) y[tok * out + o] += l.scale * dot<T>(b, t + tok * rank, rank);
    }
  });
}

}  // namespace

bool lora_delta_neon_usable() { return cpu_features().neon; }

void lora_delta_neon(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  switch (l.a.dtype) {
    case DType::F32: return lora_delta_t<DType::F32>(ctx, l, x, n, y);
    case DType::F16: return lora_delta_t<DType::F16>(ctx, l, x, n, y);
    default: return lora_delta_t<DType::BF16>(ctx, l, x, n, y);
  }
}

}  // namespace bs
