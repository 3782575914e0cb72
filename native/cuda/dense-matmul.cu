#include "cuda/dense-matmul.cuh"

#include <algorithm>

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

constexpr int kDenseWarps = kBlock / 32;

// A product with rows at least this long splits each row over a block's warps: a LoRA A step
// (rank × hidden), a router (experts × hidden) would otherwise leave a few hundred warps each
// walking cols/32 dependent loads.
constexpr int64_t kDenseSplitCols = kBlock;

__device__ __forceinline__ bool split_rows(const DenseArgs& a) { return a.cols >= kDenseSplitCols; }

// Σ_c W[row, c] x[i0 + t, c] over the columns c = first, first + step, … (count tokens).
__device__ __forceinline__ void dot_columns(const DenseArgs& a, const float* x, int64_t base, int64_t i0, int count,
                                            int64_t first, int64_t step, float* acc) {
  for (int t = 0; t < kMatTokens; ++t) acc[t] = 0.0f;
  for (int64_t c = first; c < a.cols; c += step) {
    const float wv = load_elem(a.w, a.type, base + c);
    for (int t = 0; t < count; ++t) acc[t] += wv * x[(i0 + t) * a.cols + c];
  }
}

__device__ __forceinline__ void store(const DenseArgs& a, float* y, int64_t i, int64_t row, float total) {
  float* out = y + i * a.rows + row;
  *out = a.accumulate ? *out + a.alpha * total : a.alpha * total;
}

// kBlock threads; grid.y = token chunks of kMatTokens sharing each weight load; grid.z picks the
// set's product (copied by selects). Each product by its own shape, so its result is the same
// alone or in a set: rows of kDenseSplitCols columns or more take a block each (warps over the
// columns, their sums added in warp order through shared memory), shorter ones a warp each.
__global__ void dense_matmul_kernel(DenseSet set) {
  __shared__ float part[kDenseWarps][kMatTokens];
  DenseArgs a = set.a[0];
  const float* x = set.x[0];
  float* y = set.y[0];
  if (blockIdx.z == 1) a = set.a[1], x = set.x[1], y = set.y[1];
  if (blockIdx.z == 2) a = set.a[2], x = set.x[2], y = set.y[2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool split = split_rows(a);
  const int64_t row = split ? static_cast<int64_t>(blockIdx.x) : static_cast<int64_t>(blockIdx.x) * kDenseWarps + warp;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * kMatTokens, left = a.n - i0;
  if (row >= a.rows || left <= 0) return;  // block-uniform when split (a shorter product of the set)
  const int count = static_cast<int>(left < kMatTokens ? left : kMatTokens);
  const int64_t base = (a.mat * a.rows + row) * a.cols;
  float acc[kMatTokens];
  if (!split) {
    dot_columns(a, x, base, i0, count, lane, 32, acc);
    for (int t = 0; t < count; ++t) {
      const float total = warp_sum(acc[t]);
      if (lane == 0) store(a, y, i0 + t, row, total);
    }
    return;
  }
  dot_columns(a, x, base, i0, count, threadIdx.x, kBlock, acc);
  for (int t = 0; t < count; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0) part[warp][t] = s;
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < count) {
    float total = 0.0f;
    for (int w = 0; w < kDenseWarps; ++w) total += part[w][threadIdx.x];
    store(a, y, i0 + threadIdx.x, row, total);
  }
}

}  // namespace

cudaError_t launch_dense_matmul(const DenseArgs& a, const float* x, float* y, cudaStream_t s) {
  DenseSet set{};
  set.a[0] = a, set.x[0] = x, set.y[0] = y, set.count = 1;
  return launch_dense_matmul_set(set, s);
}

cudaError_t launch_dense_matmul_set(const DenseSet& set, cudaStream_t s) {
  int64_t blocks = 0, n = 0;
  for (int i = 0; i < set.count; ++i) {
    const DenseArgs& a = set.a[i];
    if (a.rows <= 0 || a.n <= 0) continue;
    const int64_t b = a.cols >= kDenseSplitCols ? a.rows : (a.rows + kDenseWarps - 1) / kDenseWarps;
    blocks = std::max(blocks, b), n = std::max(n, a.n);
  }
  if (blocks == 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>(blocks), static_cast<uint32_t>((n + kMatTokens - 1) / kMatTokens),
                  static_cast<uint32_t>(set.count));
  BS_LAUNCH(dense_matmul_kernel, grid, kBlock, s)(set);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
