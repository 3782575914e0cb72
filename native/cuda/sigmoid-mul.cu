#include "cuda/sigmoid-mul.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

__global__ void sigmoid_mul_kernel(float* x, const float* __restrict__ g, int64_t n, int64_t period, int64_t g_stride,
                                   int64_t g_step) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  x[i] /= 1.0f + expf(-g[(i / period) * g_stride + (i % period) * g_step]);
}

}  // namespace

cudaError_t launch_sigmoid_mul(float* x, const float* g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step,
                               cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  if (period <= 0) return cudaErrorInvalidValue;
  BS_LAUNCH(sigmoid_mul_kernel, static_cast<uint32_t>((n + kBlock - 1) / kBlock), kBlock, s)
  (x, g, n, period, g_stride, g_step);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
