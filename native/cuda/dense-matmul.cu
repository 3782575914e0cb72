#include "cuda/dense-matmul.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One warp per output row, lanes striding over the columns; up to kMatTokens tokens share each
// weight load (grid.y = token chunks).
__global__ void dense_matmul_kernel(DenseArgs a, const float* __restrict__ x, float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5);
  if (row >= a.rows) return;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kMatTokens, left = a.n - i0;
  const int count = static_cast<int>(left < kMatTokens ? left : kMatTokens);
  const int64_t base = (a.mat * a.rows + row) * a.cols;
  float acc[kMatTokens];
  for (int t = 0; t < kMatTokens; ++t) acc[t] = 0.0f;
  for (int64_t c = lane; c < a.cols; c += 32) {
    const float wv = load_elem(a.w, a.type, base + c);
    for (int t = 0; t < count; ++t) acc[t] += wv * x[(i0 + t) * a.cols + c];
  }
  for (int t = 0; t < count; ++t) {
    const float total = a.alpha * warp_sum(acc[t]);
    float* out = y + (i0 + t) * a.rows + row;
    if (lane == 0) *out = a.accumulate ? *out + total : total;
  }
}

}  // namespace

cudaError_t launch_dense_matmul(const DenseArgs& a, const float* x, float* y, cudaStream_t s) {
  if (a.n <= 0 || a.rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((a.rows + kMatWarps - 1) / kMatWarps),
                  static_cast<uint32_t>((a.n + kMatTokens - 1) / kMatTokens));
  BS_LAUNCH(dense_matmul_kernel, grid, kMatWarps * 32, s)(a, x, y);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
