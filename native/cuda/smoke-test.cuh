// The smoke subset of the op test, run once before backend "auto" may choose the CUDA set: a
// few ops (quantised matvec, RMSNorm, RoPE, f16-cache attention, routing, SiLU-gate, add) on
// small seeded inputs against the reference kernels.
#pragma once
#include <string>

#include "common/backend.h"
#include "cuda/cuda-ns.h"

namespace bs::BS_CUDA_NS {

// "" when every op agrees with the reference, else which op and element differ.
std::string run_smoke_test(const Kernels& dev, const Kernels& ref);

}  // namespace bs::BS_CUDA_NS
