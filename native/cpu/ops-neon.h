// The fast kernel sets for arm64: NEON (baseline ARMv8-A), NEON with the dot-product
// extension, and with the int8 matrix multiply one too, chosen at run time; see
// fast-kernels.h for the algorithm.
#pragma once
#include "common/backend.h"

namespace bs {

const Backend& cpu_neon_backend();
const Backend& cpu_neon_dotprod_backend();
const Backend& cpu_neon_i8mm_backend();

}  // namespace bs
