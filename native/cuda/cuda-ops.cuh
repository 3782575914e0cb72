// The kernel table's ops on a CUDA device (common/accel-ops.h), one stream synchronisation per
// call: activations are staged into scratch buffers, weights come from the context (resident
// when they lie in mapped files), the kernels run, results come back.
#pragma once
#include <cstdint>

#include "common/accel-ops.h"
#include "cuda/device-context.cuh"
#include "cuda/kernel-limits.h"

namespace bs::BS_CUDA_NS {

class Ops : public AccelOps {
 public:
  explicit Ops(Context& c) : c_(c) {}

  // Whether the kernels take weight w for op, and the limits of calls' shapes
  // (common/accel-limits.h).
  static bool accepts(Op op, const WeightMatrix* w);
  static constexpr int max_head_dim = kMaxHeadDim, max_experts = kMaxExperts;

  // Gathered matmuls bring only the matrices named to the device (kept there when w lies in a
  // mapped file).
  BS_ACCEL_OPS_OVERRIDES

 private:
  Context& c_;
};

}  // namespace bs::BS_CUDA_NS
