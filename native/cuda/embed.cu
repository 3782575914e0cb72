#include "cuda/embed.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One thread per element (grid.y = token).
__global__ void embed_kernel(EmbedArgs a, const int32_t* __restrict__ ids, float* __restrict__ out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (c >= a.cols) return;
  const int64_t row = ids[i];
  float v;
  if (a.bits == 0) {
    v = load_elem(a.w, a.type, row * a.cols + c);
  } else {
    const int64_t bit = c * a.bits, row_words = a.cols * a.bits / 32;
    const uint32_t word = reinterpret_cast<const uint32_t*>(a.w)[row * row_words + bit / 32];
    const uint32_t q = (word >> (bit % 32)) & ((1u << a.bits) - 1u);
    const int64_t g = row * (a.cols / a.group) + c / a.group;
    v = load_elem(a.scales, a.type, g) * static_cast<float>(q) + load_elem(a.biases, a.type, g);
  }
  out[i * a.cols + c] = v;
}

}  // namespace

cudaError_t launch_embed(const EmbedArgs& a, const int32_t* ids, float* out, cudaStream_t s) {
  if (a.n <= 0 || a.cols <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((a.cols + kBlock - 1) / kBlock), static_cast<uint32_t>(a.n));
  BS_LAUNCH(embed_kernel, grid, kBlock, s)(a, ids, out);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
