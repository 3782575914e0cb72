#include "cuda/prerouter.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One warp per output row.
__global__ void prerouter_linear_kernel(PrerouterArgs a, const float* __restrict__ hidden,
                                        const int32_t* __restrict__ cur, const int32_t* __restrict__ prev,
                                        float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5);
  if (row >= a.rows) return;
  const int64_t H = a.hidden, E = a.n_experts, base = row * (H + 2 * E);
  float acc = 0.0f;
  for (int64_t c = lane; c < H; c += 32) acc += load_elem(a.w, a.type, base + c) * hidden[c];
  for (int j = lane; j < a.k; j += 32) {
    if (cur) acc += load_elem(a.w, a.type, base + H + cur[j]);
    if (prev) acc += load_elem(a.w, a.type, base + H + E + prev[j]);
  }
  const float total = warp_sum(acc);
  if (lane == 0) y[row] = a.gelu ? gelu_erf(total) : total;
}

}  // namespace

cudaError_t launch_prerouter_linear(const PrerouterArgs& a, const float* hidden, const int32_t* cur,
                                    const int32_t* prev, float* y, cudaStream_t s) {
  if (a.rows <= 0) return cudaSuccess;
  BS_LAUNCH(prerouter_linear_kernel, static_cast<uint32_t>((a.rows + kMatWarps - 1) / kMatWarps), kMatWarps * 32, s)
  (a, hidden, cur, prev, y);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
