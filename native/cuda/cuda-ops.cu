#include "cuda/cuda-ops.cuh"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/accel-limits.h"
#include "common/error.h"
#include "cuda/add.cuh"
#include "cuda/attention.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/device-math.cuh"
#include "cuda/embed.cuh"
#include "cuda/moe-combine.cuh"
#include "cuda/op-args.cuh"
#include "cuda/prerouter.cuh"
#include "cuda/qmatmul.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/rope.cuh"
#include "cuda/route-sigmoid-group.cuh"
#include "cuda/route-softmax-topk.cuh"
#include "cuda/silu-mul.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// One matrix of the stack: its codes and its scales/biases.
size_t mat_code_bytes(const WeightMatrix& w) { return static_cast<size_t>(w.rows) * w.row_bytes(); }
size_t mat_sb_bytes(const WeightMatrix& w) {
  return static_cast<size_t>(w.rows * w.groups_per_row()) * dtype_size(w.dtype);
}

void launched(cudaError_t e, const char* kernel) { check(e, kernel); }

// With matrix `mat`'s three ranges on the device.
QMatArgs qargs(Context& c, const WeightMatrix& w, int64_t mat, int64_t n) {
  QMatArgs a = shape_args(w, n);
  a.codes = c.weight(w.w_row(mat, 0), mat_code_bytes(w));
  a.scales = c.weight(w.scales + w.sb_index(mat, 0) * dtype_size(w.dtype), mat_sb_bytes(w));
  a.biases = c.weight(w.biases + w.sb_index(mat, 0) * dtype_size(w.dtype), mat_sb_bytes(w));
  return a;
}

// The whole stack on the device (the routed ids are not known on the host).
QMatArgs stack_args(Context& c, const WeightMatrix& w, int64_t n) {
  QMatArgs a = shape_args(w, n);
  a.codes = c.weight(w.w, code_bytes(w));
  a.scales = c.weight(w.scales, sb_bytes(w));
  a.biases = c.weight(w.biases, sb_bytes(w));
  return a;
}

DenseArgs dargs(Context& c, const WeightMatrix& w, int64_t mat, int64_t n) {
  DenseArgs a{};
  a.w = c.weight(w.w_row(mat, 0), mat_code_bytes(w));
  a.type = type_code(w.dtype);
  a.rows = w.rows;
  a.cols = w.cols;
  a.mat = 0;
  a.n = n;
  return a;
}

}  // namespace

bool Ops::accepts(Op op, const WeightMatrix* w) {
  switch (op) {
    case Op::QMatVec:
    case Op::QMatMul:
    case Op::GatherMatMul: return w && w->quantised() && gpu_readable(*w);
    case Op::DenseMatMul:
    case Op::LoraDelta: return w && !w->quantised() && gpu_readable(*w);
    case Op::Embed: return w && gpu_readable(*w);
    default: return true;
  }
}

void Ops::qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (n <= 0 || w.rows <= 0) return;
  c_.begin();
  const QMatArgs a = qargs(c_, w, mat, n);
  launched(launch_qmatmul(a, c_.in(x, n * w.cols), c_.out(y, n * w.rows), c_.stream()), "qmatmul");
  c_.finish();
}

void Ops::gather_matmul(const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y,
                        const int32_t* slots, int64_t n_experts) {
  if (m <= 0 || w.rows <= 0) return;
  c_.begin();
  // The distinct matrices the rows name, each brought over (or found resident) on its own.
  std::vector<int32_t> mats, local(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const int32_t mat = slots ? slots[ids[i]] : ids[i];
    auto it = std::find(mats.begin(), mats.end(), mat);
    if (it == mats.end()) it = mats.insert(mats.end(), mat);
    local[i] = static_cast<int32_t>(it - mats.begin());
  }
  std::vector<const uint8_t*> parts;
  for (int32_t mat : mats) {
    const QMatArgs one = qargs(c_, w, mat, 0);
    parts.insert(parts.end(), {one.codes, one.scales, one.biases});
  }
  QMatArgs a = shape_args(w, m);
  a.parts = c_.in(parts.data(), parts.size());
  a.ids = c_.in(local.data(), local.size());
  launched(launch_qmatmul(a, c_.in(x, m * w.cols), c_.out(y, m * w.rows), c_.stream()), "gather_matmul");
  c_.finish();
}

void Ops::dense_matmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (n <= 0 || w.rows <= 0) return;
  c_.begin();
  const DenseArgs a = dargs(c_, w, mat, n);
  launched(launch_dense_matmul(a, c_.in(x, n * w.cols), c_.out(y, n * w.rows), c_.stream()), "dense_matmul");
  c_.finish();
}

void Ops::embed(const WeightMatrix& t, const int32_t* ids, int64_t n, float* out) {
  if (n <= 0 || t.cols <= 0) return;
  c_.begin();
  EmbedArgs a{};
  a.w = c_.weight(t.w, code_bytes(t));
  a.scales = t.quantised() ? c_.weight(t.scales, sb_bytes(t)) : nullptr;
  a.biases = t.quantised() ? c_.weight(t.biases, sb_bytes(t)) : nullptr;
  a.type = type_code(t.dtype);
  a.bits = t.quantised() ? t.bits : 0;
  a.group = t.group;
  a.cols = t.cols;
  a.n = n;
  launched(launch_embed(a, c_.in(ids, n), c_.out(out, n * t.cols), c_.stream()), "embed");
  c_.finish();
}

void Ops::rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
  if (n_rows <= 0 || d <= 0) return;
  c_.begin();
  const float* xd = c_.in(x, n_rows * d);
  launched(launch_rmsnorm(xd, c_.in(w, d), n_rows, d, eps, c_.out(y, n_rows * d), c_.stream()), "rmsnorm");
  c_.finish();
}

void Ops::rope(float* x, const int32_t* positions, int64_t n_tok, const bs::RopeParams& p) {
  const int half = p.rot_dims / 2;
  if (n_tok <= 0 || half <= 0 || p.n_heads <= 0) return;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(p.theta, -2.0 * i / p.rot_dims);
  c_.begin();
  float* xd = c_.inout(x, n_tok * p.n_heads * p.head_dim);
  launched(launch_rope(xd, c_.in(positions, n_tok), c_.in(inv_freq.data(), half), n_tok, p.n_heads, p.head_dim,
                       p.rot_dims, c_.stream()),
           "rope");
  c_.finish();
}

void Ops::attention(const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                    const bs::AttentionParams& p, float* out) {
  if (n_tok <= 0) return;
  c_.begin();
  const AttentionArgs a{p.n_q_heads, p.n_kv_heads, p.head_dim, pos0, n_tok, p.kv_f16, p.scale};
  const size_t kv_bytes = static_cast<size_t>((pos0 + n_tok) * p.n_kv_heads * p.head_dim) * (p.kv_f16 ? 2 : 4);
  const size_t q_count = static_cast<size_t>(n_tok * p.n_q_heads * p.head_dim);
  const auto* kb = static_cast<const uint8_t*>(k);
  const auto* vb = static_cast<const uint8_t*>(v);
  launched(launch_attention(a, c_.in(q, q_count), c_.in(kb, kv_bytes), c_.in(vb, kv_bytes), c_.out(out, q_count),
                            c_.stream()),
           "attention");
  c_.finish();
}

void Ops::route_softmax_topk(const float* logits, int64_t n_tok, const bs::SoftmaxTopKParams& p, int32_t* ids,
                             float* weights) {
  if (n_tok <= 0) return;
  c_.begin();
  const SoftmaxTopKArgs a{n_tok, p.n_experts, p.top_k, p.norm_topk_prob};
  launched(launch_route_softmax_topk(a, c_.in(logits, n_tok * p.n_experts), c_.out(ids, n_tok * p.top_k),
                                     c_.out(weights, n_tok * p.top_k), c_.stream()),
           "route_softmax_topk");
  c_.finish();
}

void Ops::route_sigmoid_group(const float* logits, int64_t n_tok, const bs::SigmoidGroupParams& p, int32_t* ids,
                              float* weights) {
  if (n_tok <= 0) return;
  c_.begin();
  const SigmoidGroupArgs a{n_tok,
                           p.n_experts,
                           p.top_k,
                           p.n_group,
                           p.topk_group,
                           p.norm_topk_prob,
                           p.routed_scaling_factor,
                           p.correction_bias ? c_.in(p.correction_bias, p.n_experts) : nullptr};
  launched(launch_route_sigmoid_group(a, c_.in(logits, n_tok * p.n_experts), c_.out(ids, n_tok * p.top_k),
                                      c_.out(weights, n_tok * p.top_k), c_.stream()),
           "route_sigmoid_group");
  c_.finish();
}

void Ops::silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  if (n <= 0) return;
  c_.begin();
  const float* g = c_.in(gate, n);
  launched(launch_silu_mul(g, c_.in(up, n), n, c_.out(out, n), c_.stream()), "silu_mul");
  c_.finish();
}

void Ops::add(const float* x, float s, int64_t n, float* y) {
  if (n <= 0) return;
  c_.begin();
  const float* xd = c_.in(x, n);
  launched(launch_add(xd, s, n, c_.inout(y, n), c_.stream()), "add");
  c_.finish();
}

// t = A·x, then y += scale · B·t: two dense launches, t never leaves the device.
void Ops::lora_delta(const LoraWeights& l, const float* x, int64_t n, float* y) {
  if (n <= 0 || l.b.rows <= 0) return;
  c_.begin();
  const int64_t rank = l.a.rows;
  const DenseArgs a = dargs(c_, l.a, 0, n);
  DenseArgs b = dargs(c_, l.b, 0, n);
  b.accumulate = true;
  b.alpha = l.scale;
  auto* t = static_cast<float*>(c_.scratch(n * rank * sizeof(float)));
  launched(launch_dense_matmul(a, c_.in(x, n * l.a.cols), t, c_.stream()), "lora_delta (A)");
  launched(launch_dense_matmul(b, t, c_.inout(y, n * l.b.rows), c_.stream()), "lora_delta (B)");
  c_.finish();
}

void Ops::moe_block(const bs::MoeBlockWeights& m, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n,
                    float* out) {
  if (n <= 0) return;
  const int64_t H = m.router->cols, k = rp.top_k, I = m.gate->rows;
  c_.begin();
  const float* xd = c_.in(x, n * H);
  auto* logits = static_cast<float*>(c_.scratch(n * rp.n_experts * sizeof(float)));
  auto* ids = static_cast<int32_t*>(c_.scratch(n * k * sizeof(int32_t)));
  auto* wts = static_cast<float*>(c_.scratch(n * k * sizeof(float)));
  auto* gate = static_cast<float*>(c_.scratch(n * k * I * sizeof(float)));
  auto* up = static_cast<float*>(c_.scratch(n * k * I * sizeof(float)));
  auto* down = static_cast<float*>(c_.scratch(n * k * H * sizeof(float)));
  launched(launch_qmatmul(qargs(c_, *m.router, 0, n), xd, logits, c_.stream()), "moe router");
  launched(launch_route_softmax_topk({n, rp.n_experts, rp.top_k, rp.norm_topk_prob}, logits, ids, wts, c_.stream()),
           "moe routing");
  for (const auto& [w, y] : {std::pair{m.gate, gate}, std::pair{m.up, up}}) {
    QMatArgs a = stack_args(c_, *w, n * k);
    a.ids = ids;
    a.x_div = static_cast<int>(k);
    launched(launch_qmatmul(a, xd, y, c_.stream()), "moe gate/up");
  }
  launched(launch_silu_mul(gate, up, n * k * I, gate, c_.stream()), "moe silu");
  QMatArgs d = stack_args(c_, *m.down, n * k);
  d.ids = ids;
  launched(launch_qmatmul(d, gate, down, c_.stream()), "moe down");
  launched(launch_moe_combine(down, wts, n, static_cast<int>(k), H, c_.out(out, n * H), c_.stream()), "moe combine");
  c_.finish();
}

void Ops::prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2, const float* hidden,
                    const int32_t* cur, const int32_t* prev, int k, float* logits) {
  const int64_t E = linear.rows, H = linear.cols - 2 * E;
  c_.begin();
  const float* h = c_.in(hidden, H);
  const int32_t* cd = cur ? c_.in(cur, k) : nullptr;
  const int32_t* pd = prev ? c_.in(prev, k) : nullptr;
  float* y = c_.out(logits, E);
  const PrerouterArgs pl{c_.weight(linear.w, code_bytes(linear)), type_code(linear.dtype), E, H, E, k, false};
  launched(launch_prerouter_linear(pl, h, cd, pd, y, c_.stream()), "prerouter linear");
  if (fc1 && fc2) {
    const PrerouterArgs p1{c_.weight(fc1->w, code_bytes(*fc1)), type_code(fc1->dtype), fc1->rows, H, E, k, true};
    auto* act = static_cast<float*>(c_.scratch(fc1->rows * sizeof(float)));
    launched(launch_prerouter_linear(p1, h, cd, pd, act, c_.stream()), "prerouter fc1");
    DenseArgs p2 = dargs(c_, *fc2, 0, 1);
    p2.accumulate = true;
    launched(launch_dense_matmul(p2, act, y, c_.stream()), "prerouter fc2");
  }
  c_.finish();
}

}  // namespace bs::BS_CUDA_NS
