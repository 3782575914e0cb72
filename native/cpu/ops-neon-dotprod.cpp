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
  // A chunk's activation limbs: [limb k][lo, hi] vectors of 16 bytes.
  static constexpr int kLimbVecs = 6;
  static void load_limbs(const int8_t* q, I* x) {  // unrolled by hand: -O2 keeps a loop, through the stack
    x[0] = vreinterpretq_u32_s8(vld1q_s8(q + 0));
    x[1] = vreinterpretq_u32_s8(vld1q_s8(q + 16));
    x[2] = vreinterpretq_u32_s8(vld1q_s8(q + 32));
    x[3] = vreinterpretq_u32_s8(vld1q_s8(q + 48));
    x[4] = vreinterpretq_u32_s8(vld1q_s8(q + 64));
    x[5] = vreinterpretq_u32_s8(vld1q_s8(q + 80));
  }
  // Σ_k 2^(7k) · (nibbles · limb k) per 32-bit lane (8 codes each), Horner from the top limb.
  static I isum(I w, const I* x) {
    const uint8x16_t b = vreinterpretq_u8_u32(w);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(b, 4));
    auto limb = [&](int32x4_t acc, int k) {
      return vdotq_s32(vdotq_s32(acc, lo, vreinterpretq_s8_u32(x[2 * k])), hi, vreinterpretq_s8_u32(x[2 * k + 1]));
    };
    const int32x4_t a = limb(vshlq_n_s32(limb(vdupq_n_s32(0), 2), 7), 1);
    return vreinterpretq_u32_s32(limb(vshlq_n_s32(a, 7), 0));
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
