#include "metal/metal-decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "common/prerouter/heads.h"
#include "metal/metal-encode.h"
#include "metal/metal-ops.h"

namespace bs::metal {

std::string MetalDecoder::unsupported(const Model& m) {
  return decoder_unsupported(m, {"Metal", BS_MAX_HEAD_DIM, BS_MAX_EXPERTS, MetalOps::accepts});
}

MetalDecoder::MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk,
                           std::shared_ptr<const DeviceWeights> weights)
    : d_(d), m_(m), max_pos_(max_positions), max_chunk_(std::max<int64_t>(1, max_chunk)) {
  if (const std::string why = unsupported(m); !why.empty()) fail("metal decoder: ", why);
  w_ = weights ? std::move(weights) : std::make_shared<const DeviceWeights>(d, m);
  const ModelConfig& c = m.cfg;
  const int64_t H = c.hidden, k = std::max(1, m.top_k), kv = c.n_kv_heads * c.head_dim;
  const int64_t inter = std::max({c.intermediate, k * c.moe_intermediate, c.shared_intermediate, int64_t{1}});
  kv_elem_ = m.kv_f16() ? 2 : 4;
  k_cache_.resize(c.n_layers);
  v_cache_.resize(c.n_layers);
  reserve(std::min<int64_t>(max_pos_, 64));
  const int64_t n = max_chunk_, E = std::max(1, c.router.n_experts);
  x_ = scratch(n * H * 4), xn_ = scratch(n * H * 4), y_ = scratch(n * H * 4), y2_ = scratch(n * H * 4);
  q_ = scratch(n * c.n_heads * c.head_dim * 4), attn_ = scratch(n * c.n_heads * c.head_dim * 4);
  gate_ = scratch(n * inter * 4), up_ = scratch(n * inter * 4), rows_ = scratch(n * k * H * 4);
  logits_ = scratch(c.vocab * 4), e_logits_ = scratch(n * E * 4);
  ids_ = scratch(n * k * 4), wts_ = scratch(n * k * 4), token_ = scratch(n * 4), position_ = scratch(n * 4);
  greedy_ = scratch(4);
  if (m.kv_f16()) k_f32_ = scratch(n * kv * 4), v_f32_ = scratch(n * kv * 4);
  pred_.resize(c.n_layers);
  has_pred_.assign(c.n_layers, 0), made_pred_.assign(c.n_layers, 0), has_last_.assign(c.n_layers, 0);
  if (m.prerouter) {
    int64_t units = 1;
    for (const int64_t owner : m.prerouter->owners()) {
      units = std::max(units, m.prerouter->head(owner)->fc1.rows);
      Predicted& p = pred_[owner + 1];
      for (int i = 0; i < 2; ++i) p.ids[i] = scratch(k * 4), p.wts[i] = scratch(k * 4);
      pred_[owner].last = scratch(k * 4);
    }
    head_logits_ = scratch(E * 4), head_act_ = scratch(units * 4);
  }
}

MetalDecoder::~MetalDecoder() = default;

Arg MetalDecoder::at(Arg a, int64_t floats) { return {a.buf, a.offset + static_cast<size_t>(floats) * 4}; }

Arg MetalDecoder::scratch(size_t bytes) {
  auto b = d_.alloc(std::max<size_t>(bytes, 16));
  if (!b) fail("metal decoder: cannot allocate a buffer of ", bytes, " bytes");
  scratch_bytes_ += b->size();
  owned_.push_back(std::move(b));
  return {owned_.back().get(), 0};
}

// Cache rows for `rows` positions: capacity doubles (up to max_positions), the cached rows copied
// over in shared memory, so a session pays for the context it uses.
void MetalDecoder::reserve(int64_t rows) {
  if (rows <= capacity_) return;
  int64_t cap = std::max<int64_t>(capacity_, 64);
  while (cap < rows) cap *= 2;
  cap = std::min(cap, max_pos_);
  const size_t row = static_cast<size_t>(m_.cfg.n_kv_heads * m_.cfg.head_dim * kv_elem_);
  for (auto* cache : {&k_cache_, &v_cache_}) {
    for (std::unique_ptr<Buffer>& b : *cache) {
      auto grown = d_.alloc(std::max<size_t>(cap * row, 16));
      if (!grown) fail("metal decoder: cannot allocate a KV cache of ", cap, " positions");
      if (b) std::memcpy(grown->contents(), b->contents(), pos_ * row);
      b = std::move(grown);
    }
  }
  capacity_ = cap;
}

void MetalDecoder::truncate(int64_t n) {
  if (n < 0 || n > pos_) fail("metal decoder: truncate(", n, ") is outside its ", pos_, " cached positions");
  pos_ = n;
  forget_predictions();
}

void MetalDecoder::read_kv(int64_t layer, int64_t n, void* k, void* v) const {
  if (n < 0 || n > pos_) fail("metal decoder: read_kv of ", n, " rows, ", pos_, " cached");
  const size_t bytes = static_cast<size_t>(n * m_.cfg.n_kv_heads * m_.cfg.head_dim * kv_elem_);
  std::memcpy(k, k_cache_[layer]->contents(), bytes);
  std::memcpy(v, v_cache_[layer]->contents(), bytes);
}

uint64_t MetalDecoder::state_bytes() const {
  uint64_t b = scratch_bytes_;
  for (const auto* cache : {&k_cache_, &v_cache_}) {
    for (const std::unique_ptr<Buffer>& buf : *cache) b += buf->size();
  }
  return b;
}

void MetalDecoder::matmul(CommandList& c, const WeightMatrix& w, Arg x, Arg y, int64_t n, Arg ids, uint32_t x_div) {
  const Weight& b = weight(w);
  const Arg none = token_;  // bound but unread (no slot table)
  if (w.quantised()) {
    QMatParams p = qparams(w, n);
    p.w_off = b.w_off, p.s_off = b.s_off, p.b_off = b.b_off;
    p.gather = ids.buf ? 1 : 0;
    p.x_div = x_div;
    const Grid g{ceil_div(w.rows, BS_MM_SIMDGROUPS), p.gather ? u32(n) : ceil_div(n, BS_MM_TOKENS)};
    c.dispatch("bs_qmatmul", g, kMatThreads,
               {b.codes, b.scales, b.biases, x, y, ids.buf ? ids : none, none, {nullptr, 0, &p, sizeof p}});
    return;
  }
  const DenseParams p{u32(w.rows), u32(w.cols), type_code(w.dtype), b.w_off, 0, u32(n), 0, 1.0f};
  c.dispatch("bs_dense_matmul", {ceil_div(w.rows, BS_MM_SIMDGROUPS), ceil_div(n, BS_MM_TOKENS)}, kMatThreads,
             {b.codes, x, y, {nullptr, 0, &p, sizeof p}});
}

// y[n_, out] = x[n_, in] · Wᵀ, plus the bias on every row, plus the LoRA delta
// scale · B (A x) in two dense matmuls through lora_t_ (as the CPU path: bias, then delta).
void MetalDecoder::linear(CommandList& c, const Linear& l, Arg x, Arg y, const LoraWeights* delta) {
  matmul(c, l.w, x, y, n_, {}, 1);
  for (int64_t t = 0; t < n_ && !l.bias.empty(); ++t) add(c, vec(l.bias), at(y, t * l.w.rows), l.w.rows);
  if (!delta) return;
  const auto& [a, b] = adapter_w_.at(delta);
  const int64_t rank = delta->a.rows;
  const DenseParams pa{u32(rank), u32(delta->a.cols), type_code(delta->a.dtype), 0, 0, u32(n_), 0, 1.0f};
  const DenseParams pb{u32(delta->b.rows), u32(rank), type_code(delta->b.dtype), 0, 0, u32(n_), 1, delta->scale};
  c.dispatch("bs_dense_matmul", {ceil_div(rank, BS_MM_SIMDGROUPS), ceil_div(n_, BS_MM_TOKENS)}, kMatThreads,
             {a, x, lora_t_, {nullptr, 0, &pa, sizeof pa}});
  c.dispatch("bs_dense_matmul", {ceil_div(delta->b.rows, BS_MM_SIMDGROUPS), ceil_div(n_, BS_MM_TOKENS)}, kMatThreads,
             {b, lora_t_, y, {nullptr, 0, &pb, sizeof pb}});
}

const LoraWeights* MetalDecoder::lora(LoraSlot slot) const { return layer_lora_ ? layer_lora_->get(slot) : nullptr; }

void MetalDecoder::use_adapter(const std::shared_ptr<const LoraAdapter>& a) {
  if (a == adapter_) return;
  adapter_w_.clear();
  adapter_owned_.clear();
  adapter_.reset();
  if (!a) return;
  auto copy = [&](const WeightMatrix& w) -> Arg {
    auto b = d_.alloc(std::max<size_t>(code_bytes(w), 16));
    if (!b) fail("metal decoder: cannot allocate ", code_bytes(w), " bytes for adapter \"", a->name(), "\"");
    std::memcpy(b->contents(), w.w, code_bytes(w));
    adapter_owned_.push_back(std::move(b));
    return {adapter_owned_.back().get(), 0};
  };
  int64_t rank = 1;
  for (const std::unique_ptr<LoraModule>& m : a->modules()) {
    const Arg wa = copy(m->w.a);
    adapter_w_[&m->w] = {wa, copy(m->w.b)};
    rank = std::max(rank, m->w.a.rows);
  }
  auto t = d_.alloc(static_cast<size_t>(max_chunk_ * rank * 4));
  if (!t) fail("metal decoder: cannot allocate the LoRA intermediate of rank ", rank);
  adapter_owned_.push_back(std::move(t));
  lora_t_ = {adapter_owned_.back().get(), 0};
  adapter_ = a;
}

void MetalDecoder::rmsnorm(CommandList& c, Arg x, Arg w, int64_t rows, int64_t d, Arg y) {
  const RmsNormParams p{u32(rows), u32(d), m_.cfg.rms_eps};
  c.dispatch("bs_rmsnorm", {u32(rows)}, BS_BLOCK, {x, w, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::add(CommandList& c, Arg x, Arg y, int64_t n) {
  const ElementwiseParams p{u32(n), 1.0f};
  c.dispatch("bs_add", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {x, y, {nullptr, 0, &p, sizeof p}});
}

// q, and the chunk's k and v straight into the cache rows pos_.. (f16 caches: into k_f32_, v_f32_, rounded
// into the cache after qk-norm and RoPE, as the CPU path stores them); qk-norm and RoPE in place.
void MetalDecoder::attention(CommandList& c, int64_t l) {
  const ModelConfig& cfg = m_.cfg;
  const AttentionWeights& w = m_.layers[l].attn;
  const int64_t kv = cfg.n_kv_heads * cfg.head_dim;
  const bool f16 = kv_elem_ == 2;
  const Arg k_at = f16 ? k_f32_ : Arg{k_cache_[l].get(), static_cast<size_t>(pos_ * kv * 4)};
  const Arg v_at = f16 ? v_f32_ : Arg{v_cache_[l].get(), static_cast<size_t>(pos_ * kv * 4)};
  linear(c, w.q, xn_, q_, lora(LoraSlot::Q));
  linear(c, w.k, xn_, k_at, lora(LoraSlot::K));
  linear(c, w.v, xn_, v_at, lora(LoraSlot::V));
  if (!w.q_norm.empty()) {
    rmsnorm(c, q_, vec(w.q_norm), n_ * cfg.n_heads, cfg.head_dim, q_);
    rmsnorm(c, k_at, vec(w.k_norm), n_ * cfg.n_kv_heads, cfg.head_dim, k_at);
  }
  const int64_t half = cfg.rot_dims / 2;
  for (const auto& [x, heads] : {std::pair{q_, cfg.n_heads}, std::pair{k_at, cfg.n_kv_heads}}) {
    const RopeParams p{u32(n_), u32(heads), u32(cfg.head_dim), u32(cfg.rot_dims)};
    if (half > 0)
      c.dispatch("bs_rope", {ceil_div(heads * half, BS_BLOCK), u32(n_)}, BS_BLOCK,
                 {x, position_, w_->inv_freq(), {nullptr, 0, &p, sizeof p}});
  }
  if (f16) {
    const ElementwiseParams p{u32(n_ * kv), 0.0f};
    for (const auto& [x, cache] : {std::pair{k_f32_, k_cache_[l].get()}, std::pair{v_f32_, v_cache_[l].get()}})
      c.dispatch("bs_to_f16", {ceil_div(n_ * kv, BS_BLOCK)}, BS_BLOCK,
                 {x, {cache, static_cast<size_t>(pos_ * kv * 2)}, {nullptr, 0, &p, sizeof p}});
  }
  const AttentionParams p{u32(cfg.n_heads),
                          u32(cfg.n_kv_heads),
                          u32(cfg.head_dim),
                          u32(pos_),
                          u32(n_),
                          f16 ? BS_T_F16 : BS_T_F32,
                          static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)))};
  c.dispatch("bs_attention", {u32(cfg.n_heads), u32(n_)}, kMatThreads,
             {q_, {k_cache_[l].get(), 0}, {v_cache_[l].get(), 0}, attn_, {nullptr, 0, &p, sizeof p}});
  linear(c, w.o, attn_, y_, lora(LoraSlot::O));
}

// The dense MLP or the shared experts, with the layer's Gate/Up/Down deltas (as the CPU path).
void MetalDecoder::mlp(CommandList& c, const MlpWeights& w, Arg x, Arg y) {
  linear(c, w.gate, x, gate_, lora(LoraSlot::Gate));
  linear(c, w.up, x, up_, lora(LoraSlot::Up));
  const int64_t n = n_ * w.gate.w.rows;
  const ElementwiseParams p{u32(n), 0.0f};
  c.dispatch("bs_silu_mul", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {gate_, up_, gate_, {nullptr, 0, &p, sizeof p}});
  linear(c, w.down, gate_, y, lora(LoraSlot::Down));
}

// Routing on the device: ids and weights go from the routing kernel to the gathered matmuls.
void MetalDecoder::route(CommandList& c, const RouterSpec& spec, Arg logits, int64_t n, Arg ids, Arg wts) {
  const int64_t E = spec.n_experts, k = top_k_;
  if (spec.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKParams p{u32(n), u32(E), u32(k), spec.norm_topk_prob ? 1u : 0u};
    c.dispatch("bs_route_softmax_topk", {u32(n)}, 32, {logits, ids, wts, {nullptr, 0, &p, sizeof p}});
    return;
  }
  const SigmoidGroupParams p{u32(n),
                             u32(E),
                             u32(k),
                             u32(spec.n_group),
                             u32(spec.topk_group),
                             spec.norm_topk_prob ? 1u : 0u,
                             spec.correction_bias.empty() ? 0u : 1u,
                             spec.routed_scaling_factor};
  const Arg bias = spec.correction_bias.empty() ? token_ : vec(spec.correction_bias);
  c.dispatch("bs_route_sigmoid_group", {u32(n)}, 32, {logits, bias, ids, wts, {nullptr, 0, &p, sizeof p}});
}

// Routing on the device: ids and weights go from the routing kernel (or, in a decode step after
// a prediction, from the prerouter's buffers) to the gathered matmuls.
void MetalDecoder::moe(CommandList& c, int64_t l) {
  const bs::MoeWeights& w = m_.layers[l].moe;
  const int64_t H = m_.cfg.hidden, k = top_k_, I = w.gate.rows;
  const int64_t rows = n_ * k;  // one per (token, routed expert), token-major
  Arg ids = ids_, wts = wts_;
  if (n_ == 1 && has_pred_[l]) {
    ids = pred_[l].ids[1 - parity_], wts = pred_[l].wts[1 - parity_];
  } else {
    linear(c, w.router, xn_, e_logits_);
    route(c, w.spec, e_logits_, n_, ids, wts);
  }
  if (m_.prerouter) predict(c, l, ids);
  matmul(c, w.gate, xn_, gate_, rows, ids, u32(k));
  matmul(c, w.up, xn_, up_, rows, ids, u32(k));
  const ElementwiseParams ps{u32(rows * I), 0.0f};
  c.dispatch("bs_silu_mul", {ceil_div(rows * I, BS_BLOCK)}, BS_BLOCK,
             {gate_, up_, gate_, {nullptr, 0, &ps, sizeof ps}});
  matmul(c, w.down, gate_, rows_, rows, ids, 1);
  const CombineParams pc{u32(n_), u32(k), u32(H)};
  c.dispatch("bs_moe_combine", {ceil_div(H, BS_BLOCK), u32(n_)}, BS_BLOCK,
             {rows_, wts, y_, {nullptr, 0, &pc, sizeof pc}});
  if (w.has_shared) {
    mlp(c, w.shared, xn_, y2_);
    add(c, y2_, y_, n_ * H);
  }
}

void MetalDecoder::append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) {
  run(tokens, n, step, logits != nullptr, false);
  if (logits) std::memcpy(logits, logits_.buf->contents(), static_cast<size_t>(m_.cfg.vocab) * 4);
}

int32_t MetalDecoder::append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) {
  run(tokens, n, step, true, true);
  return *reinterpret_cast<const int32_t*>(greedy_.buf->contents());
}

void MetalDecoder::run(const int32_t* tokens, int64_t n, const DeviceStep& step, bool head, bool greedy) {
  const ModelConfig& cfg = m_.cfg;
  const int top_k = step.top_k;
  if (step.adapter && step.adapter->model() != &m_) fail("metal decoder: the adapter was loaded for another model");
  if (n < 1 || n > max_chunk_) fail("metal decoder: a chunk takes 1 to ", max_chunk_, " tokens, got ", n);
  if (m_.top_k > 0 && (top_k < 1 || top_k > m_.top_k))
    fail("metal decoder: top_k must be 1 to ", m_.top_k, ", got ", top_k);
  if (pos_ + n > max_pos_)
    fail("metal decoder: positions ", pos_, "..", pos_ + n - 1, " run past its cache of ", max_pos_, " positions");
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= cfg.vocab)
      fail("metal decoder: token ", tokens[t], " is outside the vocabulary of ", cfg.vocab);
  }
  reserve(pos_ + n);
  use_adapter(step.adapter);
  if (top_k != last_top_k_) forget_predictions();  // as the CPU path: its one-hot features have k entries
  n_ = n;
  top_k_ = last_top_k_ = top_k;
  predicting_ = head;
  parity_ ^= 1;
  std::fill(made_pred_.begin(), made_pred_.end(), 0);
  auto* ids = reinterpret_cast<int32_t*>(token_.buf->contents());
  auto* positions = reinterpret_cast<int32_t*>(position_.buf->contents());
  for (int64_t t = 0; t < n; ++t) ids[t] = tokens[t], positions[t] = static_cast<int32_t>(pos_ + t);
  std::unique_ptr<CommandList> c = d_.begin();
  const int64_t H = cfg.hidden;
  const Weight& e = weight(m_.embed);
  const EmbedParams pe{u32(m_.embed.rows),
                       u32(H),
                       u32(m_.embed.quantised() ? m_.embed.bits : 0),
                       u32(m_.embed.group),
                       type_code(m_.embed.dtype),
                       e.w_off,
                       e.s_off,
                       e.b_off,
                       u32(n)};
  c->dispatch("bs_embed", {ceil_div(H, BS_BLOCK), u32(n)}, BS_BLOCK,
              {e.codes, e.scales, e.biases, token_, x_, {nullptr, 0, &pe, sizeof pe}});
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const LayerWeights& lw = m_.layers[l];
    layer_lora_ = adapter_ ? &adapter_->layer(l) : nullptr;
    rmsnorm(*c, x_, vec(lw.input_norm), n, H, xn_);
    attention(*c, l);
    add(*c, y_, x_, n * H);
    rmsnorm(*c, x_, vec(lw.post_norm), n, H, xn_);
    if (lw.is_moe) moe(*c, l);
    else mlp(*c, lw.mlp, xn_, y_);
    add(*c, y_, x_, n * H);
  }
  layer_lora_ = nullptr;
  // Only the last token's logits, when asked for: its row through the final norm and the LM head.
  if (head) {
    rmsnorm(*c, at(x_, (n - 1) * H), vec(m_.final_norm), 1, H, xn_);
    n_ = 1;
    linear(*c, m_.lm_head, xn_, logits_);
  }
  if (greedy) {
    const int64_t V = step.greedy_vocab > 0 ? std::min(step.greedy_vocab, cfg.vocab) : cfg.vocab;
    const ElementwiseParams p{u32(V), 0.0f};
    c->dispatch("bs_argmax", {1}, BS_BLOCK, {logits_, greedy_, {nullptr, 0, &p, sizeof p}});
  }
  c->commit_and_wait();
  ++commits_;
  pos_ += n;
  has_pred_.swap(made_pred_);
}

}  // namespace bs::metal
