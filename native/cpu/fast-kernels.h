// The fast CPU kernel sets (cpu-avx2, cpu-avx512, cpu-neon, cpu-neon-dotprod): every op
// written once over a SIMD traits type V that each ISA defines with its intrinsics
// (avx2-traits.h, ops-avx512.cpp, neon-traits.h, ops-neon-dotprod.cpp), so every ISA runs the
// same algorithm compiled with its own flags. The ops by section: fast-qmatmul.h (quantised
// matmuls, with fast-codes.h, fast-activations.h, fast-int-dot.h and fast-gemm.h),
// fast-dense.h, fast-elementwise.h, fast-attention.h, fast-lora.h; their shared helpers in
// fast-vector.h.
#pragma once
#include "common/backend.h"
#include "cpu/fast-attention.h"
#include "cpu/fast-codes.h"
#include "cpu/fast-dense.h"
#include "cpu/fast-elementwise.h"
#include "cpu/fast-lora.h"
#include "cpu/fast-qmatmul.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

// V: the traits of every op; LV: those of the LoRA delta (V, except that cpu-avx512 keeps the
// 8-lane AVX2 LoRA kernel it always had, bit-identical to cpu-avx2's).
template <class V, class LV = V>
struct FastKernels {
  using QMatMul = FastQMatMul<V>;
  using Elementwise = FastElementwise<V>;

  static bool accepts(Op op, const WeightMatrix* w) {
    switch (op) {
      case Op::QMatVec:
      case Op::QMatMul:
      case Op::GatherMatMul:
        return w && w->quantised() && (w->bits == 4 || w->bits == 8) && w->cols % 32 == 0 &&
               w->cols <= FastCodes<V>::kMaxCols && (w->group == 32 || w->group == 64 || w->group == 128);
      case Op::DenseMatMul: return w && !w->quantised() && is_float_weight(w->dtype);
      default: return true;
    }
  }

  // Embed and routing are left to the reference: its embed (one row per token, dequant_row)
  // is the fast path, and its routing is allocation-free and O(E·k) per token, so a copy
  // would add nothing.
  static Backend make(const char* name, const char* detail, bool (*usable)()) {
    return Backend{.name = name,
                   .detail = detail,
                   .usable = usable,
                   .accepts = accepts,
                   .k = {.qmatvec = QMatMul::qmatvec,
                         .qmatmul = QMatMul::qmatmul,
                         .dense_matmul = FastDense<V>::dense_matmul,
                         .gather_matmul = QMatMul::gather_matmul,
                         .gather_matmul_multi = QMatMul::gather_matmul_multi,
                         .rmsnorm = Elementwise::rmsnorm,
                         .rope = Elementwise::rope,
                         .attention = FastAttention<V>::attention,
                         .silu_mul = Elementwise::silu_mul,
                         .add = Elementwise::add,
                         .lora_delta = FastLora<LV>::lora_delta}};
  }
};

}  // namespace
}  // namespace bs
