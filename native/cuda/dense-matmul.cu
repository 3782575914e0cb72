#include "cuda/dense-matmul.cuh"

#include <algorithm>

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One warp per output row, lanes striding over the columns; up to kMatTokens tokens share each
// weight load (grid.y = token chunks); grid.z picks the set's product (copied by selects).
__global__ void dense_matmul_kernel(DenseSet set) {
  DenseArgs a = set.a[0];
  const float* x = set.x[0];
  float* y = set.y[0];
  if (blockIdx.z == 1) a = set.a[1], x = set.x[1], y = set.y[1];
  if (blockIdx.z == 2) a = set.a[2], x = set.x[2], y = set.y[2];
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5);
  if (row >= a.rows) return;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kMatTokens, left = a.n - i0;
  if (left <= 0) return;  // a shorter product of the set
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
  DenseSet set{};
  set.a[0] = a, set.x[0] = x, set.y[0] = y, set.count = 1;
  return launch_dense_matmul_set(set, s);
}

cudaError_t launch_dense_matmul_set(const DenseSet& set, cudaStream_t s) {
  int64_t rows = 0, n = 0;
  for (int i = 0; i < set.count; ++i) rows = std::max(rows, set.a[i].rows), n = std::max(n, set.a[i].n);
  if (n <= 0 || rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>((rows + kMatWarps - 1) / kMatWarps),
                  static_cast<uint32_t>((n + kMatTokens - 1) / kMatTokens), static_cast<uint32_t>(set.count));
  BS_LAUNCH(dense_matmul_kernel, grid, kMatWarps * 32, s)(set);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
