// Device-side element conversions shared by the CUDA kernels (scales and biases are stored as
// F16, BF16 or F32 exactly as in the file).
#pragma once
#include <cuda_fp16.h>
#include <cstdint>

namespace bs::cuda {

// dtype codes passed to kernels: 0 = F32, 1 = F16, 2 = BF16.
enum ScaleType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

__device__ __forceinline__ float load_scale(const uint8_t* p, int type, int64_t i) {
  if (type == kF32) return reinterpret_cast<const float*>(p)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
  if (type == kBF16) return __uint_as_float(static_cast<uint32_t>(h) << 16);
  return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace bs::cuda
