#include "metal/metal-decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "common/experts/streamer.h"
#include "common/prerouter/heads.h"
#include "common/rope-scaling.h"
#include "metal/metal-encode.h"
#include "metal/metal-ops.h"

namespace bs::metal {

std::string MetalDecoder::unsupported(const Model& m) {
  static_assert(BS_MAX_DELTA_K == 256 && BS_MAX_CONV == 8, "decoder_unsupported states these limits");
  return decoder_unsupported(m, {"Metal", BS_MAX_HEAD_DIM, BS_MAX_EXPERTS, MetalOps::accepts, /*slots=*/true});
}

MetalDecoder::MetalDecoder(Device& d, const Model& m, int64_t max_positions, int64_t max_chunk,
                           std::shared_ptr<const DeviceWeights> weights)
    : DecoderWalk(m, max_positions, max_chunk), d_(d) {
  if (const std::string why = unsupported(m); !why.empty()) fail("metal decoder: ", why);
  w_ = weights ? std::move(weights) : std::make_shared<const DeviceWeights>(d, m);
  const ModelConfig& c = m.cfg;
  const int64_t kv = c.n_kv_heads * c.head_dim;
  kv_elem_ = m.kv_f16() ? 2 : 4;
  capacity_ = std::min<int64_t>(max_pos_, 64);
  allocate(kv_elem_, capacity_);
  init_slots();
  greedy_ = alloc(4);
  if (const int64_t E = c.router.n_experts, rows = max_chunk_ * std::max(1, m.top_k); E > 0 && max_chunk_ > 1)
    sorted_ = alloc((1 + 2 * route_tiles_max(rows, E) + rows) * 4);
  if (m.kv_f16()) k_f32_ = alloc(max_chunk_ * kv * 4), v_f32_ = alloc(max_chunk_ * kv * 4);
  allocate_predictions();
  if (rec_floats_ > 0) load_state(-1);
}

MetalDecoder::~MetalDecoder() = default;

Arg MetalDecoder::alloc(size_t bytes) {
  auto b = d_.alloc(std::max<size_t>(bytes, 16));
  if (!b) fail("metal decoder: cannot allocate a buffer of ", bytes, " bytes");
  owned_.push_back(std::move(b));
  return {owned_.back().get(), 0};
}

// Capacity doubles (up to max_positions), the cached rows copied over in shared memory, so a
// session pays for the context it uses.
void MetalDecoder::reserve(int64_t rows) {
  if (rows <= capacity_) return;
  int64_t cap = std::max<int64_t>(capacity_, 64);
  while (cap < rows) cap *= 2;
  cap = std::min(cap, max_pos_);
  const size_t row = static_cast<size_t>(m_.cfg.n_kv_heads * m_.cfg.head_dim * kv_elem_);
  for (auto* cache : {&k_cache_, &v_cache_}) {
    for (Arg& a : *cache) {
      if (!a.buf) continue;  // a linear layer's
      auto grown = d_.alloc(std::max<size_t>(cap * row, 16));
      if (!grown) fail("metal decoder: cannot allocate a KV cache of ", cap, " positions");
      std::memcpy(grown->contents(), a.buf->contents(), pos_ * row);
      const auto old = std::find_if(owned_.begin(), owned_.end(), [&](const auto& b) { return b.get() == a.buf; });
      a.buf = grown.get();
      *old = std::move(grown);
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
  std::memcpy(k, k_cache_[layer].buf->contents(), bytes);
  std::memcpy(v, v_cache_[layer].buf->contents(), bytes);
}

uint64_t MetalDecoder::state_bytes() const {
  uint64_t b = 0;
  for (const std::unique_ptr<Buffer>& buf : owned_) b += buf->size();
  return b;
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

// The quantised product's parameters for w over n rows of work, its weight buffers (the streamed
// slots when gathered from slots) and its threadgroups along y.
QMatParams MetalDecoder::qmat(const WeightMatrix& w, int64_t n, bool gather, int64_t x_div, const Weight** b,
                              uint32_t* tg_y) const {
  const bool slotted = gather && slots_;  // streamed: the expert's slot through the layer's table
  *b = slotted ? &w_->slots(w) : &weight(w);
  QMatParams p = qparams(w, n);
  p.w_off = (*b)->w_off, p.s_off = (*b)->s_off, p.b_off = (*b)->b_off;
  p.gather = gather ? 1 : 0;
  p.has_slots = slotted ? 1 : 0;
  p.x_div = u32(x_div);
  const bool grouped = gather && grouped_;  // tiles of one expert's rows: the order after them
  const uint32_t tiles = route_tiles_max(n, m_.cfg.router.n_experts);
  p.grouped = grouped ? 1 + 2 * tiles : 0;
  *tg_y = grouped ? tiles : gather ? u32(n) : ceil_div(n, BS_MM_TOKENS);
  return p;
}

// The routing a product reads (ids, slot table, sorted tiles); the token ids where it reads none
// (bound but unread).
std::array<Arg, 3> MetalDecoder::qmat_routing(const QMatParams& p) const {
  return {p.gather ? routed_ids_ : token_, p.has_slots ? slot_table_[layer_] : token_, p.grouped ? sorted_ : token_};
}

// One bs_qmatmul of the quantised w; with `up` bound (gated) x is read as SiLU(x)·up.
void MetalDecoder::qmatmul(const WeightMatrix& w, Arg x, Arg up, Arg y, int64_t n, bool gather, int64_t x_div,
                           bool gated) {
  const Weight* b = nullptr;
  uint32_t tg_y = 0;
  QMatParams p = qmat(w, n, gather, x_div, &b, &tg_y);
  p.gated = gated ? 1 : 0;
  const Grid g = qmat_grid(p, tg_y);
  const auto [ids, slots, sorted] = qmat_routing(p);
  c_->dispatch("bs_qmatmul", g, kMatThreads,
               {b->codes, b->scales, b->biases, x, y, ids, slots, sorted, up, {nullptr, 0, &p, sizeof p}});
}

// Gathered: row i takes x row i / x_div and the expert routed_ids_[i] (a slot table of the routing).
void MetalDecoder::matmul(const WeightMatrix& w, Arg x, Arg y, int64_t n, bool gather, int64_t x_div) {
  if (w.quantised()) {
    qmatmul(w, x, x, y, n, gather, x_div, false);
    return;
  }
  const Weight& b = weight(w);
  const DenseParams p{u32(w.rows), u32(w.cols), type_code(w.dtype), b.w_off, 0, u32(n), 0, 1.0f};
  c_->dispatch("bs_dense_matmul", {dense_groups(w.rows, w.cols), ceil_div(n, BS_MM_TOKENS)}, kMatThreads,
               {b.codes, x, y, {nullptr, 0, &p, sizeof p}});
}

// The down projection reads SiLU(gate)·up as its x (no bs_silu_mul dispatch, no gated rows
// written); a prefill chunk's grouped tiles are gated first (each threadgroup would redo the SiLU).
void MetalDecoder::gated_down(const WeightMatrix& down, int64_t rows, Arg out) {
  if (grouped_ || !down.quantised()) {
    DecoderWalk::gated_down(down, rows, out);
    return;
  }
  qmatmul(down, gate_, up_, out, rows, true, 1, true);
}

// Quantised products over one x (q, k, v; gate, up) in one bs_qmatmul_set, their biases added in
// it: x and the routing read by one dispatch instead of one each.
void MetalDecoder::matmuls(const WeightMatrix* const* w, const Arg* y, int count, Arg x, int64_t n, bool gather,
                           int64_t x_div, const std::vector<float>* const* bias) {
  bool together = count >= 2 && count <= static_cast<int>(BS_MM_SET);
  for (int i = 0; i < count && together; ++i) together = w[i]->quantised();
  if (!together) {
    DecoderWalk::matmuls(w, y, count, x, n, gather, x_div, bias);
    return;
  }
  QMatSetParams s{};
  std::vector<Arg> args;
  uint32_t tg_y = 0;
  for (int i = 0; i < static_cast<int>(BS_MM_SET); ++i) {
    const int j = std::min(i, count - 1);  // past count: bound, unread
    const Weight* b = nullptr;
    s.p[i] = qmat(*w[j], n, gather, x_div, &b, &tg_y);
    const bool biased = i < count && bias && !bias[j]->empty();
    s.p[i].has_bias = biased ? 1 : 0;
    args.insert(args.end(), {b->codes, b->scales, b->biases, y[j], biased ? vec(*bias[j]) : x});
  }
  const auto [ids, slots, sorted] = qmat_routing(s.p[0]);
  args.insert(args.end(), {x, ids, slots, sorted, {nullptr, 0, &s, sizeof s}});
  c_->dispatch("bs_qmatmul_set", qmat_set_grid(s, count, tg_y), kMatThreads, args);
}

// The LoRA delta scale · B (A x) after the base matmul and bias, as the CPU path adds it.
void MetalDecoder::delta(LoraSlot slot, Arg x, Arg y) {
  const LoraWeights* d = lora_adapter_ ? lora_adapter_->layer(layer_).get(slot) : nullptr;
  if (d) lora_steps(&d, &y, 1, x);
}

// The deltas of linears over one x (q, k, v; gate, up) as the same two dispatches for all of them.
void MetalDecoder::deltas(const LoraSlot* slots, const Arg* ys, int count, Arg x) {
  if (!lora_adapter_ || count > static_cast<int>(BS_MM_SET)) {
    DecoderWalk::deltas(slots, ys, count, x);
    return;
  }
  const LoraWeights* d[BS_MM_SET];
  Arg y[BS_MM_SET];
  int n = 0;
  for (int i = 0; i < count; ++i) {
    if (const LoraWeights* w = lora_adapter_->layer(layer_).get(slots[i])) d[n] = w, y[n++] = ys[i];
  }
  if (n > 0) lora_steps(d, y, n, x);
}

// Every t_i = A_i·x into its own rank-sized rows of lora_t_, then every y_i += scale_i · B_i·t_i:
// two bs_dense_matmul_set dispatches (each output's arithmetic the same whatever the count).
void MetalDecoder::lora_steps(const LoraWeights* const* d, const Arg* ys, int count, Arg x) {
  DenseSetParams sa{}, sb{};
  std::vector<Arg> a_args, b_args;
  for (int i = 0; i < static_cast<int>(BS_MM_SET); ++i) {
    const int j = std::min(i, count - 1);  // past count: bound, unread
    const LoraWeights& w = *d[j];
    const auto& [a, b] = adapter_w_.at(&w);
    const Arg t = at(lora_t_, j * max_chunk_ * lora_rank_);
    sa.p[i] = {u32(w.a.rows), u32(w.a.cols), type_code(w.a.dtype), 0, 0, u32(n_), 0, 1.0f};
    sb.p[i] = {u32(w.b.rows), u32(w.a.rows), type_code(w.b.dtype), 0, 0, u32(n_), 1, w.scale};
    a_args.insert(a_args.end(), {a, x, t});
    b_args.insert(b_args.end(), {b, t, ys[j]});
  }
  const Grid ga = dense_set_grid(sa, count, n_), gb = dense_set_grid(sb, count, n_);
  a_args.push_back({nullptr, 0, &sa, sizeof sa});
  b_args.push_back({nullptr, 0, &sb, sizeof sb});
  c_->dispatch("bs_dense_matmul_set", ga, kMatThreads, a_args);
  c_->dispatch("bs_dense_matmul_set", gb, kMatThreads, b_args);
}

void MetalDecoder::use_adapter(const std::shared_ptr<const LoraAdapter>& a) {
  if (a == lora_adapter_) return;
  adapter_w_.clear();
  adapter_owned_.clear();
  lora_adapter_.reset();
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
  auto t = d_.alloc(static_cast<size_t>(BS_MM_SET * max_chunk_ * rank * 4));  // one per delta of a set
  if (!t) fail("metal decoder: cannot allocate the LoRA intermediate of rank ", rank);
  lora_rank_ = rank;
  adapter_owned_.push_back(std::move(t));
  lora_t_ = {adapter_owned_.back().get(), 0};
  lora_adapter_ = a;
}

void MetalDecoder::rmsnorm(Arg x, Arg w, int64_t rows, int64_t d, Arg y) {
  const RmsNormParams p{u32(rows), u32(d), m_.cfg.rms_eps, 0, 0, 0, 0};
  c_->dispatch("bs_rmsnorm", {u32(rows)}, BS_BLOCK, {x, w, y, x, x, {nullptr, 0, &p, sizeof p}, x, x});
}

// The residual add joined to the norm: x += res, y = RMSNorm(x)·w in one dispatch.
void MetalDecoder::add_rmsnorm(Arg res, Arg x, Arg w, int64_t rows, int64_t d, Arg y) {
  const RmsNormParams p{u32(rows), u32(d), m_.cfg.rms_eps, 1, 0, 0, 0};
  c_->dispatch("bs_rmsnorm", {u32(rows)}, BS_BLOCK, {x, w, y, res, x, {nullptr, 0, &p, sizeof p}, x, x});
}

// The routed rows combined by the routing's weights, plus the shared experts' y2_ (scaled by the
// sigmoid of shared_gate_ when gated), inside the same dispatch (y_ and y2_ not written).
void MetalDecoder::combine_add_rmsnorm(int64_t k, bool shared, bool gated, Arg x, Arg w, int64_t rows, int64_t d,
                                       Arg y) {
  const RmsNormParams p{u32(rows), u32(d), m_.cfg.rms_eps, 1, u32(k), shared ? 1u : 0u, gated ? 1u : 0u};
  c_->dispatch("bs_rmsnorm", {u32(rows)}, BS_BLOCK,
               {x, w, y, rows_, routed_wts_, {nullptr, 0, &p, sizeof p}, shared ? y2_ : x, gated ? shared_gate_ : x});
}

void MetalDecoder::add(Arg x, Arg y, int64_t n) {
  const ElementwiseParams p{u32(n), 1.0f};
  c_->dispatch("bs_add", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {x, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::add_rows(Arg b, Arg y, int64_t width, int64_t rows) {
  const BiasParams p{u32(rows * width), u32(width)};
  c_->dispatch("bs_add_rows", {ceil_div(rows * width, BS_BLOCK)}, BS_BLOCK, {b, y, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::silu_mul(Arg gate, Arg up, int64_t n) {
  const ElementwiseParams p{u32(n), 0.0f};
  c_->dispatch("bs_silu_mul", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {gate, up, gate, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::rope(Arg x, int64_t heads, int axis) {
  const ModelConfig& cfg = m_.cfg;
  const RopeParams p{u32(n_), u32(heads), u32(cfg.head_dim), u32(cfg.rot_dims)};
  c_->dispatch("bs_rope", {ceil_div(heads * (cfg.rot_dims / 2), BS_BLOCK), u32(n_)}, BS_BLOCK,
               {x, at(rope_pos_, std::max(axis, 0) * max_chunk_), w_->inv_freq(axis), {nullptr, 0, &p, sizeof p}});
}

// Shared memory: written now, read by the command list committed after it.
void MetalDecoder::write(Arg dst, const float* src, int64_t floats) {
  std::memcpy(dst.buf->contents() + dst.offset, src, static_cast<size_t>(floats) * 4);
}

// f16 caches: the chunk's k and v in float32 scratch, rounded into the cache after qk-norm and
// RoPE (as the CPU path stores them).
Arg MetalDecoder::kv_rows(int64_t l, bool v) {
  if (kv_elem_ == 4) return DecoderWalk::kv_rows(l, v);
  return v ? v_f32_ : k_f32_;
}

// Qwen3's q/k norms and RoPE in one dispatch, with an f16 cache the store too; models without
// the norms rotate q and k (and store) in the same dispatch (multimodal RoPE, whose axes rotate
// in turns, takes the walk's steps).
void MetalDecoder::norm_rope(const AttentionWeights& w, int64_t l, Arg k_at) {
  const ModelConfig& c = m_.cfg;
  if (c.rot_dims / 2 <= 0 || mrope_) {
    DecoderWalk::norm_rope(w, l, k_at);
    return;
  }
  const bool store = kv_elem_ == 2, norm = !w.q_norm.empty();
  const int64_t kv = c.n_kv_heads * c.head_dim, heads = c.n_heads + c.n_kv_heads * (store ? 2 : 1);
  const QkNormRopeParams p{u32(n_),         u32(c.n_heads),  u32(c.n_kv_heads), u32(c.head_dim),
                           u32(c.rot_dims), store ? 1u : 0u, c.rms_eps,         norm ? 1u : 0u};
  // Without a store the cache arguments are bound but unread.
  const Arg kc = store ? Arg{k_cache_[l].buf, static_cast<size_t>(pos_ * kv * 2)} : k_at;
  const Arg vc = store ? Arg{v_cache_[l].buf, static_cast<size_t>(pos_ * kv * 2)} : k_at;
  c_->dispatch("bs_qk_norm_rope", {ceil_div(heads, BS_MM_SIMDGROUPS), u32(n_)}, kMatThreads,
               {q_,
                k_at,
                norm ? vec(w.q_norm) : q_,  // no norm: bound, unread
                norm ? vec(w.k_norm) : q_,
                rope_pos_,
                w_->inv_freq(-1),
                store ? v_f32_ : k_at,
                kc,
                vc,
                {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::store_kv(int64_t l) {
  if (kv_elem_ == 4) return;
  const int64_t kv = m_.cfg.n_kv_heads * m_.cfg.head_dim;
  const ElementwiseParams p{u32(n_ * kv), 0.0f};
  const auto row = static_cast<size_t>(pos_ * kv * 2);  // the chunk's first cache row, in bytes
  c_->dispatch("bs_to_f16", {ceil_div(n_ * kv, BS_BLOCK), 2}, BS_BLOCK,
               {k_f32_, {k_cache_[l].buf, row}, v_f32_, {v_cache_[l].buf, row}, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::attend(int64_t l) {
  const ModelConfig& cfg = m_.cfg;
  const AttentionParams p{u32(cfg.n_heads),
                          u32(cfg.n_kv_heads),
                          u32(cfg.head_dim),
                          u32(pos_),
                          u32(n_),
                          kv_elem_ == 2 ? BS_T_F16 : BS_T_F32,
                          static_cast<float>(attention_scale(cfg))};
  c_->dispatch("bs_attention", {u32(cfg.n_heads), u32(n_)}, kMatThreads,
               {q_, k_cache_[l], v_cache_[l], attn_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::route(const RouterSpec& spec, Arg logits, int64_t n, Arg ids, Arg wts) {
  const int64_t E = spec.n_experts, k = top_k_;
  if (spec.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKParams p{u32(n), u32(E), u32(k), spec.norm_topk_prob ? 1u : 0u};
    c_->dispatch("bs_route_softmax_topk", {u32(n)}, 32, {logits, ids, wts, {nullptr, 0, &p, sizeof p}});
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
  c_->dispatch("bs_route_sigmoid_group", {u32(n)}, 32, {logits, bias, ids, wts, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::routing(const MoeWeights& w) {
  routed_ids_ = ids_, routed_wts_ = wts_;
  if (n_ == 1 && has_pred_[layer_]) {
    routed_ids_ = pred_[layer_].ids[1 - parity_], routed_wts_ = pred_[layer_].wts[1 - parity_];
  } else {
    DecoderWalk::routing(w);
  }
  if (m_.prerouter) predict(layer_, routed_ids_);
}

void MetalDecoder::combine(int64_t k) {
  const CombineParams p{u32(n_), u32(k), u32(m_.cfg.hidden)};
  c_->dispatch("bs_moe_combine", {ceil_div(m_.cfg.hidden, BS_BLOCK), u32(n_)}, BS_BLOCK,
               {rows_, routed_wts_, y_, {nullptr, 0, &p, sizeof p}});
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
  if (step.adapter && !step.adapter->belongs_to(m_)) fail("metal decoder: the adapter was loaded for another model");
  check_append(m_, "metal", tokens, n, pos_, max_pos_, max_chunk_);
  if (m_.top_k > 0 && (top_k < 1 || top_k > m_.top_k))
    fail("metal decoder: top_k must be 1 to ", m_.top_k, ", got ", top_k);
  reserve(pos_ + n);
  use_adapter(step.adapter);
  if (top_k != last_top_k_) forget_predictions();  // as the CPU path: its one-hot features have k entries
  top_k_ = last_top_k_ = top_k;
  predicting_ = head;
  parity_ ^= 1;
  std::fill(made_pred_.begin(), made_pred_.end(), 0);
  std::copy_n(tokens, n, reinterpret_cast<int32_t*>(token_.buf->contents() + token_.offset));
  stage_inputs(step, n, reinterpret_cast<int32_t*>(rope_pos_.buf->contents() + rope_pos_.offset));
  try {
    if (slots_) stream_begin(n);
    list_ = d_.begin();
    c_ = list_.get();
    forward(n, head);
    if (greedy) {
      const int64_t V = step.greedy_vocab > 0 ? std::min(step.greedy_vocab, cfg.vocab) : cfg.vocab;
      const ElementwiseParams p{u32(V), 0.0f};
      c_->dispatch("bs_argmax", {1}, BS_BLOCK, {logits_, greedy_, {nullptr, 0, &p, sizeof p}});
    }
    c_->commit_and_wait();
  } catch (...) {
    c_ = nullptr, list_.reset();
    if (slots_) m_.streamer->end_forward();
    forget_predictions();  // a partly run append may have overwritten them
    throw;
  }
  c_ = nullptr, list_.reset();
  ++commits_;
  pos_ += n;
  if (slots_) stream_end();
  has_pred_.swap(made_pred_);
}

}  // namespace bs::metal
