#include "cuda/qmatmul.cuh"
#include "cuda/device-math.cuh"

namespace bs::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;

__global__ void qmatmul_kernel(QMatArgs a, const float* __restrict__ x, int64_t m, float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t i = blockIdx.y;
  if (row >= a.rows || i >= m) return;
  const int64_t mat = a.mats ? a.mats[i] : 0;
  const int64_t words_per_row = a.cols * a.bits / 32;
  const int64_t groups = a.cols / a.group;
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a.codes) + (mat * a.rows + row) * words_per_row;
  const int64_t sb0 = (mat * a.rows + row) * groups;
  const int per_word = 32 / a.bits;
  const uint32_t mask = (1u << a.bits) - 1u;
  const float* xi = x + i * a.cols;
  float acc = 0.0f;
  for (int64_t wi = lane; wi < words_per_row; wi += 32) {
    const uint32_t word = w[wi];
    const int64_t c0 = wi * per_word;
    const int64_t g = c0 / a.group;  // a word never straddles groups (group ≥ 32 ≥ per_word)
    const float scale = load_scale(a.scales, a.scale_type, sb0 + g);
    const float bias = load_scale(a.biases, a.scale_type, sb0 + g);
    float dot = 0.0f, sum_x = 0.0f;
    for (int p = 0; p < per_word; ++p) {
      const float q = static_cast<float>((word >> (p * a.bits)) & mask);
      dot += q * xi[c0 + p];
      sum_x += xi[c0 + p];
    }
    acc += scale * dot + bias * sum_x;  // Σ (s·q + b)·x = s·Σq·x + b·Σx
  }
  acc = warp_sum(acc);
  if (lane == 0) y[i * a.rows + row] = acc;
}

}  // namespace

cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, int64_t m, float* y, cudaStream_t s) {
  if (m <= 0 || a.rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((a.rows + kWarpsPerBlock - 1) / kWarpsPerBlock), static_cast<unsigned>(m));
  qmatmul_kernel<<<grid, kWarpsPerBlock * 32, 0, s>>>(a, x, m, y);
  return cudaGetLastError();
}

}  // namespace bs::cuda
