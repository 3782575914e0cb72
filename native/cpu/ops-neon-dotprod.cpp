// cpu-neon-dotprod: the NEON kernels plus the integer decode path and prefill GEMM on the
// dot-product extension (neon-dot-traits.h). Compiled with +dotprod and chosen at run time
// when the core has it (Apple M*, Cortex-A76+, Orin).
#include "common/cpu-features.h"
#include "cpu/fast-kernels.h"
#include "cpu/neon-dot-traits.h"
#include "cpu/ops-neon.h"

namespace bs {

namespace {

bool usable() { return cpu_features().neon && cpu_features().dotprod; }

}  // namespace

const Backend& cpu_neon_dotprod_backend() {
  static const Backend b = FastKernels<NeonDot>::make(
      "cpu-neon-dotprod", "NEON + dot-product kernels (integer decode path), MLX codes read in place", usable);
  return b;
}

}  // namespace bs
