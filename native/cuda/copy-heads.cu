#include "cuda/copy-heads.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One thread per copied float, (token, head, element) from the flat index.
__global__ void copy_heads_kernel(HeadCopy c) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= c.n * c.heads * c.width) return;
  const int64_t j = i % c.width, h = (i / c.width) % c.heads, t = i / (c.width * c.heads);
  c.dst[t * c.dst_token + h * c.dst_head + j] = c.src[t * c.src_token + h * c.src_head + j];
}

}  // namespace

cudaError_t launch_copy_heads(const HeadCopy& c, cudaStream_t s) {
  const int64_t total = c.n * c.heads * c.width;
  if (total <= 0) return cudaSuccess;
  BS_LAUNCH(copy_heads_kernel, static_cast<uint32_t>((total + kBlock - 1) / kBlock), kBlock, s)(c);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
