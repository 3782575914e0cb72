#include "cuda/qmatmul.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One warp per output row, its 32 lanes striding over the row's uint32 words (coalesced),
// partial sums joined by a warp reduction. Plain mode shares each weight word across up to
// kMatTokens tokens (grid.y = token chunks); gathered mode runs one row of work per grid.y.
__global__ void qmatmul_kernel(QMatArgs a, const float* __restrict__ x, float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5);
  if (row >= a.rows) return;  // the whole warp: no lane is left inside a reduction
  const bool gather = a.ids != nullptr;
  const int64_t i0 = gather ? blockIdx.y : static_cast<int64_t>(blockIdx.y) * kMatTokens;
  const int64_t left = a.n - i0;
  const int count = gather ? 1 : static_cast<int>(left < kMatTokens ? left : kMatTokens);
  int64_t mat = a.mat;
  if (gather) mat = a.slots ? a.slots[a.ids[i0]] : a.ids[i0];
  const int64_t xrow = gather ? i0 / a.x_div : i0;
  const int64_t words = a.cols * a.bits / 32, groups = a.cols / a.group;
  const int per_word = 32 / a.bits;
  const uint32_t mask = (1u << a.bits) - 1u;
  const uint8_t* codes = a.parts ? a.parts[3 * mat] : a.codes;
  const uint8_t* scales = a.parts ? a.parts[3 * mat + 1] : a.scales;
  const uint8_t* biases = a.parts ? a.parts[3 * mat + 2] : a.biases;
  const int64_t base = a.parts ? row : mat * a.rows + row;
  const uint32_t* w = reinterpret_cast<const uint32_t*>(codes) + base * words;
  float acc[kMatTokens];
  for (int t = 0; t < kMatTokens; ++t) acc[t] = 0.0f;
  for (int64_t wi = lane; wi < words; wi += 32) {
    const uint32_t word = w[wi];
    const int64_t c0 = wi * per_word;
    const int64_t g = base * groups + c0 / a.group;  // a word never straddles groups (group ≥ 32)
    const float s = load_elem(scales, a.scale_type, g), b = load_elem(biases, a.scale_type, g);
    for (int t = 0; t < count; ++t) {
      const float* xt = x + (xrow + t) * a.cols + c0;
      float dot = 0.0f, sum = 0.0f;
      for (int e = 0; e < per_word; ++e) {
        dot += static_cast<float>((word >> (e * a.bits)) & mask) * xt[e];
        sum += xt[e];
      }
      acc[t] += s * dot + b * sum;  // Σ (s·q + b)·x = s·Σq·x + b·Σx
    }
  }
  for (int t = 0; t < count; ++t) {
    const float total = warp_sum(acc[t]);
    if (lane == 0) y[(i0 + t) * a.rows + row] = total;
  }
}

}  // namespace

cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, float* y, cudaStream_t s) {
  if (a.n <= 0 || a.rows <= 0) return cudaSuccess;
  const int64_t chunks = a.ids ? a.n : (a.n + kMatTokens - 1) / kMatTokens;
  const dim3 grid(static_cast<uint32_t>((a.rows + kMatWarps - 1) / kMatWarps), static_cast<uint32_t>(chunks));
  BS_LAUNCH(qmatmul_kernel, grid, kMatWarps * 32, s)(a, x, y);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
