#include "common/linear.h"

#include "common/blocks.h"
#include "common/model.h"

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

void run_linear(const Model& m, const Linear& l, const float* x, int64_t n, float* y, Scratch& s,
                const LoraWeights* lora) {
  linear_forward(m.dispatch(), m.ctx(), l, x, n, y);
  s.bytes_touched += l.w.mat_bytes();
  if (!lora) return;
  m.dispatch().pick(Op::LoraDelta, &lora->a).lora_delta(m.ctx(), *lora, x, n, y);
  s.bytes_touched += lora->a.mat_bytes() + lora->b.mat_bytes();
}

bool run_linears_fused(const Model& m, const Linear* const* ls, int count, const float* x, int64_t n, float* const* ys,
                       Scratch& s) {
  if (n != 1 || count > Kernels::kMaxMulti) return false;
  const Kernels& k = m.dispatch().pick(Op::GatherMatMul, &ls[0]->w);
  if (!k.gather_matmul_multi) return false;
  const WeightMatrix* ws[Kernels::kMaxMulti];
  for (int j = 0; j < count; ++j) {
    const Linear& l = *ls[j];
    if (!l.w.quantised() || !l.bias.empty() || &m.dispatch().pick(Op::GatherMatMul, &l.w) != &k) return false;
    ws[j] = &l.w;
  }
  const int32_t mat = 0;
  k.gather_matmul_multi(m.ctx(), ws, count, &mat, x, 1, ys);
  for (int j = 0; j < count; ++j) s.bytes_touched += ws[j]->mat_bytes();
  return true;
}

}  // namespace bs
