// The backend-independent half of the whole-token GPU decoders (metal/metal-decoder.cpp,
// cuda/cuda-decoder.cu): which models they cover, the matrices they read, the buffers they hold
// and the walk through one append (embedding, every layer, final norm, LM head) over a backend's
// primitives on buffer references R (a CUDA device pointer, a Metal buffer and offset).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/backend.h"
#include "common/device-decoder.h"
#include "common/error.h"
#include "common/lora.h"
#include "common/model.h"
#include "common/multimodal.h"
#include "common/prerouter/heads.h"

namespace bs {

// What a backend's kernels take: the name errors carry ("metal", "cuda"), the register limits
// and the weight formats.
struct DecoderKernels {
  std::string name;
  int64_t max_head_dim, max_experts;
  std::function<bool(Op, const WeightMatrix*)> accepts;
  bool slots = false;  // computes a staged decode path's experts from the streamer's slots
};

// Whether a decoder runs `m`'s routed experts from the streamer's staged slots (the staged decode
// path): every append, prefill chunks in waves; the expert stacks in the files are never bound.
bool slot_experts(const Model& m);
// Why the decoder cannot run `m` ("" when it can).
std::string decoder_unsupported(const Model& m, const DecoderKernels& k);
// Every matrix a forward reads, and the prerouter heads' (made device-visible once).
std::vector<const WeightMatrix*> decoder_matrices(const Model& m);
// Every norm, bias and correction-bias vector a forward reads.
std::vector<const std::vector<float>*> decoder_vectors(const Model& m);
// The RoPE frequency per pair [max(1, rot_dims / 2)] both decoders upload: the model's scaled
// table (llama3, linear rope_scaling) or θ^(−2i/rot); axis 0..2 (multimodal RoPE): only the pairs
// that axis (time, height, width) rotates, the others 0 (the rope kernels leave those alone).
std::vector<double> rope_table(const ModelConfig& c, int axis = -1);
// Throws bs::Error, naming the decoder, before anything runs for a bad chunk.
void check_append(const Model& m, const std::string& name, const int32_t* tokens, int64_t n, int64_t pos,
                  int64_t max_pos, int64_t max_chunk);

template <class R>
class DecoderWalk {
 public:
  virtual ~DecoderWalk() = default;
  int64_t position() const { return pos_; }

 protected:
  DecoderWalk(const Model& m, int64_t max_positions, int64_t max_chunk)
      : m_(m), max_pos_(max_positions), max_chunk_(std::max<int64_t>(1, max_chunk)), top_k_(std::max(1, m.top_k)) {}

  // The backend's buffers: `floats` float32s further into a, a fresh device buffer, a vector's copy.
  virtual R at(R a, int64_t floats) = 0;
  virtual R alloc(size_t bytes) = 0;
  virtual R upload(const std::vector<float>& v) = 0;
  // Host floats into a device buffer, ahead of the chunk's kernels.
  virtual void write(R dst, const float* src, int64_t floats) = 0;
  // Queued kernels. embed: token_ rows into x_; matmul: y[n, rows] = W·x, gathered (through
  // ids_, x row i / x_div) or plain; rope: in place over n_ tokens of `heads`, the pairs of
  // rope_table(axis) at rope_pos_ row max(axis, 0);
  // attend: q_ over layer l's caches into attn_; route: e_logits_ into ids_ and wts_;
  // combine: the routed rows_ weighted by wts_ into y_.
  virtual void embed(int64_t n) = 0;
  virtual void matmul(const WeightMatrix& w, R x, R y, int64_t n, bool gather, int64_t x_div) = 0;
  // Several products over the same x (q, k, v; gate, up), each plus its bias over the n rows where
  // bias is given and bias[i] not empty: one matmul and one add_rows each, or one launch where
  // the backend can (the bias added to the finished sum: the same bits either way).
  virtual void matmuls(const WeightMatrix* const* w, const R* y, int count, R x, int64_t n, bool gather, int64_t x_div,
                       const std::vector<float>* const* bias) {
    for (int i = 0; i < count; ++i) matmul(*w[i], x, y[i], n, gather, x_div);
    for (int i = 0; bias && i < count; ++i)
      if (!bias[i]->empty()) add_rows(vec(*bias[i]), y[i], w[i]->rows, n);
  }
  virtual void rmsnorm(R x, R w, int64_t rows, int64_t d, R y) = 0;
  virtual void add(R x, R y, int64_t n) = 0;  // y += x
  // y[r, :width] += b[:width] for r < rows (a linear's bias over the chunk): one launch where the
  // backend can, else one add per row.
  virtual void add_rows(R b, R y, int64_t width, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) add(b, at(y, r * width), width);
  }
  virtual void silu_mul(R gate, R up, int64_t n) = 0;
  virtual void rope(R x, int64_t heads, int axis) = 0;
  virtual void attend(int64_t l) = 0;
  virtual void route(const MoeWeights& w) = 0;
  virtual void combine(int64_t k) = 0;
  // Gated DeltaNet: conv_silu: lin_conv_ = SiLU(causal conv of lin_qkv_ over layer l's history,
  // advanced); delta_rule: lin_y_ from lin_conv_, lin_b_, lin_a_ and the layer's S, advanced.
  virtual void conv_silu(int64_t l, const LinearAttnWeights& w) = 0;
  virtual void delta_rule(int64_t l, const LinearAttnWeights& w) = 0;
  // Lightning attention: lin_y_ from q, k, v [n_, heads, D] (q scaled by 1/√D) and layer l's S.
  virtual void lightning_rule(int64_t l, const LinearAttnWeights& w, R q, R k, R v) = 0;
  // x[i] *= sigmoid(g[(i / period) · g_stride + (i % period) · g_step]) over n values.
  virtual void sigmoid_mul(R x, R g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step) = 0;
  // dst[t, h, :width] = src[t, h, :width] over n_ tokens with each side's token and head strides.
  virtual void copy_heads(R src, int64_t src_token, int64_t src_head, R dst, int64_t dst_token, int64_t dst_head,
                          int64_t heads, int64_t width) = 0;
  // Where the chunk's k (or v) rows are written, normed and rotated: by default the float32
  // cache rows at pos_; a backend with another cache type returns scratch and converts it into
  // the cache in store_kv.
  virtual R kv_rows(int64_t l, bool v) {
    return at(v ? v_cache_[l] : k_cache_[l], pos_ * m_.cfg.n_kv_heads * m_.cfg.head_dim);
  }
  virtual void store_kv(int64_t l) {}
  // q_ and the chunk's k rows: per-head RMSNorm (Qwen3's q_norm, k_norm) and RoPE, in place; then
  // the rows into layer l's cache (store_kv), which a backend may join to the same launch.
  virtual void norm_rope(const AttentionWeights& w, int64_t l, R k_at) {
    const ModelConfig& cfg = m_.cfg;
    if (!w.q_norm.empty()) {
      rmsnorm(q_, vec(w.q_norm), n_ * cfg.n_heads, cfg.head_dim, q_);
      rmsnorm(k_at, vec(w.k_norm), n_ * cfg.n_kv_heads, cfg.head_dim, k_at);
    }
    if (cfg.rot_dims / 2 > 0) {
      rotate(q_, cfg.n_heads);
      rotate(k_at, cfg.n_kv_heads);
    }
    store_kv(l);
  }
  // RoPE over the chunk: each axis's pairs by its positions in an image chunk, else every pair.
  void rotate(R x, int64_t heads) {
    if (!mrope_) return rope(x, heads, -1);
    for (int axis = 0; axis < 3; ++axis) rope(x, heads, axis);
  }
  // After a base linear of layer layer_ (and its bias): y += the LoRA delta of `slot` on x, if
  // any; by default adapter_'s delta through lora_delta (a backend holding its own adapter
  // overrides delta instead).
  virtual void delta(LoraSlot slot, R x, R y) {
    if (const LoraWeights* d = lora(slot)) lora_delta(*d, x, y);
  }
  // The layer being queued's delta for `slot`, or nullptr.
  const LoraWeights* lora(LoraSlot slot) const { return layer_lora_ ? layer_lora_->get(slot) : nullptr; }
  // y[n_, out] += scale · B (A x): an unmerged LoRA delta beside its base linear.
  virtual void lora_delta(const LoraWeights& d, R x, R y) {}
  // The deltas of several linears over the same x (q, k, v): one delta each, or batched.
  virtual void deltas(const LoraSlot* slots, const R* ys, int count, R x) {
    for (int i = 0; i < count; ++i) delta(slots[i], x, ys[i]);
  }
  // The chunk's routing into the ids and weights the gathered matmuls and combine read: by default
  // the router's logits through route(); a backend with routing predicted ahead overrides it.
  virtual void routing(const MoeWeights& w) {
    linear(w.router, xn_, e_logits_);
    route(w);
  }
  // Prerouter hooks around a MoE layer's routing: true when the backend routed layer l of this
  // step by an earlier prediction instead; `routed` runs after either (the ids are the step's).
  virtual bool route_by_prediction(int64_t l) { return false; }
  virtual void routed(int64_t l) {}
  // The routed experts of `rows` (token, expert) pairs into rows_; a backend computing them
  // from streamed slots (metal/metal-decoder-slots.cpp) or sorting a chunk's rows by expert first
  // (cuda/cuda-decoder.cu) overrides it.
  virtual void experts(const MoeWeights& w, int64_t rows, int64_t k) { expert_mlp(w, rows, k, rows_); }
  // Gate, up, SiLU-gate and down gathered by the routing: out[rows, hidden].
  void expert_mlp(const MoeWeights& w, int64_t rows, int64_t k, R out) {
    const WeightMatrix* gate_up[2] = {&w.gate, &w.up};
    const R y[2] = {gate_, up_};
    matmuls(gate_up, y, 2, xn_, rows, true, k, nullptr);
    gated_down(w.down, rows, out);
  }
  // out = down · (SiLU(gate_) · up_) over `rows` gathered rows: SiLU-gate then the down
  // projection, or one launch where the backend can.
  virtual void gated_down(const WeightMatrix& down, int64_t rows, R out) {
    silu_mul(gate_, up_, rows * down.cols);
    matmul(down, gate_, out, rows, true, 1);
  }
  // x += res, then y = RMSNorm(x)·w over `rows` rows of d: one launch where the backend can.
  virtual void add_rmsnorm(R res, R x, R w, int64_t rows, int64_t d, R y) {
    add(res, x, rows * d);
    rmsnorm(x, w, rows, d, y);
  }
  // The routed rows_ weighted by the routing into y_ (combine), with `shared` the shared experts'
  // y2_ added to them (with `gated` first scaled by the sigmoid of its row's shared_gate_), then
  // add_rmsnorm(y_, x, …): one launch where the backend can (y_ and y2_ then not written).
  virtual void combine_add_rmsnorm(int64_t k, bool shared, bool gated, R x, R w, int64_t rows, int64_t d, R y) {
    combine(k);
    if (gated) sigmoid_mul(y2_, shared_gate_, rows * d, d, 1, 0);
    if (shared) add(y2_, y_, rows * d);
    add_rmsnorm(y_, x, w, rows, d, y);
  }

  // The KV caches (kv_bytes per element, `rows` positions; 0: max_positions) and activations
  // for max_chunk tokens; the derived constructor calls it.
  void allocate(int64_t kv_bytes = 4, int64_t rows = 0) {
    const ModelConfig& c = m_.cfg;
    const int64_t H = c.hidden, k = std::max(1, m_.top_k), kv = c.n_kv_heads * c.head_dim, n = max_chunk_;
    const int64_t inter = std::max({c.intermediate, k * c.moe_intermediate, c.shared_intermediate, int64_t{1}});
    const int64_t E = std::max(1, c.router.n_experts);
    capacity_ = rows > 0 ? std::min(rows, max_pos_) : max_pos_;
    // Linear layers keep a recurrent state instead of a KV cache (the session's layout: conv
    // history then S, layer after layer).
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const bool lin = m_.layers[l].is_linear;
      k_cache_.push_back(lin ? R{} : alloc(static_cast<size_t>(capacity_ * kv * kv_bytes)));
      v_cache_.push_back(lin ? R{} : alloc(static_cast<size_t>(capacity_ * kv * kv_bytes)));
      rec_offset_.push_back(lin ? rec_floats_ : -1);
      if (lin) rec_floats_ += c.linear.state_floats();
    }
    auto f = [&](int64_t count) { return alloc(static_cast<size_t>(count) * 4); };
    if (rec_floats_ > 0) {
      const LinearAttnConfig& lc = c.linear;
      rec_ = f(rec_floats_);
      const int64_t C = lc.conv_dim(), VD = lc.value_dim(), Hv = lc.v_heads;
      const int64_t fused = lc.k_heads * (2 * lc.k_dim + 2 * (Hv / std::max<int64_t>(1, lc.k_heads)) * lc.v_dim);
      lin_qkv_ = f(n * C), lin_conv_ = f(n * C), lin_z_ = f(n * VD), lin_y_ = f(n * VD);
      lin_b_ = f(n * Hv), lin_a_ = f(n * Hv), lin_proj_ = f(n * fused), lin_proj2_ = f(n * 2 * Hv);
    }
    // q_proj's [q | gate] rows, or the fused query_key_value's [q | k | v].
    if (c.attn_output_gate || c.fused_qkv)
      q_gate_ = f(n * std::max(2 * c.n_heads * c.head_dim, (c.n_heads + 2 * c.n_kv_heads) * c.head_dim));
    shared_gate_ = f(n);
    x_ = f(n * H), xn_ = f(n * H), y_ = f(n * H), y2_ = f(n * H);
    q_ = f(n * c.n_heads * c.head_dim), attn_ = f(n * c.n_heads * c.head_dim);
    gate_ = f(n * inter), up_ = f(n * inter), rows_ = f(n * k * H);
    logits_ = f(c.vocab), e_logits_ = f(n * E), ids_ = f(n * k), wts_ = f(n * k);
    // One buffer, [tokens | cache rows (the CUDA decoder's) | RoPE positions, 3 axes] of n each:
    // an append's inputs go up in one copy.
    token_ = f(5 * n), rope_pos_ = at(token_, 2 * n);
    for (const std::vector<float>* v : decoder_vectors(m_)) {
      if (!v->empty()) vectors_.emplace(v->data(), upload(*v));
    }
  }

  // Before queuing an append of n tokens: their RoPE positions into pos [3, max_chunk] (the cache
  // rows plus step.rope_shift in row 0, or an image chunk's three axes) and the chunk's image
  // rows (embeddings, then the deepstack features of each layer) written into image_.
  void stage_inputs(const DeviceStep& step, int64_t n, int32_t* pos) {
    mm_ = step.mm && step.mm->r1 > step.mm->r0 ? step.mm : nullptr;
    mrope_ = step.mm && step.mm->in->positions;
    if (mrope_ && m_.cfg.mrope_section.empty())
      fail("3-D positions given but ", m_.cfg.arch, " has no multimodal RoPE");
    for (int64_t t = 0; t < n; ++t) {
      if (!mrope_) pos[t] = static_cast<int32_t>(pos_ + step.rope_shift + t);
      for (int a = 0; a < 3 && mrope_; ++a)
        pos[a * max_chunk_ + t] = step.mm->in->positions[a * step.mm->total + step.mm->start + t];
    }
    if (!mm_) return;
    const MultimodalInput& in = *mm_->in;
    const int64_t H = m_.cfg.hidden, rows = mm_->r1 - mm_->r0;
    if (image_floats_ < max_chunk_ * H * (1 + in.n_deep)) {
      image_floats_ = max_chunk_ * H * (1 + in.n_deep);
      image_ = alloc(static_cast<size_t>(image_floats_) * 4);
    }
    write(image_, in.embeds + mm_->r0 * H, rows * H);
    for (int64_t l = 0; l < in.n_deep; ++l)
      write(at(image_, (l + 1) * rows * H), in.deepstack + (l * in.n_rows + mm_->r0) * H, rows * H);
  }

  // Queues one append of n tokens (token_ and rope_pos_ already hold them, stage_inputs ran) with
  // top_k_ experts per token and adapter_'s deltas: with `head`, the last token's logits end in logits_.
  void forward(int64_t n, bool head = true) {
    const ModelConfig& cfg = m_.cfg;
    const int64_t H = cfg.hidden;
    n_ = n;
    embed(n);
    if (mm_) image_rows(0, false);
    // Each residual add is joined to the norm after it (the next layer's input norm).
    if (cfg.n_layers > 0) rmsnorm(x_, vec(m_.layers[0].input_norm), n, H, xn_);
    for (int64_t l = 0; l < cfg.n_layers; ++l) {
      const LayerWeights& lw = m_.layers[l];
      layer_ = l;
      layer_lora_ = adapter_ ? &adapter_->layer(l) : nullptr;
      if (lw.is_linear && cfg.linear.lightning) lightning_attention(l);
      else if (lw.is_linear) linear_attention(l);
      else attention(l);
      add_rmsnorm(y_, x_, vec(lw.post_norm), n, H, xn_);
      // DeepStack: image features added to the image rows after the first layers.
      const bool deep = mm_ && l < mm_->in->n_deep, next_norm = l + 1 < cfg.n_layers && !deep;
      // A MoE layer's combine (and its shared experts' add) joins the residual add and the next norm.
      const bool joined = next_norm && lw.is_moe;
      if (lw.is_moe) moe(l, !joined);
      else mlp(lw.mlp, xn_, y_);
      if (joined) {
        const MoeWeights& mw = lw.moe;
        combine_add_rmsnorm(top_k_, mw.has_shared, mw.has_shared && mw.shared_gated, x_,
                            vec(m_.layers[l + 1].input_norm), n, H, xn_);
        continue;
      }
      if (next_norm) {
        add_rmsnorm(y_, x_, vec(m_.layers[l + 1].input_norm), n, H, xn_);
        continue;
      }
      add(y_, x_, n * H);
      if (deep) image_rows((l + 1) * (mm_->r1 - mm_->r0) * H, true);
      if (l + 1 < cfg.n_layers) rmsnorm(x_, vec(m_.layers[l + 1].input_norm), n, H, xn_);
    }
    layer_lora_ = nullptr;
    if (!head) return;
    // Only the last token's logits: its row through the final norm and the LM head.
    rmsnorm(at(x_, (n - 1) * H), vec(m_.final_norm), 1, H, xn_);
    n_ = 1;
    linear(m_.lm_head, xn_, logits_);
  }

  // The prerouter's device state (the derived constructor calls it after allocate): per layer
  // after an owner, predicted ids and weights [top_k] double-buffered by the parity of the append
  // (a step consumes the last one's while writing its own); per owner, the ids of its last token
  // routed; the heads' logits and hidden units; host flags for both kinds.
  void allocate_predictions() {
    const ModelConfig& c = m_.cfg;
    const int64_t k = std::max(1, m_.top_k);
    pred_.resize(c.n_layers);
    has_pred_.assign(c.n_layers, 0), made_pred_.assign(c.n_layers, 0), has_last_.assign(c.n_layers, 0);
    if (!m_.prerouter) return;
    int64_t units = 1;
    for (const int64_t owner : m_.prerouter->owners()) {
      units = std::max(units, m_.prerouter->head(owner)->fc1.rows);
      Predicted& p = pred_[owner + 1];
      for (int i = 0; i < 2; ++i) p.ids[i] = alloc(k * 4), p.wts[i] = alloc(k * 4);
      pred_[owner].last = alloc(k * 4);
    }
    head_logits_ = alloc(std::max(1, c.router.n_experts) * 4), head_act_ = alloc(units * 4);
  }
  // Truncation and a top-k change drop the predictions and last ids, as on the CPU.
  void forget_predictions() {
    std::fill(has_pred_.begin(), has_pred_.end(), 0);
    std::fill(has_last_.begin(), has_last_.end(), 0);
  }

  R vec(const std::vector<float>& v) const { return vectors_.at(v.data()); }
  // The cache rows to grow to for `rows` positions: capacity doubled (from 64), up to max_positions.
  int64_t grown_capacity(int64_t rows) const {
    int64_t cap = std::max<int64_t>(capacity_, 64);
    while (cap < rows) cap *= 2;
    return std::min(cap, max_pos_);
  }

  // y[n_, out] = x[n_, in] · Wᵀ, plus the bias on every row (and with a slot, its LoRA delta:
  // the CPU's order).
  void linear(const Linear& l, R x, R y) {
    matmul(l.w, x, y, n_, false, 1);
    bias(l, y);
  }
  void bias(const Linear& l, R y) {
    if (!l.bias.empty()) add_rows(vec(l.bias), y, l.w.rows, n_);
  }
  void linear(const Linear& l, R x, R y, LoraSlot slot) {
    linear(l, x, y);
    delta(slot, x, y);
  }
  // Linears over the same x: the base products with their biases together, then the deltas.
  struct Out {
    const Linear* l;
    R y;
    LoraSlot slot;
  };
  template <int N>
  void linears(const Out (&outs)[N], R x) {
    const WeightMatrix* w[N];
    const std::vector<float>* b[N];
    R y[N];
    LoraSlot slots[N];
    for (int i = 0; i < N; ++i)
      w[i] = &outs[i].l->w, b[i] = &outs[i].l->bias, y[i] = outs[i].y, slots[i] = outs[i].slot;
    matmuls(w, y, N, x, n_, false, 1, b);
    deltas(slots, y, N, x);
  }

  const Model& m_;
  int64_t max_pos_, max_chunk_, pos_ = 0;
  int64_t capacity_ = 0;  // cache rows allocated
  int64_t n_ = 1;         // tokens of the chunk being queued
  int64_t layer_ = 0;     // the layer being queued
  int top_k_;             // experts per token of the chunk being queued
  const LoraAdapter* adapter_ = nullptr;
  std::vector<R> k_cache_, v_cache_;
  R x_{}, xn_{}, y_{}, y2_{}, q_{}, attn_{}, gate_{}, up_{}, logits_{}, e_logits_{}, ids_{}, wts_{}, rows_{};
  R token_{}, rope_pos_{};
  // The chunk being queued: its image rows (nullptr: none; stage_inputs) staged in image_, and
  // whether its positions are 3-D.
  const MultimodalChunk* mm_ = nullptr;
  bool mrope_ = false;
  R image_{};
  int64_t image_floats_ = 0;
  // Hybrid models: every linear layer's recurrent state (rec_offset_[l] floats into rec_, −1 for
  // attention layers) and the Gated DeltaNet's activations; q_proj's [q | gate] rows; the shared
  // expert's gate per token.
  R rec_{}, lin_qkv_{}, lin_conv_{}, lin_z_{}, lin_y_{}, lin_b_{}, lin_a_{}, lin_proj_{}, lin_proj2_{};
  R q_gate_{}, shared_gate_{};
  std::vector<int64_t> rec_offset_;
  int64_t rec_floats_ = 0;
  // The prerouter's (allocate_predictions).
  struct Predicted {
    R ids[2]{}, wts[2]{}, last{};
  };
  std::vector<Predicted> pred_;
  std::vector<char> has_pred_, made_pred_, has_last_;
  R head_logits_{}, head_act_{};
  int parity_ = 0, last_top_k_ = 0;

 private:
  // x_'s image rows of the chunk = (or +=) image_ from float `from` on, one copy or add per run of
  // consecutive rows (a copy as one "token" of the run's floats).
  void image_rows(int64_t from, bool accumulate) {
    const int64_t H = m_.cfg.hidden, *rows = mm_->in->rows;
    for (int64_t a = mm_->r0, b = a; a < mm_->r1; a = b) {
      while (++b < mm_->r1 && rows[b] == rows[b - 1] + 1) {
      }
      const R src = at(image_, from + (a - mm_->r0) * H), dst = at(x_, (rows[a] - mm_->start) * H);
      if (accumulate) {
        add(src, dst, (b - a) * H);
        continue;
      }
      const int64_t n = n_;
      n_ = 1;
      copy_heads(src, 0, 0, dst, 0, 0, 1, (b - a) * H);
      n_ = n;
    }
  }

  // q, and the chunk's k and v straight into the cache rows pos_..; qk-norm and RoPE in place there.
  void attention(int64_t l) {
    const AttentionWeights& w = m_.layers[l].attn;
    const ModelConfig& c = m_.cfg;
    const R k_at = kv_rows(l, false), v_at = kv_rows(l, true);
    // Output-gated: q_proj gives per head [q head_dim | gate head_dim]; q is copied out.
    const bool gated = c.attn_output_gate;
    const int64_t hd = c.head_dim, q_dim = c.n_heads * hd, kv = c.n_kv_heads * hd;
    if (c.fused_qkv) {
      // query_key_value gives per token [q | k | v]: copied into q_ and the cache rows.
      linear(w.q, xn_, q_gate_, LoraSlot::Q);
      copy_heads(q_gate_, q_dim + 2 * kv, 0, q_, q_dim, 0, 1, q_dim);
      copy_heads(at(q_gate_, q_dim), q_dim + 2 * kv, 0, k_at, kv, 0, 1, kv);
      copy_heads(at(q_gate_, q_dim + kv), q_dim + 2 * kv, 0, v_at, kv, 0, 1, kv);
    } else {
      linears<3>({{&w.q, gated ? q_gate_ : q_, LoraSlot::Q}, {&w.k, k_at, LoraSlot::K}, {&w.v, v_at, LoraSlot::V}},
                 xn_);
    }
    if (gated) copy_heads(q_gate_, 2 * q_dim, 2 * hd, q_, q_dim, hd, c.n_heads, hd);
    norm_rope(w, l, k_at);
    attend(l);
    if (gated) sigmoid_mul(attn_, at(q_gate_, hd), n_ * q_dim, hd, 2 * hd, 1);
    linear(w.o, attn_, y_, LoraSlot::O);
  }

  // A Gated DeltaNet layer (common/linear-attention.cpp's linear_attention_block): projections,
  // conv + SiLU, the delta rule, the gated RMSNorm (rmsnorm(y)·w · SiLU(z)) and out_proj into y_.
  void linear_attention(int64_t l) {
    const LinearAttnWeights& w = m_.layers[l].linear;
    const LinearAttnConfig& c = m_.cfg.linear;
    const int64_t Hk = c.k_heads, Dk = c.k_dim, Dv = c.v_dim, r = c.v_heads / c.k_heads, C = c.conv_dim();
    if (w.fused) {
      // qwen3_next: per k head [q Dk | k Dk | v r·Dv | z r·Dv] and [b r | a r].
      const int64_t group = 2 * Dk + 2 * r * Dv, key = c.key_dim();
      linear(w.qkvz, xn_, lin_proj_, LoraSlot::LinQkvz);
      linear(w.ba, xn_, lin_proj2_, LoraSlot::LinBa);
      copy_heads(lin_proj_, Hk * group, group, lin_qkv_, C, Dk, Hk, Dk);
      copy_heads(at(lin_proj_, Dk), Hk * group, group, at(lin_qkv_, key), C, Dk, Hk, Dk);
      copy_heads(at(lin_proj_, 2 * Dk), Hk * group, group, at(lin_qkv_, 2 * key), C, r * Dv, Hk, r * Dv);
      copy_heads(at(lin_proj_, 2 * Dk + r * Dv), Hk * group, group, lin_z_, c.value_dim(), r * Dv, Hk, r * Dv);
      copy_heads(lin_proj2_, Hk * 2 * r, 2 * r, lin_b_, c.v_heads, r, Hk, r);
      copy_heads(at(lin_proj2_, r), Hk * 2 * r, 2 * r, lin_a_, c.v_heads, r, Hk, r);
    } else {
      linear(w.qkv, xn_, lin_qkv_, LoraSlot::LinQkv);
      linear(w.z, xn_, lin_z_, LoraSlot::LinZ);
      linear(w.b, xn_, lin_b_, LoraSlot::LinB);
      linear(w.a, xn_, lin_a_, LoraSlot::LinA);
    }
    conv_silu(l, w);
    delta_rule(l, w);
    rmsnorm(lin_y_, vec(w.norm), n_ * c.v_heads, Dv, lin_y_);
    silu_mul(lin_z_, lin_y_, n_ * c.value_dim());  // lin_z_ = SiLU(z) · normed y
    linear(w.out, lin_z_, y_, LoraSlot::LinOut);
  }

  // A lightning-attention layer (common/lightning-attention.cpp's lightning_attention_block):
  // query_key_value split into q, k, v blocks of lin_conv_, q/k RMSNorm and RoPE (the attention
  // layers' heads and rotary dims), the recurrence, the group RMSNorm (each of norm_groups slices
  // normed on its own: regrouped to [group, token, width] in lin_qkv_ and back) times sigmoid(z),
  // then out_proj into y_.
  void lightning_attention(int64_t l) {
    const LinearAttnWeights& w = m_.layers[l].linear;
    const LinearAttnConfig& c = m_.cfg.linear;
    const int64_t H = c.k_heads, D = c.k_dim, HD = H * D, G = c.norm_groups, width = HD / G;
    linear(w.qkv, xn_, lin_qkv_, LoraSlot::LinQkv);
    const R q = lin_conv_, k = at(lin_conv_, n_ * HD), v = at(lin_conv_, 2 * n_ * HD);
    copy_heads(lin_qkv_, 3 * HD, 0, q, HD, 0, 1, HD);
    copy_heads(at(lin_qkv_, HD), 3 * HD, 0, k, HD, 0, 1, HD);
    copy_heads(at(lin_qkv_, 2 * HD), 3 * HD, 0, v, HD, 0, 1, HD);
    if (!w.q_norm.empty()) {
      rmsnorm(q, vec(w.q_norm), n_ * H, D, q);
      rmsnorm(k, vec(w.k_norm), n_ * H, D, k);
    }
    rotate(q, H);
    rotate(k, H);
    lightning_rule(l, w, q, k, v);
    linear(w.z, xn_, lin_z_, LoraSlot::LinZ);
    copy_heads(lin_y_, HD, width, lin_qkv_, width, n_ * width, G, width);
    for (int64_t g = 0; g < G; ++g)
      rmsnorm(at(lin_qkv_, g * n_ * width), at(vec(w.norm), g * width), n_, width, at(lin_qkv_, g * n_ * width));
    copy_heads(lin_qkv_, width, n_ * width, lin_y_, HD, width, G, width);
    sigmoid_mul(lin_y_, lin_z_, n_ * HD, HD, HD, 1);
    linear(w.out, lin_y_, y_, LoraSlot::LinOut);
  }

  // The dense MLP or the shared experts, with the layer's Gate/Up/Down deltas.
  void mlp(const MlpWeights& w, R x, R y) {
    linears<2>({{&w.gate, gate_, LoraSlot::Gate}, {&w.up, up_, LoraSlot::Up}}, x);
    silu_mul(gate_, up_, n_ * w.gate.w.rows);
    linear(w.down, gate_, y, LoraSlot::Down);
  }

  // Routing on the device: ids and weights go from the routing kernel to the gathered matmuls.
  // Without `combine` the routed rows stay in rows_ and the shared experts' output in y2_, its
  // gate's logits in shared_gate_ (the caller's combine_add_rmsnorm sums them).
  void moe(int64_t l, bool combine_rows) {
    const MoeWeights& w = m_.layers[l].moe;
    const int64_t k = top_k_, rows = n_ * k;  // one per (token, routed expert), token-major
    if (!route_by_prediction(l)) routing(w);
    routed(l);
    experts(w, rows, k);
    if (combine_rows) combine(k);
    if (w.has_shared) {
      mlp(w.shared, xn_, y2_);
      if (w.shared_gated) linear(w.shared_gate, xn_, shared_gate_);
      if (combine_rows && w.shared_gated) sigmoid_mul(y2_, shared_gate_, n_ * m_.cfg.hidden, m_.cfg.hidden, 1, 0);
      if (combine_rows) add(y2_, y_, n_ * m_.cfg.hidden);
    }
  }

  std::unordered_map<const void*, R> vectors_;  // norms and biases, by their data
  const LayerLora* layer_lora_ = nullptr;       // the layer being queued
};

}  // namespace bs
