#include "cuda/to-half.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// grid.y picks the pair (the decoder's K and V rows in one launch); with `row`, both outputs
// start row[0] rows of `row_elems` further (a KV cache row read from device memory).
__global__ void to_half_kernel(const float* __restrict__ x0, uint16_t* __restrict__ out0, const float* __restrict__ x1,
                               uint16_t* __restrict__ out1, int64_t n, const int32_t* __restrict__ row,
                               int64_t row_elems) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float* x = blockIdx.y == 0 ? x0 : x1;
  uint16_t* out = (blockIdx.y == 0 ? out0 : out1) + (row ? row[0] * row_elems : 0);
  if (i < n) out[i] = float_to_half(x[i]);
}

cudaError_t launch(const float* x0, uint16_t* out0, const float* x1, uint16_t* out1, int64_t n, const int32_t* row,
                   int64_t row_elems, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((n + kBlock - 1) / kBlock), x1 ? 2u : 1u);
  BS_LAUNCH(to_half_kernel, grid, kBlock, s)(x0, out0, x1, out1, n, row, row_elems);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_to_half(const float* x, int64_t n, uint16_t* out, cudaStream_t s) {
  return launch(x, out, nullptr, nullptr, n, nullptr, 0, s);
}

cudaError_t launch_to_half_pair(const float* x0, uint16_t* out0, const float* x1, uint16_t* out1, int64_t n,
                                cudaStream_t s, const int32_t* row, int64_t row_elems) {
  return launch(x0, out0, x1, out1, n, row, row_elems, s);
}

}  // namespace bs::BS_CUDA_NS
