// SIMD traits for the arm64 kernel sets (cpu-neon, cpu-neon-dotprod): 4-lane NEON vectors,
// a 4-bit chunk is 32 codes in 16 bytes, which every group size covers, so there are no
// partial chunks or split scales. Included only by the arm64 kernel files.
#pragma once
#include <arm_neon.h>

#include <cstdint>

namespace bs {
namespace {

struct Neon {
  static constexpr int L = 4;
  static constexpr bool kIntDot = false;     // the integer path needs the dot-product extension
  static constexpr int kStreamLocality = 3;  // L1 weight prefetch: the L2 hint is measured on x86 only
  static constexpr bool kIntGemm = false;
  static constexpr int kIntGemmBytes = 0;
  static constexpr int kIntRunBytes = 0;
  static constexpr int kGemmT = 4, kGemmR = 6;  // prefill register tile: tokens × rows (32 registers)
  using F = float32x4_t;
  using I = uint32x4_t;

  static F zero() { return vdupq_n_f32(0.0f); }
  static F set1(float v) { return vdupq_n_f32(v); }
  static F load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, F v) { vst1q_f32(p, v); }
  static F add(F a, F b) { return vaddq_f32(a, b); }
  static F sub(F a, F b) { return vsubq_f32(a, b); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F div(F a, F b) { return vdivq_f32(a, b); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static F neg(F a) { return vnegq_f32(a); }
  static F min(F a, F b) { return vminq_f32(a, b); }
  static F max(F a, F b) { return vmaxq_f32(a, b); }
  static F round(F a) { return vrndnq_f32(a); }
  static F pow2i(F n) {
    const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static float hsum(F v) { return vaddvq_f32(v); }

  static I load_codes(const uint8_t* p) { return vreinterpretq_u32_u8(vld1q_u8(p)); }
  static I load_codes_part(const uint8_t* p, int bytes) {
    uint8_t tmp[16] = {};
    __builtin_memcpy(tmp, p, bytes);
    return vreinterpretq_u32_u8(vld1q_u8(tmp));
  }
  template <uint32_t M>
  static F masked(I w) {
    return vcvtq_f32_u32(vandq_u32(w, vdupq_n_u32(M)));
  }
  template <int S>
  static F top(I w) {
    return vcvtq_f32_u32(vshrq_n_u32(w, S));
  }
  // Every group spans ≥ 4 lanes here, so lane_scales always broadcasts; kept for the interface.
  static F expand(const float* s, int) { return vdupq_n_f32(s[0]); }
  static F load_bf16(const uint8_t* p) {
    const uint16x4_t h = vreinterpret_u16_u8(vld1_u8(p));
    return vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(h), 16));
  }
  static F load_f16(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }
};

}  // namespace
}  // namespace bs
