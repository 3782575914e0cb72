// cpu-avx2: the fast kernels over 8-lane AVX2 vectors (avx2-traits.h).
#include "cpu/ops-x86.h"

#include "common/cpu-features.h"
#include "cpu/avx2-traits.h"
#include "cpu/fast-kernels.h"

namespace bs {

namespace {

bool usable() {
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma && f.f16c;
}

}  // namespace

const Backend& cpu_avx2_backend() {
  static const Backend b =
      FastKernels<Avx2>::make("cpu-avx2", "AVX2+FMA+F16C float32 kernels, MLX codes read in place", usable);
  return b;
}

}  // namespace bs
