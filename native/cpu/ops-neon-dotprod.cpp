// cpu-neon-dotprod: the NEON kernels plus the integer decode path on the dot-product
// extension (sdot: four s8 × s8 products per 32-bit lane; the nibbles 0..15 fit s8). Compiled
// with +dotprod and chosen at run time when the core has it (Apple M*, Cortex-A76+, Orin).
#include "common/cpu-features.h"
#include "cpu/fast-kernels.h"
#include "cpu/lora-fast.h"
#include "cpu/neon-traits.h"
#include "cpu/ops-neon.h"

namespace bs {

namespace {

struct NeonDot : Neon {
  static constexpr bool kIntDot = true;
  static F cvt(I v) { return vcvtq_f32_s32(vreinterpretq_s32_u32(v)); }
  // Σ_k 2^(7k) · (nibbles · limb k) per 32-bit lane (8 codes each).
  static I chunk_isum(I w, const int8_t* q) {
    const uint8x16_t b = vreinterpretq_u8_u32(w);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
    auto limb = [&](const int8_t* p) {
      return vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(p)), hi, vld1q_s8(p + 16));
    };
    const int32x4_t s = vaddq_s32(vaddq_s32(limb(q), vshlq_n_s32(limb(q + 32), 7)), vshlq_n_s32(limb(q + 64), 14));
    return vreinterpretq_u32_s32(s);
  }
  // The same for two rows' codes against one activation: each limb vector is loaded once.
  static void chunk_isum2(I w0, I w1, const int8_t* q, I& s0, I& s1) {
    const uint8x16_t b0 = vreinterpretq_u8_u32(w0), b1 = vreinterpretq_u8_u32(w1);
    const int8x16_t lo0 = vreinterpretq_s8_u8(vandq_u8(b0, vdupq_n_u8(0x0F)));
    const int8x16_t hi0 = vreinterpretq_s8_u8(vshrq_n_u8(b0, 4));
    const int8x16_t lo1 = vreinterpretq_s8_u8(vandq_u8(b1, vdupq_n_u8(0x0F)));
    const int8x16_t hi1 = vreinterpretq_s8_u8(vshrq_n_u8(b1, 4));
    int32x4_t a0[3], a1[3];
    // Unrolled: -O2 keeps this loop, so the per-limb sums would go through the stack.
#pragma GCC unroll 3
    for (int k = 0; k < 3; ++k) {
      const int8x16_t xl = vld1q_s8(q + 32 * k), xh = vld1q_s8(q + 32 * k + 16);
      a0[k] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo0, xl), hi0, xh);
      a1[k] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo1, xl), hi1, xh);
    }
    s0 = vreinterpretq_u32_s32(vaddq_s32(vaddq_s32(a0[0], vshlq_n_s32(a0[1], 7)), vshlq_n_s32(a0[2], 14)));
    s1 = vreinterpretq_u32_s32(vaddq_s32(vaddq_s32(a1[0], vshlq_n_s32(a1[1], 7)), vshlq_n_s32(a1[2], 14)));
  }
};

bool usable() { return cpu_features().neon && cpu_features().dotprod; }

}  // namespace

const Backend& cpu_neon_dotprod_backend() {
  static const Backend b = FastKernels<NeonDot>::make(
      "cpu-neon-dotprod", "NEON + dot-product kernels (integer decode path), MLX codes read in place", usable, lora_delta_neon);
  return b;
}

}  // namespace bs
