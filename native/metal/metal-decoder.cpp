#include "metal/metal-decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "metal/metal-encode.h"
#include "metal/metal-ops.h"

namespace bs::metal {

// A weight matrix as the kernels bind it: codes, scales and biases (dummies when plain) with the
// byte offsets of the matrix inside the wrapped (or copied) pages.
struct MetalDecoder::Weight {
  Arg codes, scales, biases;
  uint32_t w_off = 0, s_off = 0, b_off = 0;
};

std::string MetalDecoder::unsupported(const Model& m) {
  return decoder_unsupported(m, {"Metal", BS_MAX_HEAD_DIM, BS_MAX_EXPERTS, MetalOps::accepts});
}

MetalDecoder::MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk)
    : DecoderWalk(m, max_positions, max_chunk), d_(d) {
  if (const std::string why = unsupported(m); !why.empty()) fail("metal decoder: ", why);
  for (const WeightMatrix* w : decoder_matrices(m)) weight(*w);
  allocate();
  const ModelConfig& c = m.cfg;
  std::vector<float> inv(std::max<int64_t>(1, c.rot_dims / 2));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = static_cast<float>(std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / c.rot_dims));
  inv_freq_ = floats(inv);
}

MetalDecoder::~MetalDecoder() = default;

Arg MetalDecoder::at(Arg a, int64_t floats) { return {a.buf, a.offset + static_cast<size_t>(floats) * 4}; }

Arg MetalDecoder::alloc(size_t bytes) {
  auto b = d_.alloc(std::max<size_t>(bytes, 16));
  if (!b) fail("metal decoder: cannot allocate a buffer of ", bytes, " bytes");
  owned_.push_back(std::move(b));
  return {owned_.back().get(), 0};
}

Arg MetalDecoder::floats(const std::vector<float>& v) {
  Arg a = alloc(v.size() * 4);
  if (!v.empty()) std::memcpy(a.buf->contents(), v.data(), v.size() * 4);
  return a;
}

// Wrapped in place once (copied when the device refuses the pages), looked up by address after.
const MetalDecoder::Weight& MetalDecoder::weight(const WeightMatrix& w) {
  auto bind = [&](const void* p, size_t bytes, uint32_t& off) -> Arg {
    if (auto b = wrap_range(d_, p, bytes, off)) {
      owned_.push_back(std::move(b));
      return {owned_.back().get(), 0};
    }
    off = 0;
    Arg a = alloc(bytes);
    std::memcpy(a.buf->contents(), p, bytes);
    return a;
  };
  auto it = index_.find(w.w);
  if (it != index_.end()) return *it->second;
  auto out = std::make_unique<Weight>();
  out->codes = bind(w.w, code_bytes(w), out->w_off);
  if (w.quantised()) {
    out->scales = bind(w.scales, sb_bytes(w), out->s_off);
    out->biases = bind(w.biases, sb_bytes(w), out->b_off);
  } else {
    out->scales = out->biases = out->codes;
  }
  weights_.push_back(std::move(out));
  index_[w.w] = weights_.back().get();
  return *weights_.back();
}

void MetalDecoder::embed(int64_t n) {
  const Weight& e = weight(m_.embed);
  const EmbedParams p{u32(m_.embed.rows),
                      u32(m_.cfg.hidden),
                      u32(m_.embed.quantised() ? m_.embed.bits : 0),
                      u32(m_.embed.group),
                      type_code(m_.embed.dtype),
                      e.w_off,
                      e.s_off,
                      e.b_off,
                      u32(n)};
  c_->dispatch("bs_embed", {ceil_div(m_.cfg.hidden, BS_BLOCK), u32(n)}, BS_BLOCK,
               {e.codes, e.scales, e.biases, token_, x_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::matmul(const WeightMatrix& w, Arg x, Arg y, int64_t n, bool gather, int64_t x_div) {
  const Weight& b = weight(w);
  const Arg none = token_;  // bound but unread (no slot table)
  if (w.quantised()) {
    QMatParams p = qparams(w, n);
    p.w_off = b.w_off, p.s_off = b.s_off, p.b_off = b.b_off;
    p.gather = gather ? 1 : 0;
    p.x_div = u32(x_div);
    const Grid g{ceil_div(w.rows, BS_MM_SIMDGROUPS), gather ? u32(n) : ceil_div(n, BS_MM_TOKENS)};
    c_->dispatch("bs_qmatmul", g, kMatThreads,
                 {b.codes, b.scales, b.biases, x, y, gather ? ids_ : none, none, {nullptr, 0, &p, sizeof p}});
    return;
  }
  const DenseParams p{u32(w.rows), u32(w.cols), type_code(w.dtype), b.w_off, 0, u32(n), 0, 1.0f};
  c_->dispatch("bs_dense_matmul", {ceil_div(w.rows, BS_MM_SIMDGROUPS), ceil_div(n, BS_MM_TOKENS)}, kMatThreads,
               {b.codes, x, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::rmsnorm(Arg x, Arg w, int64_t rows, int64_t d, Arg y) {
  const RmsNormParams p{u32(rows), u32(d), m_.cfg.rms_eps};
  c_->dispatch("bs_rmsnorm", {u32(rows)}, BS_BLOCK, {x, w, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::add(Arg x, Arg y, int64_t n) {
  const ElementwiseParams p{u32(n), 1.0f};
  c_->dispatch("bs_add", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {x, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::silu_mul(Arg gate, Arg up, int64_t n) {
  const ElementwiseParams p{u32(n), 0.0f};
  c_->dispatch("bs_silu_mul", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {gate, up, gate, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::rope(Arg x, int64_t heads) {
  const ModelConfig& cfg = m_.cfg;
  const RopeParams p{u32(n_), u32(heads), u32(cfg.head_dim), u32(cfg.rot_dims)};
  c_->dispatch("bs_rope", {ceil_div(heads * (cfg.rot_dims / 2), BS_BLOCK), u32(n_)}, BS_BLOCK,
               {x, position_, inv_freq_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::attend(int64_t l) {
  const ModelConfig& cfg = m_.cfg;
  const AttentionParams p{u32(cfg.n_heads),
                          u32(cfg.n_kv_heads),
                          u32(cfg.head_dim),
                          u32(pos_),
                          u32(n_),
                          BS_T_F32,
                          static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)))};
  c_->dispatch("bs_attention", {u32(cfg.n_heads), u32(n_)}, kMatThreads,
               {q_, k_cache_[l], v_cache_[l], attn_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::route(const MoeWeights& w) {
  const int64_t E = w.spec.n_experts, k = m_.top_k;
  if (w.spec.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKParams p{u32(n_), u32(E), u32(k), w.spec.norm_topk_prob ? 1u : 0u};
    c_->dispatch("bs_route_softmax_topk", {u32(n_)}, 32, {e_logits_, ids_, wts_, {nullptr, 0, &p, sizeof p}});
    return;
  }
  const SigmoidGroupParams p{u32(n_),
                             u32(E),
                             u32(k),
                             u32(w.spec.n_group),
                             u32(w.spec.topk_group),
                             w.spec.norm_topk_prob ? 1u : 0u,
                             w.spec.correction_bias.empty() ? 0u : 1u,
                             w.spec.routed_scaling_factor};
  const Arg bias = w.spec.correction_bias.empty() ? token_ : vec(w.spec.correction_bias);
  c_->dispatch("bs_route_sigmoid_group", {u32(n_)}, 32, {e_logits_, bias, ids_, wts_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::combine(int64_t k) {
  const int64_t H = m_.cfg.hidden;
  const CombineParams p{u32(n_), u32(k), u32(H)};
  c_->dispatch("bs_moe_combine", {ceil_div(H, BS_BLOCK), u32(n_)}, BS_BLOCK,
               {rows_, wts_, y_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::append(const int32_t* tokens, int64_t n, float* logits) {
  check_append(m_, "metal", tokens, n, pos_, max_pos_, max_chunk_);
  auto* ids = reinterpret_cast<int32_t*>(token_.buf->contents());
  auto* positions = reinterpret_cast<int32_t*>(position_.buf->contents());
  for (int64_t t = 0; t < n; ++t) ids[t] = tokens[t], positions[t] = static_cast<int32_t>(pos_ + t);
  std::unique_ptr<CommandList> c = d_.begin();
  c_ = c.get();
  forward(n);
  c->commit_and_wait();
  c_ = nullptr;
  ++commits_;
  pos_ += n;
  std::memcpy(logits, logits_.buf->contents(), static_cast<size_t>(m_.cfg.vocab) * 4);
}

}  // namespace bs::metal
