// The list of compiled backends. Explicit (not self-registering) because the core is a
// static library and unreferenced registration objects would be dropped by the linker.
#include "common/backend.h"

#include "cpu/ops-ref.h"
#include "cpu/thread-pool.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda/cuda-backend.h"
#endif

namespace bs {

void ExecCtx::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) const {
  if (pool) {
    pool->parallel_for(n, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

const char* op_name(Op op) {
  static const char* names[] = {"qmatvec", "qmatmul", "dense_matmul", "gather_matmul", "embed", "rmsnorm",
                                "rope", "attention", "route_softmax_topk", "route_sigmoid_group", "silu_mul",
                                "add", "lora_delta"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::Count));
  return names[static_cast<int>(op)];
}

const std::vector<const Backend*>& compiled_backends() {
  static const std::vector<const Backend*> all = {
      &cpu_reference_backend(),
#ifdef BRAINSTEM_WITH_CUDA
      &cuda_backend(),
#endif
  };
  return all;
}

const Backend& reference_backend() { return cpu_reference_backend(); }

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : compiled_backends()) {
    if (name == b->name) return b;
  }
  return nullptr;
}

}  // namespace bs
