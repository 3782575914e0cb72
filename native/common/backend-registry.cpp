// The list of compiled backends. Explicit (not self-registering) because the core is a
// static library and unreferenced registration objects would be dropped by the linker.
#include "common/backend.h"

#include <string>

#include "cpu/ops-ref.h"
#include "cpu/thread-pool.h"
#if defined(BRAINSTEM_X86)
#include "cpu/ops-x86.h"
#elif defined(BRAINSTEM_ARM64)
#include "cpu/ops-neon.h"
#endif
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda/cuda-backend.h"
#endif
#ifdef BRAINSTEM_WITH_METAL
#include "metal/metal-backend.h"
#endif

namespace bs {

int ExecCtx::threads() const { return pool ? pool->size() : 1; }

void ExecCtx::parallel_for(int64_t n, RangeFn fn, int64_t grain) const {
  if (pool) {
    pool->parallel_for(n, fn, grain);
  } else if (n > 0) {
    fn(0, n);
  }
}

const char* op_name(Op op) {
  static const char* names[] = {"qmatvec",  "qmatmul", "dense_matmul", "gather_matmul",      "embed",
                                "rmsnorm",  "rope",    "attention",    "route_softmax_topk", "route_sigmoid_group",
                                "silu_mul", "add",     "lora_delta"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::Count));
  return names[static_cast<int>(op)];
}

namespace {

// The CPU kernel sets, reference first, then by preference: the only candidates for "auto".
const std::vector<const Backend*>& cpu_backends() {
  static const std::vector<const Backend*> cpu = {
    &cpu_reference_backend(),
#if defined(BRAINSTEM_X86)
    &cpu_avx2_backend(),
    &cpu_avx512_backend(),
#elif defined(BRAINSTEM_ARM64)
    &cpu_neon_backend(),
    &cpu_neon_dotprod_backend(),
    &cpu_neon_i8mm_backend(),
#endif
  };
  return cpu;
}

}  // namespace

const std::vector<const Backend*>& compiled_backends() {
  static const std::vector<const Backend*> all = [] {
    std::vector<const Backend*> v = cpu_backends();
#ifdef BRAINSTEM_WITH_CUDA
    v.push_back(&cuda::backend());  // "auto" only after its smoke test passes
#endif
#ifdef BRAINSTEM_WITH_METAL
    v.push_back(&metal_backend());  // likewise
#endif
    return v;
  }();
  return all;
}

const Backend& best_backend() {
#ifdef BRAINSTEM_WITH_CUDA
  // Why not: the kernel set's detail (system.info, doctor; the daemon logs it at model load).
  if (cuda::auto_ready(nullptr)) return cuda::backend();
#endif
  const Backend* best = &reference_backend();
  for (const Backend* b : cpu_backends()) {
    if (b->usable()) best = b;
  }
  return *best;
}

const Backend& reference_backend() { return cpu_reference_backend(); }

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : compiled_backends()) {
    if (name == b->name) return b;
  }
  return nullptr;
}

}  // namespace bs
