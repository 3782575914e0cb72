// Embedding lookup on the device: out[i, :] = row ids[i] of the table, affine (bits > 0, the MLX
// layout) or dense; ids are a device buffer.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct EmbedArgs {
  const uint8_t* w;  // codes (affine) or elements (dense)
  const uint8_t* scales;
  const uint8_t* biases;
  int type;  // ScaleType of scales/biases (affine) or of the elements (dense)
  int bits, group;
  int64_t cols, n;
};

cudaError_t launch_embed(const EmbedArgs& a, const int32_t* ids, float* out, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
