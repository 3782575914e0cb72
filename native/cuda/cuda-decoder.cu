#include "cuda/cuda-decoder.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/accel-limits.h"
#include "common/error.h"
#include "common/experts/streamer.h"
#include "common/prerouter/heads.h"
#include "common/rope-scaling.h"
#include "common/session.h"
#include "cuda/add.cuh"
#include "cuda/argmax.cuh"
#include "cuda/attention.cuh"
#include "cuda/causal-conv.cuh"
#include "cuda/cuda-ops.cuh"
#include "cuda/delta-rule.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/embed.cuh"
#include "cuda/moe-combine.cuh"
#include "cuda/op-args.cuh"
#include "cuda/qk-norm-rope.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/rope.cuh"
#include "cuda/route-sigmoid-group.cuh"
#include "cuda/route-softmax-topk.cuh"
#include "cuda/route-sort.cuh"
#include "cuda/silu-mul.cuh"
#include "cuda/to-half.cuh"

namespace bs::BS_CUDA_NS {

namespace {

size_t matrix_bytes(const WeightMatrix& w) { return code_bytes(w) + (w.quantised() ? 2 * sb_bytes(w) : 0); }

// The caches and activations DecoderWalk::allocate takes, in bytes (the device-memory check).
size_t buffer_bytes(const Model& m, int64_t max_pos, int64_t n) {
  const ModelConfig& c = m.cfg;
  const int64_t H = c.hidden, k = std::max(1, m.top_k), hd = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  const int64_t inter = std::max({c.intermediate, k * c.moe_intermediate, c.shared_intermediate, int64_t{1}});
  const LinearAttnConfig& lc = c.linear;
  const int64_t linear = std::count(c.linear_layer.begin(), c.linear_layer.end(), true);
  // Hybrid models: the recurrent states and the Gated DeltaNet's activations (decoder-walk.h).
  const int64_t lin = linear == 0 ? 0
                                  : linear * lc.state_floats() + n * (4 * lc.conv_dim() + 2 * lc.value_dim() +
                                                                      4 * lc.v_heads + 2 * lc.k_heads * lc.k_dim);
  // A prefill chunk's routed rows sorted by expert: order, tiles and their count (int32s).
  const int64_t E = c.router.n_experts,
                sort = E > 0 && n > 1 ? n * k + 2 * route_tiles_max(n * k, E, kMatTokens) + 1 : 0;
  const int64_t floats = 4 * n * H + 2 * n * hd + 2 * n * inter + n * k * H + c.vocab + sort +
                         n * std::max(1, c.router.n_experts) + 2 * n * k + 5 * n + (m.kv_f16() ? 2 * n * kv : 0) +
                         attention_partial_floats(static_cast<int>(c.n_heads), static_cast<int>(c.head_dim)) + lin +
                         (c.attn_output_gate ? 2 * n * hd : 0);
  return static_cast<size_t>(floats) * 4 +
         static_cast<size_t>(2 * (c.n_layers - linear) * max_pos * kv) * (m.kv_f16() ? 2 : 4);
}

}  // namespace

int CudaDecoder::session_slots(const Model& m, int64_t max_positions, int64_t max_chunk) {
  const DeviceInfo& dev = device_info();
  const std::shared_ptr<const DeviceWeights> held = DeviceWeights::held(m);
  int E = 0, layers = 0;
  for (const LayerWeights& lw : m.layers) {
    if (lw.is_moe) E = static_cast<int>(lw.moe.gate.n_mats), ++layers;
  }
  // An integrated device reads every expert in place (no copy to save); weights already shared
  // with their experts keep them.
  if (layers == 0 || dev.integrated || (held && held->has_routed())) return 0;
  uint64_t budget = m.stream.device_expert_bytes;
  if (budget == 0) {
    size_t fixed = buffer_bytes(m, max_positions, std::max<int64_t>(1, max_chunk));
    std::vector<const void*> seen;
    for (const WeightMatrix* w : decoder_matrices(m)) {
      if (held || DeviceWeights::is_routed(m, w) || std::find(seen.begin(), seen.end(), w->w) != seen.end()) continue;
      seen.push_back(w->w);
      fixed += matrix_bytes(*w);
    }
    size_t free_now = 0, total = 0;
    if (cudaMemGetInfo(&free_now, &total) != cudaSuccess) {
      cudaGetLastError();
      free_now = dev.free_bytes;
    }
    budget = free_now / 100 * 85 > fixed ? free_now / 100 * 85 - fixed : 0;
  }
  const uint64_t per_layer = budget / (static_cast<uint64_t>(layers) * std::max<uint64_t>(1, m.expert_bytes));
  // Weights shared without their experts need slots even when all would fit now.
  if (per_layer >= static_cast<uint64_t>(E)) return held ? E - 1 : 0;
  return static_cast<int>(std::clamp<uint64_t>(per_layer, 1, E - 1));
}

std::string CudaDecoder::unsupported(const Model& m) {
  static_assert(kMaxDeltaKDim == 256 && kMaxConvKernel == 8, "decoder_unsupported states these limits");
  return decoder_unsupported(m, {"CUDA", kMaxHeadDim, kMaxExperts, Ops::accepts});
}

CudaDecoder::CudaDecoder(const Model& m, int64_t max_positions, const Options& o)
    : DecoderWalk(m, max_positions, o.max_chunk),
      graph_(o.graph),
      kv_f16_(m.kv_f16()),
      prerouter_(m.prerouter.get()),
      on_device_error_(o.on_device_error) {
  if (const std::string why = unsupported(m); !why.empty()) fail("cuda decoder: ", why);
  const DeviceInfo& dev = device_info();
  // Every distinct matrix, but with expert slots the routed stacks (expert-slots.cu takes those).
  size_t slot_bytes = 0;
  std::vector<const void*> seen;
  for (const WeightMatrix* w : decoder_matrices(m)) {
    const bool routed = DeviceWeights::is_routed(m, w);
    const size_t bytes = matrix_bytes(*w);
    stats_.active_bytes += w == &m.embed ? bytes / std::max<int64_t>(1, w->rows)
                           : routed      ? bytes / w->n_mats * std::max(1, m.top_k)
                                         : bytes;
    if (routed && o.expert_slots > 0) {
      slot_bytes += bytes / w->n_mats * o.expert_slots;
    } else if (std::find(seen.begin(), seen.end(), w->w) == seen.end()) {
      seen.push_back(w->w);
      stats_.weight_bytes += bytes;
    }
  }
  const int64_t rows = o.initial_rows > 0 ? std::min(o.initial_rows, max_pos_) : max_pos_;
  stats_.buffer_bytes = buffer_bytes(m, rows, max_chunk_);
  // Shared weights are counted by the first session's decoder (or their upload fails by name).
  const size_t need = stats_.buffer_bytes + slot_bytes + (dev.integrated || o.shared ? 0 : stats_.weight_bytes);
  if (need > dev.free_bytes)
    fail("cuda decoder: the weights (", (stats_.weight_bytes + slot_bytes) >> 20, " MiB) and cache (",
         stats_.buffer_bytes >> 20, " MiB) do not fit the ", dev.free_bytes >> 20,
         " MiB free on the device (expert_slots puts routed experts in K slots per layer)");
  w_ = o.shared ? DeviceWeights::of(m, o.expert_slots <= 0)
                : std::make_shared<const DeviceWeights>(m, o.expert_slots <= 0, &c_);
  if (o.expert_slots <= 0 && !w_->has_routed())
    fail("cuda decoder: the model's shared weights hold no routed experts; its sessions need expert slots");
  if (o.expert_slots > 0) {
    ExpertSlots::Reader io;
    if (o.io_fills && m.streamer) io = {&m.streamer->io_pool(), &m.streamer->files()};
    slots_ = std::make_unique<ExpertSlots>(c_, *w_, m, o.expert_slots, max_chunk_, io);
  }
  allocate(kv_f16_ ? 2 : 4, rows);
  const ModelConfig& c = m.cfg;
  const int64_t kv = c.n_kv_heads * c.head_dim;
  if (kv_f16_) k_rows_ = alloc(max_chunk_ * kv * 4), v_rows_ = alloc(max_chunk_ * kv * 4);
  attn_part_ = alloc(attention_partial_floats(static_cast<int>(c.n_heads), static_cast<int>(c.head_dim)) * 4);
  greedy_ = reinterpret_cast<int32_t*>(alloc(sizeof(int32_t)));
  if (const int64_t E = c.router.n_experts, rows = max_chunk_ * std::max(1, m.top_k); E > 0 && max_chunk_ > 1) {
    order_ = reinterpret_cast<int32_t*>(alloc(rows * sizeof(int32_t)));
    tiles_ = reinterpret_cast<int32_t*>(alloc(2 * route_tiles_max(rows, E, kMatTokens) * sizeof(int32_t)));
    tile_count_ = reinterpret_cast<int32_t*>(alloc(sizeof(int32_t)));
  }
  position_ = reinterpret_cast<int32_t*>(token_ + max_chunk_);
  allocate_predictions();
  if (rec_floats_ > 0) load_state(-1);
  try {
    check(cudaHostAlloc(reinterpret_cast<void**>(&host_in_), 5 * max_chunk_ * sizeof(int32_t), cudaHostAllocDefault),
          "cudaHostAlloc (tokens)");
    check(cudaHostAlloc(reinterpret_cast<void**>(&host_token_), sizeof(int32_t), cudaHostAllocDefault),
          "cudaHostAlloc (token)");
    check(cudaHostAlloc(reinterpret_cast<void**>(&host_logits_), c.vocab * sizeof(float), cudaHostAllocDefault),
          "cudaHostAlloc (logits)");
    check(wait_stream(c_.stream()), "setting up the decoder");
  } catch (...) {
    free_host();  // no destructor runs for a constructor that throws (device buffers: c_ frees them)
    throw;
  }
}

CudaDecoder::~CudaDecoder() {
  wait_stream(c_.stream());
  for (CapturedStep& g : steps_) {
    if (g.exec) cudaGraphExecDestroy(g.exec);
  }
  free_host();
}

void CudaDecoder::free_host() {
  for (void* p : {static_cast<void*>(host_in_), static_cast<void*>(host_token_), static_cast<void*>(host_logits_)}) {
    if (p) cudaFreeHost(p);
  }
  host_in_ = host_token_ = nullptr, host_logits_ = nullptr;
}

float* CudaDecoder::alloc(size_t bytes) {
  state_bytes_ += bytes;
  return static_cast<float*>(c_.hold(bytes));
}

float* CudaDecoder::upload(const std::vector<float>& v) { return w_->vector(v.data()); }

void CudaDecoder::launched(cudaError_t e, const char* kernel) { check(e, kernel); }

void CudaDecoder::embed(int64_t n) {
  const WeightMatrix& t = m_.embed;
  const Weight& w = w_->weight(t);
  const EmbedArgs a{w.codes, w.scales, w.biases, type_code(t.dtype), t.quantised() ? t.bits : 0, t.group, t.cols, n};
  launched(launch_embed(a, reinterpret_cast<const int32_t*>(token_), x_, c_.stream()), "embed");
}

QMatArgs CudaDecoder::qargs(const WeightMatrix& w, int64_t n, bool gather, int64_t x_div) const {
  QMatArgs a = shape_args(w, n);
  if (gather) a.ids = routed_, a.x_div = static_cast<int>(x_div);
  if (gather && grouped_) {
    a.order = order_, a.tiles = tiles_, a.tile_count = tile_count_;
    a.max_tiles = route_tiles_max(n, w.n_mats, kMatTokens);
  }
  if (const uint8_t* const* parts = gather && slots_ ? slots_->parts(w) : nullptr) {
    a.parts = parts;
    return a;
  }
  const Weight& d = w_->weight(w);
  a.codes = d.codes, a.scales = d.scales, a.biases = d.biases;
  return a;
}

void CudaDecoder::matmul(const WeightMatrix& w, float* x, float* y, int64_t n, bool gather, int64_t x_div) {
  if (w.quantised()) {
    launched(launch_qmatmul(qargs(w, n, gather, x_div), x, y, c_.stream()),
             gather ? "gathered expert matmul" : "qmatmul");
    return;
  }
  const Weight& d = w_->weight(w);
  DenseArgs a{};
  a.w = d.codes, a.type = type_code(w.dtype), a.rows = w.rows, a.cols = w.cols, a.mat = 0, a.n = n;
  launched(launch_dense_matmul(a, x, y, c_.stream()), "dense_matmul");
}

// One launch for quantised matrices of one width and bit width (q, k, v; gate, up), their
// biases added in it.
void CudaDecoder::matmuls(const WeightMatrix* const* w, float* const* y, int count, float* x, int64_t n, bool gather,
                          int64_t x_div, const std::vector<float>* const* bias) {
  bool together = count <= kMatSet;
  for (int i = 0; i < count && together; ++i)
    together = w[i]->quantised() && w[i]->cols == w[0]->cols && w[i]->bits == w[0]->bits;
  if (!together) {
    DecoderWalk::matmuls(w, y, count, x, n, gather, x_div, bias);
    return;
  }
  QMatSet set{};
  set.count = count;
  for (int i = 0; i < count; ++i) {
    set.a[i] = qargs(*w[i], n, gather, x_div), set.y[i] = y[i];
    if (bias && !bias[i]->empty()) set.a[i].bias = vec(*bias[i]);
  }
  launched(launch_qmatmul_set(set, x, c_.stream()), gather ? "gathered expert matmuls" : "qmatmuls");
}

void CudaDecoder::rmsnorm(float* x, float* w, int64_t rows, int64_t d, float* y) {
  launched(launch_rmsnorm(x, w, rows, d, m_.cfg.rms_eps, y, c_.stream()), "rmsnorm");
}

void CudaDecoder::add_rmsnorm(float* res, float* x, float* w, int64_t rows, int64_t d, float* y) {
  launched(launch_add_rmsnorm(x, res, w, rows, d, m_.cfg.rms_eps, y, c_.stream()), "add_rmsnorm");
}

void CudaDecoder::experts(const MoeWeights& w, int64_t rows, int64_t k) {
  grouped_ = n_ > 1 && order_ && w.gate.quantised();  // a decode step's rows are one token's distinct experts
  if (grouped_)
    launched(launch_route_sort(routed_, rows, w.gate.n_mats, kMatTokens, order_, tiles_, tile_count_, c_.stream()),
             "route_sort");
  expert_mlp(w, rows, k, rows_);
  grouped_ = false;
}

// The down projection reads SiLU(gate)·up as its x (no silu_mul launch, no gated rows written);
// grouped rows are gated first.
void CudaDecoder::gated_down(const WeightMatrix& down, int64_t rows, float* out) {
  if (grouped_ || !down.quantised() || (down.bits != 4 && down.bits != 8)) {
    DecoderWalk::gated_down(down, rows, out);
    return;
  }
  QMatArgs a = qargs(down, rows, true, 1);
  a.up = up_;
  launched(launch_qmatmul(a, gate_, out, c_.stream()), "gathered expert matmul (SiLU-gated)");
}

void CudaDecoder::add(float* x, float* y, int64_t n) { launched(launch_add(x, 1.0f, n, y, c_.stream()), "add"); }

void CudaDecoder::add_rows(float* b, float* y, int64_t width, int64_t rows) {
  launched(launch_add(b, 1.0f, rows * width, y, c_.stream(), width), "add (bias)");
}

void CudaDecoder::silu_mul(float* gate, float* up, int64_t n) {
  launched(launch_silu_mul(gate, up, n, gate, c_.stream()), "silu_mul");
}

// Stream-ordered: the chunk's kernels queued after it read what it wrote.
void CudaDecoder::write(float* dst, const float* src, int64_t floats) {
  check(copy_to_device(dst, src, static_cast<size_t>(floats) * 4, c_.stream()), "cudaMemcpyAsync (image rows)");
}

void CudaDecoder::rope(float* x, int64_t heads, int axis) {
  const ModelConfig& c = m_.cfg;
  const auto* pos = reinterpret_cast<const int32_t*>(rope_pos_) + std::max(axis, 0) * max_chunk_;
  launched(launch_rope(x, pos, w_->inv_freq(axis), n_, static_cast<int>(heads), static_cast<int>(c.head_dim),
                       static_cast<int>(c.rot_dims), c_.stream()),
           "rope");
}

// With an f16 cache the same launch converts the chunk's k rows (normed, rotated) and v rows
// into the cache at its first position, read on the device (store_kv's launch joined).
void CudaDecoder::norm_rope(const AttentionWeights& w, int64_t l, float* k_at) {
  const ModelConfig& c = m_.cfg;
  if (c.rot_dims / 2 <= 0 || mrope_) {
    DecoderWalk::norm_rope(w, l, k_at);
    return;
  }
  const bool norm = !w.q_norm.empty();  // else RoPE alone (glm4_moe, llama): q and k in one launch
  const QkNormRopeArgs a{n_,
                         static_cast<int>(c.n_heads),
                         static_cast<int>(c.n_kv_heads),
                         static_cast<int>(c.head_dim),
                         static_cast<int>(c.rot_dims),
                         static_cast<float>(c.rms_eps)};
  const KvStore store{reinterpret_cast<uint16_t*>(k_cache_[l]), reinterpret_cast<uint16_t*>(v_cache_[l]), v_rows_,
                      position_};
  launched(launch_qk_norm_rope(a, q_, k_at, norm ? vec(w.q_norm) : nullptr, norm ? vec(w.k_norm) : nullptr,
                               reinterpret_cast<const int32_t*>(rope_pos_), w_->inv_freq(-1), c_.stream(),
                               kv_f16_ ? &store : nullptr),
           "qk_norm_rope");
}

float* CudaDecoder::kv_rows(int64_t l, bool v) {
  if (!kv_f16_) return DecoderWalk::kv_rows(l, v);
  return v ? v_rows_ : k_rows_;
}

void CudaDecoder::store_kv(int64_t l) {
  if (!kv_f16_) return;
  const int64_t kv = m_.cfg.n_kv_heads * m_.cfg.head_dim;
  // The rows go at the chunk's first position, read on the device (a replayed graph's is later).
  auto* k = reinterpret_cast<uint16_t*>(k_cache_[l]);
  auto* v = reinterpret_cast<uint16_t*>(v_cache_[l]);
  launched(launch_to_half_pair(k_rows_, k, v_rows_, v, n_ * kv, c_.stream(), position_, kv), "to_half (KV cache)");
}

void CudaDecoder::attend(int64_t l) {
  const ModelConfig& c = m_.cfg;
  const AttentionArgs a{static_cast<int>(c.n_heads),
                        static_cast<int>(c.n_kv_heads),
                        static_cast<int>(c.head_dim),
                        pos_,
                        n_,
                        kv_f16_,
                        static_cast<float>(attention_scale(c)),
                        attn_part_,
                        position_};
  launched(launch_attention(a, q_, k_cache_[l], v_cache_[l], attn_, c_.stream()), "attention");
}

void CudaDecoder::route(const MoeWeights& w) {
  routed_ = slots_ ? slots_->ids(w) : reinterpret_cast<int32_t*>(ids_);
  routed_wts_ = wts_;
  route_into(w.spec, e_logits_, n_, routed_, wts_);
}

// Routing on the device: ids and weights go from the routing kernel to the gathered matmuls.
void CudaDecoder::route_into(const RouterSpec& s, const float* logits, int64_t n, int32_t* ids, float* wts) {
  if (s.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKArgs a{n, s.n_experts, top_k_, s.norm_topk_prob};
    launched(launch_route_softmax_topk(a, logits, ids, wts, c_.stream()), "route_softmax_topk");
    return;
  }
  const SigmoidGroupArgs a{n,
                           s.n_experts,
                           top_k_,
                           s.n_group,
                           s.topk_group,
                           s.norm_topk_prob,
                           s.routed_scaling_factor,
                           s.correction_bias.empty() ? nullptr : vec(s.correction_bias)};
  launched(launch_route_sigmoid_group(a, logits, ids, wts, c_.stream()), "route_sigmoid_group");
}

void CudaDecoder::combine(int64_t k) {
  launched(launch_moe_combine(rows_, routed_wts_, n_, static_cast<int>(k), m_.cfg.hidden, y_, c_.stream()),
           "moe_combine");
}

void CudaDecoder::combine_add_rmsnorm(int64_t k, bool shared, bool gated, float* x, float* w, int64_t rows, int64_t d,
                                      float* y) {
  launched(launch_combine_add_rmsnorm(x, rows_, routed_wts_, static_cast<int>(k), shared ? y2_ : nullptr,
                                      gated ? shared_gate_ : nullptr, w, rows, d, m_.cfg.rms_eps, y, c_.stream()),
           "combine_add_rmsnorm");
}

// What a captured decode step depends on besides device memory: a step whose key matches the
// graph captured for its parity (the prerouter's buffers alternate) replays it without capture.
// With float32 KV (k and v written at pos_ by the matmuls) or expert slots (host state per
// step), every step is captured again and the executable updated in place.
CudaDecoder::GraphKey CudaDecoder::graph_key() const {
  AttentionArgs a{};
  a.pos0 = pos_, a.n_tok = 1, a.partial = attn_part_;
  return GraphKey{top_k_,    head_,     greedy_vocab_, adapter_held_.get(), adapter_gen_,
                  has_pred_, has_last_, first_cache(), attention_splits(a)};
}

void CudaDecoder::run_graph() {
  const cudaStream_t s = c_.stream();
  const bool replayable = kv_f16_ && !slots_;
  CapturedStep& g = steps_[replayable ? parity_ : 0];
  GraphKey key = graph_key();
  if (replayable && g.exec && g.key == key) {
    made_pred_ = g.made_pred, has_last_ = g.has_last;  // what the capture's walk set on the host
    stats_.predicted_layers += g.predicted_layers;
    check(cudaGraphLaunch(g.exec, s), "cudaGraphLaunch");
    ++stats_.graph_launches, ++stats_.graph_replays;
    return;
  }
  const int64_t predicted = stats_.predicted_layers;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    forward(1, head_);
    if (head_) launched(launch_argmax(logits_, greedy_vocab_, greedy_, s), "argmax");
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    g.key = {};  // the walk's host state may be half-set: capture again next time
    throw;
  }
  check(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
  bool built = false;
  const cudaError_t e = update_or_instantiate(&g.exec, graph, &built);
  stats_.graph_builds += built ? 1 : 0;
  cudaGraphDestroy(graph);
  check(e, "cudaGraphInstantiate");
  g.key = replayable ? std::move(key) : GraphKey{};
  g.made_pred = made_pred_, g.has_last = has_last_, g.predicted_layers = stats_.predicted_layers - predicted;
  check(cudaGraphLaunch(g.exec, s), "cudaGraphLaunch");
  ++stats_.graph_launches;
}

void CudaDecoder::take_stats(SessionStats& into) {
  SessionStats now;
  now.predicted_layers = static_cast<uint64_t>(stats_.predicted_layers);
  if (slots_) {
    const ExpertSlots::Stats& s = slots_->stats();
    StreamCounters& c = now.stream;
    c.slot_hits = s.hits, c.slot_misses = s.misses, c.loads = s.copies, c.prefetch_loads = s.prefetches;
    c.prefetch_bytes = s.prefetches * slots_->expert_bytes(), c.io_bytes = s.io_bytes;
  }
  if (!taken_) taken_ = std::make_unique<SessionStats>();
  into.stream += now.stream - taken_->stream;
  into.predicted_layers += now.predicted_layers - taken_->predicted_layers;
  *taken_ = now;
}

int32_t CudaDecoder::append(const int32_t* tokens, int64_t n, float* logits) {
  return run(tokens, n, DeviceStep{std::max(1, m_.top_k), nullptr}, logits, true);
}

void CudaDecoder::append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) {
  run(tokens, n, step, logits, logits != nullptr);
}

int32_t CudaDecoder::append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) {
  return run(tokens, n, step, nullptr, true);
}

int32_t CudaDecoder::run(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits, bool head) {
  check_append(m_, "cuda", tokens, n, pos_, max_pos_, max_chunk_);
  if (step.adapter && !step.adapter->belongs_to(m_)) fail("cuda decoder: the adapter was loaded for another model");
  if (m_.top_k > 0 && (step.top_k < 1 || step.top_k > m_.top_k))
    fail("cuda decoder: top_k must be 1 to ", m_.top_k, ", got ", step.top_k);
  if (m_.prerouter.get() != prerouter_) fail("cuda decoder: the model's prerouter changed after the decoder was made");
  try {
    return launch(tokens, n, step, logits, head);
  } catch (const Error& e) {
    if (on_device_error_) on_device_error_(e.what());
    throw;
  }
}

int32_t CudaDecoder::launch(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits, bool head) {
  reserve(pos_ + n);
  use_adapter(step.adapter);
  const int top_k = m_.top_k > 0 ? step.top_k : 1;
  if (top_k != last_top_k_) forget_predictions();  // as the CPU path: its one-hot features have k entries
  top_k_ = last_top_k_ = top_k;
  head_ = head;
  greedy_vocab_ = step.greedy_vocab > 0 ? std::min<int64_t>(step.greedy_vocab, m_.cfg.vocab) : m_.cfg.vocab;
  parity_ ^= 1;
  std::fill(made_pred_.begin(), made_pred_.end(), 0);
  const cudaStream_t s = c_.stream();
  for (int64_t t = 0; t < n; ++t) host_in_[t] = tokens[t], host_in_[max_chunk_ + t] = static_cast<int32_t>(pos_ + t);
  stage_inputs(step, n, host_in_ + 2 * max_chunk_);
  // The inputs' device buffer has host_in_'s layout (decoder-walk.h's allocate): tokens, cache
  // rows, RoPE positions in one copy, up to the last the append reads.
  const int64_t ints = 2 * max_chunk_ + (mrope_ ? 3 * max_chunk_ : n);
  check(copy_to_device(token_, host_in_, ints * sizeof(int32_t), s), "cudaMemcpyAsync (tokens, rows, positions)");
  if (slots_) slots_->before_step();
  if (graph_ && n == 1 && !mm_ && !mrope_) {
    run_graph();
  } else {
    forward(n, head);
    if (head) launched(launch_argmax(logits_, greedy_vocab_, greedy_, s), "argmax");
  }
  if (head) check(copy_to_host(host_token_, greedy_, sizeof(int32_t), s), "cudaMemcpyAsync (token)");
  if (slots_) slots_->queue_ids();
  const size_t V = static_cast<size_t>(m_.cfg.vocab);
  if (logits) check(copy_to_host(host_logits_, logits_, V * sizeof(float), s), "cudaMemcpyAsync (logits)");
  check(wait_stream(s), "decode step");
  if (slots_) slots_->after_step(n, top_k_);
  pos_ += n;
  ++stats_.appends;
  has_pred_.swap(made_pred_);
  if (logits) std::memcpy(logits, host_logits_, V * sizeof(float));
  return head ? *host_token_ : -1;
}

}  // namespace bs::BS_CUDA_NS
