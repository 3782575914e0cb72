#include "cuda/rmsnorm.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One block of kBlock threads per row. Squares are summed in double (as the reference) per
// thread, per warp, then across warps through shared memory. With `res`, the residual add
// x += res comes first (rounded as add.cu's), written back to x; with `weights` too, res holds
// k routed rows per row, combined first (routed_sum), and `shared` rows added to that sum (as
// add.cu adds the shared experts' output; with `gate`, each divided first by 1 + exp(−gate[row])
// as sigmoid-mul.cu does). Each thread rewrites only the elements it read, so y may alias x.
__global__ void rmsnorm_kernel(float* x, const float* __restrict__ res, const float* __restrict__ weights, int k,
                               const float* __restrict__ shared, const float* __restrict__ gate,
                               const float* __restrict__ w, int64_t d, float eps, float* y) {
  __shared__ double partial[kBlock / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  float* xr = x + static_cast<int64_t>(blockIdx.x) * d;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * d;
  const int64_t row = blockIdx.x;
  double ss = 0.0;
  for (int64_t i = tid; i < d; i += kBlock) {
    if (res) {
      float r = weights ? routed_sum(res, weights, k, d, row, i) : res[row * d + i];
      if (shared) {
        float sh = shared[row * d + i];
        if (gate) sh /= 1.0f + expf(-gate[row]);
        r = __fadd_rn(r, __fmul_rn(1.0f, sh));
      }
      xr[i] = __fadd_rn(xr[i], __fmul_rn(1.0f, r));
    }
    ss += static_cast<double>(xr[i]) * xr[i];
  }
  ss = warp_sum(ss);
  if (lane == 0) partial[warp] = ss;
  __syncthreads();
  double total = 0.0;
  for (int i = 0; i < kBlock / 32; ++i) total += partial[i];
  const double inv = rsqrt(total / static_cast<double>(d) + eps);
  for (int64_t i = tid; i < d; i += kBlock) yr[i] = static_cast<float>(xr[i] * inv * w[i]);
}

}  // namespace

cudaError_t launch_rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y,
                           cudaStream_t s) {
  if (n_rows <= 0 || d <= 0) return cudaSuccess;
  // Without a residual the kernel only reads x.
  BS_LAUNCH(rmsnorm_kernel, static_cast<uint32_t>(n_rows), kBlock, s)
  (const_cast<float*>(x), nullptr, nullptr, 0, nullptr, nullptr, w, d, eps, y);
  return cudaGetLastError();
}

cudaError_t launch_add_rmsnorm(float* x, const float* res, const float* w, int64_t n_rows, int64_t d, float eps,
                               float* y, cudaStream_t s) {
  if (n_rows <= 0 || d <= 0) return cudaSuccess;
  BS_LAUNCH(rmsnorm_kernel, static_cast<uint32_t>(n_rows), kBlock, s)
  (x, res, nullptr, 0, nullptr, nullptr, w, d, eps, y);
  return cudaGetLastError();
}

cudaError_t launch_combine_add_rmsnorm(float* x, const float* rows, const float* weights, int k, const float* shared,
                                       const float* gate, const float* w, int64_t n_rows, int64_t d, float eps,
                                       float* y, cudaStream_t s) {
  if (n_rows <= 0 || d <= 0) return cudaSuccess;
  BS_LAUNCH(rmsnorm_kernel, static_cast<uint32_t>(n_rows), kBlock, s)
  (x, rows, weights, k, shared, gate, w, d, eps, y);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
