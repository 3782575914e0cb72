// The fast kernel sets for arm64: NEON (baseline ARMv8-A) and NEON with the dot-product
// extension, chosen at run time; see fast-kernels.h for the algorithm.
#pragma once
#include "common/backend.h"

namespace bs {

const Backend& cpu_neon_backend();
const Backend& cpu_neon_dotprod_backend();

}  // namespace bs
