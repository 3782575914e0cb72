// The CUDA host code beyond the table (gathered matmul through a slot table, the MoE block
// with device-side routing, the prerouter head) on a real device, against the reference
// (accel-suite.h); reported skipped with the reason where the build has no CUDA or no usable
// device. test-cuda.cpp runs the same checks over the CPU emulation everywhere.
#include <string>

#include "accel-suite.h"
#include "common/backend.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda/cuda-backend.h"
#include "cuda/cuda-ops.cuh"
#endif

TEST(cuda_device_gather_moe_block_and_prerouter_match_the_reference) {
#ifndef BRAINSTEM_WITH_CUDA
  t.skip("the CUDA set is not compiled into this build (no nvcc)");
#else
  if (!bs::cuda::device_info().usable) {
    t.skip(bs::cuda::describe());
    return;
  }
  bs::cuda::Context ctx;
  bs::cuda::Ops ops(ctx);
  bt::check_gather(
      t, bs::cuda::backend(),
      [&](const bs::WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y, const int32_t* slots,
          int64_t n_experts) { ops.gather_matmul(w, ids, x, m, y, slots, n_experts); });
  bt::check_moe_block(
      t, [&](const bs::WeightMatrix& router, const bs::WeightMatrix& gate, const bs::WeightMatrix& up,
             const bs::WeightMatrix& down, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out) {
        ops.moe_block({&router, &gate, &up, &down}, rp, x, n, out);
      });
  bt::check_prerouter(t, [&](const bs::WeightMatrix& lin, const bs::WeightMatrix* fc1, const bs::WeightMatrix* fc2,
                             const float* hidden, const int32_t* cur, const int32_t* prev, int k,
                             float* logits) { ops.prerouter(lin, fc1, fc2, hidden, cur, prev, k, logits); });
#endif
}
