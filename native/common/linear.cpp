#include "common/linear.h"

namespace bs {

void linear_forward(const Dispatch& d, const ExecCtx& ctx, const Linear& l, const float* x, int64_t n, float* y) {
  const WeightMatrix& w = l.w;
  if (!w.quantised()) {
    d.pick(Op::DenseMatMul, &w).dense_matmul(ctx, w, 0, x, n, y);
  } else if (n == 1) {
    d.pick(Op::QMatVec, &w).qmatvec(ctx, w, 0, x, y);
  } else {
    d.pick(Op::QMatMul, &w).qmatmul(ctx, w, 0, x, n, y);
  }
  if (!l.bias.empty()) {
    const Kernels& k = d.pick(Op::Add);
    for (int64_t t = 0; t < n; ++t) k.add(ctx, l.bias.data(), 1.0f, w.rows, y + t * w.rows);
  }
}

}  // namespace bs
