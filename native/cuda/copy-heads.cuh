// Strided head copies on the device: dst[t, h, 0..width) = src[t, h, 0..width) with each side's
// own token and head strides (floats). Splits q_proj's per-head [q | gate] rows and qwen3_next's
// fused per-k-head [q | k | v | z] and [b | a] projections into the layouts the kernels read.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct HeadCopy {
  const float* src;
  int64_t src_token, src_head;
  float* dst;
  int64_t dst_token, dst_head;
  int64_t n, heads, width;
};

cudaError_t launch_copy_heads(const HeadCopy& c, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
