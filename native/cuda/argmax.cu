#include "cuda/argmax.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One block: each thread scans a stride, then warps (warp_argmax) and the block reduce
// (value, index) pairs in the routing order (larger, or as large and earlier).
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ out) {
  __shared__ float warp_v[kBlock / 32];
  __shared__ uint32_t warp_i[kBlock / 32];
  const int tid = threadIdx.x, warp = tid >> 5;
  float bv = -INFINITY;
  uint32_t bi = 0xffffffffu;
  for (int64_t i = tid; i < n; i += kBlock) {
    if (better(x[i], static_cast<uint32_t>(i), bv, bi)) bv = x[i], bi = static_cast<uint32_t>(i);
  }
  bi = warp_argmax(bv, bi, bv);
  if ((tid & 31) == 0) warp_v[warp] = bv, warp_i[warp] = bi;
  __syncthreads();
  if (tid != 0) return;
  for (int w = 1; w < kBlock / 32; ++w) {
    if (better(warp_v[w], warp_i[w], bv, bi)) bv = warp_v[w], bi = warp_i[w];
  }
  out[0] = bi == 0xffffffffu ? 0 : static_cast<int32_t>(bi);
}

}  // namespace

cudaError_t launch_argmax(const float* x, int64_t n, int32_t* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  BS_LAUNCH(argmax_kernel, 1, kBlock, s)(x, n, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
