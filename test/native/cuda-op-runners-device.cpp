// cuda-op-runners.h on the first CUDA device (builds with nvcc), or why there is none.
#include "cuda-op-runners.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda-op-runners-body.h"
#include "cuda/device-context.cuh"
#endif

namespace bt {

bool cuda_device_ops(T& t, LinearOps* linear, CudaDecoderOps* decoder) {
#ifndef BRAINSTEM_WITH_CUDA
  (void)linear, (void)decoder;
  t.skip("the CUDA set is not compiled into this build (no nvcc)");
  return false;
#else
  const bs::cuda::DeviceInfo& d = bs::cuda::device_info();
  if (!d.usable) {
    t.skip(d.why);
    return false;
  }
  if (linear) *linear = bs::cuda::op_runners::linear("cuda");
  if (decoder) *decoder = bs::cuda::op_runners::decoder("cuda", false);
  return true;
#endif
}

}  // namespace bt
