#include "metal/metal-ops.h"

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/accel-limits.h"
#include "common/error.h"
#include "metal/metal-encode.h"

namespace bs::metal {

namespace {

constexpr uint64_t kMaxOffset = uint64_t{1} << 32;

// Beyond what the kernels read, every byte offset must fit the kernels' 32-bit fields.
bool weight_ok(const WeightMatrix& w) {
  if (!gpu_readable(w) || code_bytes(w) + 2 * sysconf(_SC_PAGESIZE) >= kMaxOffset) return false;
  return !w.quantised() || sb_bytes(w) + 2 * sysconf(_SC_PAGESIZE) < kMaxOffset;
}

}  // namespace

// The operands of one call: staged into the pool's buffers (inputs copied in), dispatched in
// one command list, outputs copied back by run().
class Call {
 public:
  explicit Call(MetalOps& ops) : ops_(ops), list_(ops.d_.begin()) {}

  Arg in(const void* p, size_t bytes) {
    Buffer& b = slot(bytes);
    if (bytes) std::memcpy(b.contents(), p, bytes);
    return {&b, 0};
  }
  Arg out(void* p, size_t bytes) {
    Buffer& b = slot(bytes);
    outs_.push_back({p, &b, bytes});
    return {&b, 0};
  }
  Arg inout(void* p, size_t bytes) {
    Arg a = in(p, bytes);
    outs_.push_back({p, a.buf, bytes});
    return a;
  }
  Arg scratch(size_t bytes) { return {&slot(bytes), 0}; }
  // A weight range in place: its pages wrapped without a copy when the device takes them (the
  // mmapped files), else copied. `off` receives the range's byte offset inside the buffer.
  Arg weight(const void* p, size_t bytes, uint32_t& off) {
    if (auto b = wrap_range(ops_.d_, p, bytes, off)) {
      wraps_.push_back(std::move(b));
      return {wraps_.back().get(), 0};
    }
    off = 0;
    return in(p, bytes);
  }
  template <class P>
  static Arg params(const P& p) {
    return {nullptr, 0, &p, sizeof p};
  }
  void dispatch(const char* kernel, Grid g, uint32_t threads, const std::vector<Arg>& args) {
    list_->dispatch(kernel, g, threads, args);
  }
  void run() {
    list_->commit_and_wait();
    for (const Out& o : outs_) std::memcpy(o.host, o.buf->contents(), o.bytes);
  }

 private:
  struct Out {
    void* host;
    Buffer* buf;
    size_t bytes;
  };
  // The next pool buffer, grown to hold `bytes` (at least 16: Metal has no empty buffers).
  Buffer& slot(size_t bytes) {
    bytes = std::max<size_t>(bytes, 16);
    auto& pool = ops_.pool_;
    if (used_ == pool.size()) pool.emplace_back();
    auto& b = pool[used_++];
    if (!b || b->size() < bytes) {
      b.reset();
      b = ops_.d_.alloc(bytes + bytes / 4);
      if (!b) fail("metal: cannot allocate a shared buffer of ", bytes, " bytes");
    }
    return *b;
  }

  MetalOps& ops_;
  std::unique_ptr<CommandList> list_;
  std::vector<std::unique_ptr<Buffer>> wraps_;
  std::vector<Out> outs_;
  size_t used_ = 0;
};

bool MetalOps::accepts(Op op, const WeightMatrix* w) {
  switch (op) {
    case Op::QMatVec:
    case Op::QMatMul:
    case Op::GatherMatMul: return w && w->quantised() && weight_ok(*w);
    case Op::DenseMatMul:
    case Op::LoraDelta: return w && !w->quantised() && weight_ok(*w);
    case Op::Embed: return w && weight_ok(*w);
    default: return true;
  }
}

namespace {

// Encodes y = W·x over the stack w: plain (matrix p.mat, tokens in chunks) or gathered (matrix of
// slot i from ids[i], through slots when p.has_slots; x row i / p.x_div).
void encode_qmatmul(Call& c, const WeightMatrix& w, QMatParams p, Arg x, Arg y, Arg ids, Arg slots) {
  const Arg codes = c.weight(w.w, code_bytes(w), p.w_off), sc = c.weight(w.scales, sb_bytes(w), p.s_off),
            bi = c.weight(w.biases, sb_bytes(w), p.b_off);
  const Grid g = qmat_grid(p, p.gather ? p.n : ceil_div(p.n, BS_MM_TOKENS));
  c.dispatch("bs_qmatmul", g, kMatThreads, {codes, sc, bi, x, y, ids, slots, ids, x, Call::params(p)});
}

}  // namespace

void MetalOps::qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (n <= 0 || w.rows <= 0) return;
  Call c(*this);
  QMatParams p = qparams(w, n);
  p.mat = u32(mat);
  const Arg none = c.scratch(4);
  encode_qmatmul(c, w, p, c.in(x, n * w.cols * 4), c.out(y, n * w.rows * 4), none, none);
  c.run();
}

void MetalOps::gather_matmul(const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y,
                             const int32_t* slots, int64_t n_experts) {
  if (m <= 0 || w.rows <= 0) return;
  Call c(*this);
  QMatParams p = qparams(w, m);
  p.gather = 1;
  p.has_slots = slots ? 1 : 0;
  encode_qmatmul(c, w, p, c.in(x, m * w.cols * 4), c.out(y, m * w.rows * 4), c.in(ids, m * 4),
                 slots ? c.in(slots, n_experts * 4) : c.scratch(4));
  c.run();
}

void MetalOps::moe_block(const bs::MoeBlockWeights& m, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n,
                         float* out) {
  if (n <= 0) return;
  const int64_t H = m.router->cols, E = rp.n_experts, k = rp.top_k, I = m.gate->rows;
  Call c(*this);
  const Arg xa = c.in(x, n * H * 4), logits = c.scratch(n * E * 4), ids = c.scratch(n * k * 4),
            wts = c.scratch(n * k * 4), gate = c.scratch(n * k * I * 4), up = c.scratch(n * k * I * 4),
            down = c.scratch(n * k * H * 4), none = c.scratch(4);
  encode_qmatmul(c, *m.router, qparams(*m.router, n), xa, logits, none, none);
  const SoftmaxTopKParams pr{u32(n), u32(E), u32(k), rp.norm_topk_prob ? 1u : 0u};
  c.dispatch("bs_route_softmax_topk", {u32(n)}, 32, {logits, ids, wts, Call::params(pr)});
  for (const auto& [w, y] : {std::pair{m.gate, gate}, std::pair{m.up, up}}) {
    QMatParams p = qparams(*w, n * k);
    p.gather = 1;
    p.x_div = u32(k);
    encode_qmatmul(c, *w, p, xa, y, ids, none);
  }
  const ElementwiseParams pe{u32(n * k * I), 0.0f};
  c.dispatch("bs_silu_mul", {ceil_div(n * k * I, BS_BLOCK)}, BS_BLOCK, {gate, up, gate, Call::params(pe)});
  QMatParams pd = qparams(*m.down, n * k);
  pd.gather = 1;
  encode_qmatmul(c, *m.down, pd, gate, down, ids, none);
  const CombineParams pc{u32(n), u32(k), u32(H)};
  c.dispatch("bs_moe_combine", {ceil_div(H, BS_BLOCK), u32(n)}, BS_BLOCK,
             {down, wts, c.out(out, n * H * 4), Call::params(pc)});
  c.run();
}

void MetalOps::dense_matmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (n <= 0 || w.rows <= 0) return;
  Call c(*this);
  DenseParams p{u32(w.rows), u32(w.cols), type_code(w.dtype), 0, u32(mat), u32(n), 0, 1.0f};
  const Arg wt = c.weight(w.w, code_bytes(w), p.w_off);
  c.dispatch("bs_dense_matmul", {dense_groups(w.rows, w.cols), ceil_div(n, BS_MM_TOKENS)}, kMatThreads,
             {wt, c.in(x, n * w.cols * 4), c.out(y, n * w.rows * 4), Call::params(p)});
  c.run();
}

void MetalOps::embed(const WeightMatrix& t, const int32_t* ids, int64_t n, float* out) {
  if (n <= 0 || t.cols <= 0) return;
  Call c(*this);
  EmbedParams p{u32(t.rows), u32(t.cols), u32(t.quantised() ? t.bits : 0), u32(t.group), type_code(t.dtype), 0, 0,
                0,           u32(n)};
  const Arg wt = c.weight(t.w, code_bytes(t), p.w_off);
  const Arg sc = t.quantised() ? c.weight(t.scales, sb_bytes(t), p.s_off) : c.scratch(4);
  const Arg bi = t.quantised() ? c.weight(t.biases, sb_bytes(t), p.b_off) : c.scratch(4);
  c.dispatch("bs_embed", {ceil_div(t.cols, BS_BLOCK), u32(n)}, BS_BLOCK,
             {wt, sc, bi, c.in(ids, n * 4), c.out(out, n * t.cols * 4), Call::params(p)});
  c.run();
}

void MetalOps::rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
  if (n_rows <= 0 || d <= 0) return;
  Call c(*this);
  const RmsNormParams p{u32(n_rows), u32(d), eps, 0, 0, 0, 0};
  const size_t bytes = static_cast<size_t>(n_rows * d) * 4;
  const Arg xa = c.in(x, bytes);
  // No residual: res and weights bound to x, unread.
  c.dispatch("bs_rmsnorm", {u32(n_rows)}, BS_BLOCK,
             {xa, c.in(w, d * 4), c.out(y, bytes), xa, xa, Call::params(p), xa, xa});
  c.run();
}

void MetalOps::rope(float* x, const int32_t* positions, int64_t n_tok, const bs::RopeParams& rp) {
  const int half = rp.rot_dims / 2;
  if (n_tok <= 0 || half <= 0 || rp.n_heads <= 0) return;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) inv_freq[i] = static_cast<float>(std::pow(rp.theta, -2.0 * i / rp.rot_dims));
  Call c(*this);
  const RopeParams p{u32(n_tok), u32(rp.n_heads), u32(rp.head_dim), u32(rp.rot_dims)};
  c.dispatch("bs_rope", {ceil_div(int64_t{rp.n_heads} * half, BS_BLOCK), u32(n_tok)}, BS_BLOCK,
             {c.inout(x, n_tok * rp.n_heads * rp.head_dim * 4), c.in(positions, n_tok * 4),
              c.in(inv_freq.data(), half * 4), Call::params(p)});
  c.run();
}

void MetalOps::attention(const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                         const bs::AttentionParams& ap, float* out) {
  if (n_tok <= 0) return;
  Call c(*this);
  const AttentionParams p{u32(ap.n_q_heads), u32(ap.n_kv_heads), u32(ap.head_dim),
                          u32(pos0),         u32(n_tok),         ap.kv_f16 ? BS_T_F16 : BS_T_F32,
                          ap.scale};
  const size_t kv_bytes = static_cast<size_t>((pos0 + n_tok) * ap.n_kv_heads * ap.head_dim) * (ap.kv_f16 ? 2 : 4);
  const size_t q_bytes = static_cast<size_t>(n_tok * ap.n_q_heads * ap.head_dim) * 4;
  c.dispatch("bs_attention", {u32(ap.n_q_heads), u32(n_tok)}, kMatThreads,
             {c.in(q, q_bytes), c.in(k, kv_bytes), c.in(v, kv_bytes), c.out(out, q_bytes), Call::params(p)});
  c.run();
}

void MetalOps::route_softmax_topk(const float* logits, int64_t n_tok, const bs::SoftmaxTopKParams& rp, int32_t* ids,
                                  float* weights) {
  if (n_tok <= 0) return;
  Call c(*this);
  const SoftmaxTopKParams p{u32(n_tok), u32(rp.n_experts), u32(rp.top_k), rp.norm_topk_prob ? 1u : 0u};
  c.dispatch("bs_route_softmax_topk", {u32(n_tok)}, 32,
             {c.in(logits, n_tok * rp.n_experts * 4), c.out(ids, n_tok * rp.top_k * 4),
              c.out(weights, n_tok * rp.top_k * 4), Call::params(p)});
  c.run();
}

void MetalOps::route_sigmoid_group(const float* logits, int64_t n_tok, const bs::SigmoidGroupParams& rp, int32_t* ids,
                                   float* weights) {
  if (n_tok <= 0) return;
  Call c(*this);
  const SigmoidGroupParams p{u32(n_tok),
                             u32(rp.n_experts),
                             u32(rp.top_k),
                             u32(rp.n_group),
                             u32(rp.topk_group),
                             rp.norm_topk_prob ? 1u : 0u,
                             rp.correction_bias ? 1u : 0u,
                             rp.routed_scaling_factor};
  const Arg bias = rp.correction_bias ? c.in(rp.correction_bias, rp.n_experts * 4) : c.scratch(4);
  c.dispatch("bs_route_sigmoid_group", {u32(n_tok)}, 32,
             {c.in(logits, n_tok * rp.n_experts * 4), bias, c.out(ids, n_tok * rp.top_k * 4),
              c.out(weights, n_tok * rp.top_k * 4), Call::params(p)});
  c.run();
}

void MetalOps::silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  if (n <= 0) return;
  Call c(*this);
  const ElementwiseParams p{u32(n), 0.0f};
  c.dispatch("bs_silu_mul", {ceil_div(n, BS_BLOCK)}, BS_BLOCK,
             {c.in(gate, n * 4), c.in(up, n * 4), c.out(out, n * 4), Call::params(p)});
  c.run();
}

void MetalOps::add(const float* x, float s, int64_t n, float* y) {
  if (n <= 0) return;
  Call c(*this);
  const ElementwiseParams p{u32(n), s};
  c.dispatch("bs_add", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {c.in(x, n * 4), c.inout(y, n * 4), Call::params(p)});
  c.run();
}

// t = A·x, then y += scale · B·t: two dense dispatches in one command list.
void MetalOps::lora_delta(const LoraWeights& l, const float* x, int64_t n, float* y) {
  if (n <= 0 || l.b.rows <= 0) return;
  Call c(*this);
  const int64_t rank = l.a.rows, in = l.a.cols, out = l.b.rows;
  DenseParams pa{u32(rank), u32(in), type_code(l.a.dtype), 0, 0, u32(n), 0, 1.0f};
  DenseParams pb{u32(out), u32(rank), type_code(l.b.dtype), 0, 0, u32(n), 1, l.scale};
  const Arg a = c.weight(l.a.w, code_bytes(l.a), pa.w_off), b = c.weight(l.b.w, code_bytes(l.b), pb.w_off);
  const Arg t = c.scratch(n * rank * 4);
  const Grid tokens{1, ceil_div(n, BS_MM_TOKENS)};
  c.dispatch("bs_dense_matmul", {dense_groups(rank, in), tokens.y}, kMatThreads,
             {a, c.in(x, n * in * 4), t, Call::params(pa)});
  c.dispatch("bs_dense_matmul", {dense_groups(out, rank), tokens.y}, kMatThreads,
             {b, t, c.inout(y, n * out * 4), Call::params(pb)});
  c.run();
}

void MetalOps::prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2,
                         const float* hidden, const int32_t* cur, const int32_t* prev, int k, float* logits) {
  const int64_t E = linear.rows, H = linear.cols - 2 * E;
  Call c(*this);
  const Arg h = c.in(hidden, H * 4), ids_cur = cur ? c.in(cur, k * 4) : c.scratch(4);
  const Arg ids_prev = prev ? c.in(prev, k * 4) : c.scratch(4), y = c.out(logits, E * 4);
  PrerouterParams pl{u32(E), u32(H), u32(E), u32(k), type_code(linear.dtype), 0, cur ? 1u : 0u, prev ? 1u : 0u, 0};
  const Arg wl = c.weight(linear.w, code_bytes(linear), pl.w_off);
  c.dispatch("bs_prerouter_linear", {ceil_div(E, BS_MM_SIMDGROUPS)}, kMatThreads,
             {wl, h, ids_cur, ids_prev, y, Call::params(pl)});
  if (fc1 && fc2) {
    const int64_t units = fc1->rows;
    PrerouterParams p1 = pl;
    p1.rows = u32(units);
    p1.type = type_code(fc1->dtype);
    p1.gelu = 1;
    DenseParams p2{u32(E), u32(units), type_code(fc2->dtype), 0, 0, 1, 1, 1.0f};
    const Arg w1 = c.weight(fc1->w, code_bytes(*fc1), p1.w_off), w2 = c.weight(fc2->w, code_bytes(*fc2), p2.w_off);
    const Arg act = c.scratch(units * 4);
    c.dispatch("bs_prerouter_linear", {ceil_div(units, BS_MM_SIMDGROUPS)}, kMatThreads,
               {w1, h, ids_cur, ids_prev, act, Call::params(p1)});
    c.dispatch("bs_dense_matmul", {dense_groups(E, units), 1}, kMatThreads, {w2, act, y, Call::params(p2)});
  }
  c.run();
}

}  // namespace bs::metal
