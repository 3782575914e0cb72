// Greedy sampling on the device: out[0] = the index of the largest of x[0..n), ties to the lower
// index as std::max_element (NaNs never win; 0 when nothing compares), so a decode step returns
// four bytes instead of the logits.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_argmax(const float* x, int64_t n, int32_t* out, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
