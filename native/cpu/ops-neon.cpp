// cpu-neon: the fast kernels over baseline ARMv8-A NEON (float path only; cores with the
// dot-product extension get cpu-neon-dotprod, which adds the integer decode path).
#include "cpu/ops-neon.h"

#include "common/cpu-features.h"
#include "cpu/fast-kernels.h"
#include "cpu/neon-traits.h"

namespace bs {

namespace {

bool usable() { return cpu_features().neon; }

}  // namespace

const Backend& cpu_neon_backend() {
  static const Backend b =
      FastKernels<Neon>::make("cpu-neon", "NEON float32 kernels (baseline ARMv8-A), MLX codes read in place", usable);
  return b;
}

}  // namespace bs
