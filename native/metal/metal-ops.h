// The kernel table's ops on a Metal device, one command buffer per call: operands are staged in
// shared buffers (weights wrapped in place when the device takes the range), the kernels of
// params.h run, results are copied back. The same code drives Apple's GPU and the shim device
// of the native tests; the per-token engine path would encode many ops into one CommandList.
#pragma once
#include <memory>
#include <vector>

#include "common/accel-ops.h"
#include "metal/metal-device.h"
#include "metal/params.h"

namespace bs::metal {

class MetalOps : public AccelOps {
 public:
  explicit MetalOps(Device& d) : d_(d) {}

  // Whether the kernels take weight w for op (formats, alignment, 32-bit offsets), and the
  // limits of calls' shapes (common/accel-limits.h).
  static bool accepts(Op op, const WeightMatrix* w);
  static constexpr int max_head_dim = BS_MAX_HEAD_DIM, max_experts = BS_MAX_EXPERTS;

  BS_ACCEL_OPS_OVERRIDES

 private:
  Device& d_;
  std::vector<std::unique_ptr<Buffer>> pool_;  // grow-only staging buffers, one per operand slot
  friend class Call;
};

}  // namespace bs::metal
