// The fast kernel sets for x86-64 (AVX2+FMA+F16C, AVX-512F/BW/VL), chosen at run time by
// CPU features; see fast-kernels.h for the algorithm.
#pragma once
#include "common/backend.h"

namespace bs {

const Backend& cpu_avx2_backend();
const Backend& cpu_avx512_backend();

}  // namespace bs
