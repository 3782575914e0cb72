// Fast CPU kernels of the LoRA delta (Op::LoraDelta) for the fast kernel sets' tables: float32
// accumulation with F16/BF16/F32 A and B widened in registers. Each is compiled only for its
// ISA (the file name carries the flags) and needs the features its *_usable() checks.
#pragma once
#include "common/backend.h"

namespace bs {

#if defined(BRAINSTEM_X86)
// AVX2 + FMA + F16C.
bool lora_delta_avx2_usable();
void lora_delta_avx2(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y);
#endif

#if defined(BRAINSTEM_ARM64)
// NEON (armv8.2-a, fp16 conversions).
bool lora_delta_neon_usable();
void lora_delta_neon(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y);
#endif

}  // namespace bs
