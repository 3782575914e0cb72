// A linear layer y = W x (+ bias) over an mmapped weight, quantised or plain: the one
// place that picks qmatvec / qmatmul / dense_matmul for a call.
#pragma once
#include <cstdint>
#include <vector>

#include "common/backend.h"

namespace bs {

class Model;
struct Scratch;

struct Linear {
  WeightMatrix w;           // [out, in]
  std::vector<float> bias;  // [out] or empty
};

// y[n, out] = x[n, in] · Wᵀ (+ bias).
void linear_forward(const Dispatch& d, const ExecCtx& ctx, const Linear& l, const float* x, int64_t n, float* y);

// y = linear(x) (+ lora: y += s·B(A x), unmerged) with the model's kernels, and counts the
// bytes read as touched.
void run_linear(const Model& m, const Linear& l, const float* x, int64_t n, float* y, Scratch& s,
                const LoraWeights* lora = nullptr);

// One token through `count` quantised bias-free linears at once (q, k and v of a decode step)
// when the kernel set fuses them (Kernels::gather_matmul_multi): one parallel loop instead of
// `count`, bit for bit what separate calls give. False, with nothing done, when it does not apply.
bool run_linears_fused(const Model& m, const Linear* const* ls, int count, const float* x, int64_t n, float* const* ys,
                       Scratch& s);

}  // namespace bs
