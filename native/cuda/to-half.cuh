// float32 → IEEE half on the device, round to nearest even (the reference's f32_to_f16): the
// decoder's k and v rows, normed and rotated in float32, stored into an f16 KV cache.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_to_half(const float* x, int64_t n, uint16_t* out, cudaStream_t s);
// Two arrays of n in one launch (x0 into out0, x1 into out1); with `row` (device memory), both
// outputs start row[0] · row_elems elements further.
cudaError_t launch_to_half_pair(const float* x0, uint16_t* out0, const float* x1, uint16_t* out1, int64_t n,
                                cudaStream_t s, const int32_t* row = nullptr, int64_t row_elems = 0);

}  // namespace bs::BS_CUDA_NS
