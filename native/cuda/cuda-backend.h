// The CUDA kernel set. Compiled only when CMake finds nvcc (BRAINSTEM_WITH_CUDA); usable only
// when a CUDA device answers at run time, so a binary built with it still runs without a GPU.
#pragma once
#include "common/backend.h"

namespace bs {

const Backend& cuda_backend();

}  // namespace bs
