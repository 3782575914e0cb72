#include "cuda/argmax.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kArgBlock = 1024;

// One block of 1024 threads: each scans a stride (four logits per load where x is 16-byte
// aligned), then warps (warp_argmax) and the block reduce (value, index) pairs in the routing
// order (larger, or as large and earlier), which is a total order: the visiting order is free.
__global__ void argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ out) {
  __shared__ float warp_v[kArgBlock / 32];
  __shared__ uint32_t warp_i[kArgBlock / 32];
  const int tid = threadIdx.x, warp = tid >> 5;
  float bv = -INFINITY;
  uint32_t bi = 0xffffffffu;
  const auto take = [&](float v, int64_t i) {
    if (better(v, static_cast<uint32_t>(i), bv, bi)) bv = v, bi = static_cast<uint32_t>(i);
  };
  const int64_t n4 = (reinterpret_cast<uintptr_t>(x) & 15) == 0 ? n / 4 : 0;
  for (int64_t j = tid; j < n4; j += kArgBlock) {
    const float4 v = reinterpret_cast<const float4*>(x)[j];
    take(v.x, 4 * j), take(v.y, 4 * j + 1), take(v.z, 4 * j + 2), take(v.w, 4 * j + 3);
  }
  for (int64_t i = 4 * n4 + tid; i < n; i += kArgBlock) take(x[i], i);
  bi = warp_argmax(bv, bi, bv);
  if ((tid & 31) == 0) warp_v[warp] = bv, warp_i[warp] = bi;
  __syncthreads();
  if (tid != 0) return;
  for (int w = 1; w < kArgBlock / 32; ++w) {
    if (better(warp_v[w], warp_i[w], bv, bi)) bv = warp_v[w], bi = warp_i[w];
  }
  out[0] = bi == 0xffffffffu ? 0 : static_cast<int32_t>(bi);
}

}  // namespace

cudaError_t launch_argmax(const float* x, int64_t n, int32_t* out, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  BS_LAUNCH(argmax_kernel, 1, kArgBlock, s)(x, n, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
