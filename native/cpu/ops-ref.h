// Scalar CPU reference kernels: the spec every other kernel set is tested against.
// Written to be obviously right (dequantise a row, accumulate in double), not fast.
#pragma once
#include "common/backend.h"

namespace bs {

const Backend& cpu_reference_backend();

}  // namespace bs
