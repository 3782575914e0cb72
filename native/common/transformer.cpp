// The decoder forward pass shared by every architecture:
// h = x + attn(rmsnorm(x)); x' = h + ffn(rmsnorm(h)); logits = lm_head(rmsnorm(x_last)).
#include <algorithm>

#include "common/error.h"
#include "common/io/prefaulter.h"
#include "common/lightning-attention.h"
#include "common/linear-attention.h"
#include "common/session.h"
#include "cpu/thread-pool.h"

namespace bs {

namespace {
std::atomic<uint64_t> next_model_id{1};
}  // namespace

Model::Model(const Backend& backend, int threads, bool kv_f16, int activation_bits)
    : id(next_model_id.fetch_add(1)),
      dispatch_(backend),
      kv_f16_(kv_f16),
      activation_bits_(activation_bits == 16 || activation_bits == 8 ? activation_bits : 24),  // the loader's three
      pool_(threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr) {}

Model::~Model() = default;

int Model::threads() const { return pool_ ? pool_->size() : 1; }

void Model::check_files() const {
  if (store) store->check_sizes();
  if (prerouter) prerouter->check_size();
}

Session::Session(std::shared_ptr<const Model> model, int64_t context_length) : model_(std::move(model)) {
  top_k_ = model_->top_k;
  ctx_len_ = context_length > 0 ? context_length : model_->cfg.max_positions;
  k_cache_.resize(model_->cfg.n_layers);
  v_cache_.resize(model_->cfg.n_layers);
  last_ids_.resize(model_->cfg.n_layers);
  predicted_.resize(model_->cfg.n_layers);
  consume_.resize(model_->cfg.n_layers);
  const ModelConfig& c = model_->cfg;
  rec_offset_.assign(c.n_layers, -1);
  int64_t floats = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (l < static_cast<int64_t>(c.linear_layer.size()) && c.linear_layer[l]) {
      rec_offset_[l] = floats;
      floats += c.linear.state_floats();
    }
  }
  rec_.assign(floats, 0.0f);
  if (floats > 0) snapshots_.reserve(kMaxSnapshots);  // slots never move
  if (const auto make = model_->dispatch().backend().session_decoder) decoder_ = make(*model_, ctx_len_);
}

uint64_t Session::state_bytes() const {
  uint64_t b = 0;
  for (const auto& c : k_cache_) b += c.capacity();
  for (const auto& c : v_cache_) b += c.capacity();
  b += rec_.capacity() * sizeof(float);
  if (decoder_) b += decoder_->state_bytes();
  for (const Snapshot& snap : snapshots_) b += snap.state.capacity() * sizeof(float);
  b += kept_embeds_.capacity() * sizeof(float) + kept_pos_.capacity() * sizeof(int32_t);
  return b;
}

void Session::reserve(int64_t tokens) {
  if (tokens <= capacity_) return;
  int64_t cap = std::max<int64_t>(capacity_, 64);
  while (cap < tokens) cap *= 2;
  cap = std::min(cap, ctx_len_);
  const int64_t row_bytes = model_->cfg.n_kv_heads * model_->cfg.head_dim * (model_->kv_f16() ? 2 : 4);
  if (!rec_.empty()) tokens_.reserve(cap);
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    if (rec_offset_[l] >= 0) continue;  // linear layers keep no KV cache
    k_cache_[l].resize(cap * row_bytes);
    v_cache_[l].resize(cap * row_bytes);
  }
  capacity_ = cap;
}

void Session::set_top_k(int k) {
  if (k < 1 || k > model_->top_k) {
    fail("topK (experts per token) must be between 1 and the model's ", model_->top_k, ", got ", k);
  }
  if (k == top_k_) return;
  top_k_ = k;
  for (auto& v : last_ids_) v.clear();
  for (Routing& r : predicted_) r = {};
}

void Session::truncate(int64_t n) {
  if (n < 0 || n > n_past_) fail("truncate(", n, ") is outside the session's ", n_past_, " cached tokens");
  for (auto& v : last_ids_) v.clear();
  for (Routing& r : predicted_) r = {};
  if (decoder_) decoder_->truncate(n);
  if (rec_.empty()) {
    n_past_ = n;  // rows past n are overwritten by the next append
    return;
  }
  if (n == n_past_) return;
  std::lock_guard<std::mutex> lock(model_->forward_mu);
  restore_recurrent(n);
}

void Session::restore_recurrent(int64_t n) {
  if (decoder_) {
    restore_on_device(n);
    return;
  }
  // The latest snapshot at or before n (none: the zero state at position 0).
  const Snapshot* best = nullptr;
  for (const Snapshot& snap : snapshots_) {
    if (snap.pos >= 0 && snap.pos <= n && (!best || snap.pos > best->pos)) best = &snap;
  }
  const int64_t from = best ? best->pos : 0;
  replay_.assign(tokens_.begin() + from, tokens_.begin() + n);
  if (best) {
    std::copy(best->state.begin(), best->state.end(), rec_.begin());
  } else {
    std::fill(rec_.begin(), rec_.end(), 0.0f);
  }
  for (Snapshot& snap : snapshots_) {
    if (snap.pos > n) snap.pos = -1;  // storage kept: a warm decode step never allocates one
  }
  n_past_ = from;
  tokens_.resize(from);
  drop_kept(n);
  const MultimodalInput* in = replay_input(from, n);
  const int64_t chunk = model_->prefill_chunk, len = n - from;
  const bool outer = replaying_;
  replaying_ = true;
  try {
    for (int64_t i = 0; i < len; i += chunk) {
      const int64_t m = std::min(chunk, len - i);
      const MultimodalChunk part = in ? multimodal_chunk(*in, len, i, m) : MultimodalChunk{};
      mm_ = in ? &part : nullptr;
      forward_chunk(replay_.data() + i, m, nullptr);
      mm_ = nullptr;
    }
  } catch (...) {
    mm_ = nullptr;
    replaying_ = outer;
    throw;
  }
  replaying_ = outer;
}

void Session::save_snapshot(bool decode) {
  Snapshot* slot = nullptr;
  auto take = [&](auto pred) {
    for (Snapshot& snap : snapshots_) {
      if (!slot && pred(snap)) slot = &snap;
    }
  };
  take([&](const Snapshot& x) { return x.pos == n_past_; });
  take([](const Snapshot& x) { return x.pos < 0; });
  if (!slot && snapshots_.size() < kMaxSnapshots) slot = &snapshots_.emplace_back();
  // Full: the earliest decode snapshot makes way for a decode one (prefill ends are kept), else
  // the earliest position.
  auto earliest = [&](bool only_decode) {
    Snapshot* best = nullptr;
    for (Snapshot& x : snapshots_) {
      if ((!only_decode || x.decode) && (!best || x.pos < best->pos)) best = &x;
    }
    return best;
  };
  if (!slot && decode) slot = earliest(true);
  if (!slot) slot = earliest(false);
  slot->pos = n_past_;
  slot->decode = decode;
  // On a device decoder the state stays there (hand_over brings it back).
  if (decoder_) decoder_->save_state(static_cast<int>(slot - snapshots_.data()));
  else copy_state(model_->ctx(), rec_.data(), static_cast<int64_t>(rec_.size()), slot->state);
}

void Session::snapshot_after(int64_t n) {
  if (rec_.empty()) return;
  int64_t latest = 0;
  for (const Snapshot& snap : snapshots_) latest = std::max(latest, snap.pos);
  if (n > 1 || n_past_ - latest >= kDecodeSnapshotEvery) save_snapshot(n == 1);
}

void Session::set_adapter(std::shared_ptr<const LoraAdapter> adapter) {
  if (adapter && !adapter->belongs_to(*model_)) {
    fail("adapter \"", adapter->name(), "\" was loaded for another model; load it for this session's model");
  }
  adapter_ = std::move(adapter);
}

void Session::check_append(const int32_t* tokens, int64_t n) const {
  const int64_t vocab = model_->cfg.vocab;
  if (n < 1) fail("no tokens given; pass at least one token id");
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      fail("token id ", tokens[i], " at index ", i, " is outside the vocabulary [0, ", vocab, ")");
    }
  }
  if (n_past_ + n > ctx_len_) {
    fail("context is full: ", n_past_, " cached + ", n, " new tokens exceed the session's contextLength ", ctx_len_,
         "; truncate the session or create one with a larger contextLength");
  }
}

void Session::append(const int32_t* tokens, int64_t n, float* logits, const MultimodalInput* mm) {
  check_append(tokens, n);
  if (mm) check_multimodal(*mm, n);
  if (device_append(tokens, n, logits, nullptr, mm)) return;
  reserve(n_past_ + n);
  std::lock_guard<std::mutex> lock(model_->forward_mu);
  // A failed call leaves the session as it was (n_past is advanced per completed chunk), so
  // a retry gives what the call would have given.
  const int64_t n_past = n_past_;
  saved_last_ids_ = last_ids_;
  saved_predicted_ = predicted_;
  try {
    for (int64_t i = 0; i < n; i += model_->prefill_chunk) {
      const int64_t m = std::min(model_->prefill_chunk, n - i);
      const MultimodalChunk chunk = mm ? multimodal_chunk(*mm, n, i, m) : MultimodalChunk{};
      mm_ = mm ? &chunk : nullptr;
      forward_chunk(tokens + i, m, i + m == n ? logits : nullptr);
      mm_ = nullptr;
    }
  } catch (...) {
    mm_ = nullptr;
    if (rec_.empty()) n_past_ = n_past;
    last_ids_ = saved_last_ids_;
    predicted_ = saved_predicted_;
    // A hybrid model's completed chunks advanced its recurrent state: rebuild it at n_past. Should
    // the replay fail too, the session stays consistent at the shorter prefix it reached; the
    // caller sees the first error.
    if (!rec_.empty()) {
      try {
        restore_recurrent(n_past);
      } catch (...) {
      }
    }
    throw;
  }
  snapshot_after(n);
}

void Session::moe_layer(int64_t l, int64_t n, bool predict, const LayerLora* lora) {
  const Model& m = *model_;
  const LayerWeights& lw = m.layers[l];
  Scratch& s = scratch_;
  const int k = top_k_;
  const Phase phase = n == 1 ? Phase::Decode : Phase::Prefill;
  const int32_t* ids;
  const float* weights;
  if (n == 1 && !consume_[l].ids.empty()) {
    // Prediction as routing: the experts prefetched for this step are exactly the routed ones.
    ids = consume_[l].ids.data();
    weights = consume_[l].weights.data();
    ++stats_.predicted_layers;
    if (m.stream.measure_recall) {
      route_tokens(m, lw.moe, xn_.data(), 1, s);
      for (int i = 0; i < k; ++i) stats_.recall_hits += std::count(ids, ids + k, s.ids[i]);
      stats_.recall_total += k;
    }
  } else {
    StageScope st(s.profile, Stage::Router);
    route_tokens(m, lw.moe, xn_.data(), n, s);
    ids = s.ids.data();
    weights = s.weights.data();
  }
  if (recorder_) recorder_->on_route(l, xn_.data(), n, ids, k);
  moe_experts(m, l, lw.moe, xn_.data(), n, phase, ids, weights, s, y_.data(), lora);
  const PrerouterHead* head = predict && m.prerouter ? m.prerouter->head(l) : nullptr;
  if (head) {
    // Head l at the last token predicts layer l+1's routing of the next token; its loads start now.
    const int32_t* cur = ids + (n - 1) * k;
    const int32_t* prev = n >= 2 ? ids + (n - 2) * k : (last_ids_[l].empty() ? nullptr : last_ids_[l].data());
    head_logits_.resize(m.cfg.router.n_experts);
    m.prerouter->predict(m, *head, xn_.data() + (n - 1) * m.cfg.hidden, cur, prev, k, head_scratch_,
                         head_logits_.data());
    Routing& r = predicted_[l + 1];
    r.ids.resize(k);
    r.weights.resize(k);
    route(m.dispatch(), m.ctx(), m.layers[l + 1].moe.spec, head_logits_.data(), 1, k, r.ids.data(), r.weights.data());
    if (m.streamer) m.streamer->prefetch(l + 1, r.ids.data(), k);
  }
  last_ids_[l].assign(ids + (n - 1) * k, ids + n * k);
}

void Session::forward_chunk(const int32_t* tokens, int64_t n, float* logits) {
  const Model& m = *model_;
  m.check_files();  // before any state changes: a shrunk file fails the chunk untouched
  const ModelConfig& c = m.cfg;
  const Dispatch& d = m.dispatch();
  const ExecCtx ctx = m.ctx();
  const int64_t H = c.hidden;
  Scratch& s = scratch_;
  s.bytes_touched = 0;
  s.experts_touched = 0;
  s.top_k = top_k_;
  // Predictions made at the previous step are consumed now; this step makes the next ones.
  consume_.swap(predicted_);
  for (Routing& r : predicted_) {
    r.ids.clear();
    r.weights.clear();
  }
  ExpertStreamer* streamer = m.streamer.get();
  const StreamCounters before = streamer ? streamer->counters() : StreamCounters{};
  struct EndForward {
    ExpertStreamer* st;
    ~EndForward() {
      if (st) st->end_forward();
    }
  } end_forward{streamer};
  if (streamer) {
    streamer->begin_forward();
    if (n == 1) {
      for (int64_t l = 0; l < c.n_layers; ++l) {
        if (!consume_[l].ids.empty()) streamer->reserve(l, consume_[l].ids.data(), top_k_);
      }
    }
  }
  x_.resize(n * H);
  xn_.resize(n * H);
  y_.resize(n * H);
  s.profile = m.profile ? &stats_.profile : nullptr;
  if (s.profile) s.profile->pool = ctx.pool;
  const uint64_t t_step = s.profile ? profile_now_ns() : 0;
  const ThreadPool::Counters pool0 = s.profile && ctx.pool ? ctx.pool->counters() : ThreadPool::Counters{};
  {
    StageScope st(s.profile, Stage::Embed);
    d.pick(Op::Embed, &m.embed).embed(ctx, m.embed, tokens, n, x_.data());
  }
  if (mm_) splice_embeddings();
  s.rope_shift = rope_shift(n_past_);
  s.mrope = mm_ && mm_->in->positions ? mm_->in->positions + mm_->start : nullptr;
  s.mrope_stride = mm_ ? mm_->total : 0;
  s.bytes_touched += static_cast<uint64_t>(n) * m.embed.mat_bytes() / m.embed.rows;
  const Kernels& norm = d.pick(Op::RmsNorm);
  const Kernels& add = d.pick(Op::Add);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = m.layers[l];
    const LayerLora* lora = adapter_ ? &adapter_->layer(l) : nullptr;
    {
      StageScope st(s.profile, Stage::NormsResidual);
      norm.rmsnorm(ctx, x_.data(), lw.input_norm.data(), n, H, c.rms_eps, xn_.data());
    }
    if (lw.is_linear && c.linear.lightning) {
      lightning_attention_block(m, lw.linear, xn_.data(), n, n_past_, rec_.data() + rec_offset_[l], s, y_.data(), lora);
    } else if (lw.is_linear) {
      linear_attention_block(m, lw.linear, xn_.data(), n, rec_.data() + rec_offset_[l], s, y_.data(), lora);
    } else {
      attention_block(m, lw.attn, xn_.data(), n, n_past_, k_cache_[l].data(), v_cache_[l].data(), s, y_.data(), lora);
    }
    {
      StageScope st(s.profile, Stage::NormsResidual);
      add.add(ctx, y_.data(), 1.0f, n * H, x_.data());
      norm.rmsnorm(ctx, x_.data(), lw.post_norm.data(), n, H, c.rms_eps, xn_.data());
    }
    if (lw.is_moe) {
      moe_layer(l, n, logits != nullptr, lora);
    } else {
      StageScope st(s.profile, Stage::DenseMlp);
      mlp_block(m, lw.mlp, xn_.data(), n, s, y_.data(), lora);
    }
    {
      StageScope st(s.profile, Stage::NormsResidual);
      add.add(ctx, y_.data(), 1.0f, n * H, x_.data());
    }
    if (mm_ && l < mm_->in->n_deep) add_deepstack(l);
  }
  if (logits) {
    StageScope st(s.profile, Stage::LmHead);
    const float* last = x_.data() + (n - 1) * H;
    norm.rmsnorm(ctx, last, m.final_norm.data(), 1, H, c.rms_eps, xn_.data());
    run_linear(m, m.lm_head, xn_.data(), 1, logits, s);
  }
  record_positions(n);
  keep_inputs(n);
  n_past_ += n;
  if (!rec_.empty()) tokens_.insert(tokens_.end(), tokens, tokens + n);
  stats_.tokens += n;
  if (s.profile) {
    ++s.profile->steps;
    s.profile->step_ns += profile_now_ns() - t_step;
    if (ctx.pool) {
      const ThreadPool::Counters pc = ctx.pool->counters();
      s.profile->loops_total += pc.loops - pool0.loops;
      s.profile->wait_ns_total += pc.wait_ns - pool0.wait_ns;
    }
  }
  stats_.weight_bytes += s.bytes_touched;
  stats_.experts_computed += s.experts_touched;
  if (streamer) stats_.stream += streamer->counters() - before;
}

}  // namespace bs
