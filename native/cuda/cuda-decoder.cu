#include "cuda/cuda-decoder.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/accel-limits.h"
#include "common/error.h"
#include "cuda/add.cuh"
#include "cuda/argmax.cuh"
#include "cuda/attention.cuh"
#include "cuda/cuda-ops.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/embed.cuh"
#include "cuda/moe-combine.cuh"
#include "cuda/op-args.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/rope.cuh"
#include "cuda/route-sigmoid-group.cuh"
#include "cuda/route-softmax-topk.cuh"
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
  const int64_t floats = 4 * n * H + 2 * n * hd + 2 * n * inter + n * k * H + c.vocab +
                         n * std::max(1, c.router.n_experts) + 2 * n * k + 2 * n + (m.kv_f16() ? 2 * n * kv : 0);
  return static_cast<size_t>(floats) * 4 + static_cast<size_t>(2 * c.n_layers * max_pos * kv) * (m.kv_f16() ? 2 : 4);
}

}  // namespace

std::string CudaDecoder::unsupported(const Model& m) {
  return decoder_unsupported(m, {"CUDA", kMaxHeadDim, kMaxExperts, Ops::accepts});
}

CudaDecoder::CudaDecoder(const Model& m, int64_t max_positions, int64_t max_chunk, bool graph, int expert_slots)
    : DecoderWalk(m, max_positions, max_chunk), graph_(graph), kv_f16_(m.kv_f16()) {
  if (const std::string why = unsupported(m); !why.empty()) fail("cuda decoder: ", why);
  const DeviceInfo& dev = device_info();
  // Every distinct matrix, but with expert slots the routed stacks (expert-slots.cu takes those).
  std::vector<const WeightMatrix*> mats;
  size_t slot_bytes = 0;
  for (const WeightMatrix* w : decoder_matrices(m)) {
    const bool routed = std::any_of(m.layers.begin(), m.layers.end(), [&](const LayerWeights& lw) {
      return lw.is_moe && (w == &lw.moe.gate || w == &lw.moe.up || w == &lw.moe.down);
    });
    const size_t bytes = matrix_bytes(*w);
    stats_.active_bytes += w == &m.embed ? bytes / std::max<int64_t>(1, w->rows)
                           : routed      ? bytes / w->n_mats * std::max(1, m.top_k)
                                         : bytes;
    if (routed && expert_slots > 0) slot_bytes += bytes / w->n_mats * expert_slots;
    else if (std::none_of(mats.begin(), mats.end(), [&](const WeightMatrix* o) { return o->w == w->w; }))
      mats.push_back(w);
  }
  for (const WeightMatrix* w : mats) stats_.weight_bytes += matrix_bytes(*w);
  stats_.buffer_bytes = buffer_bytes(m, max_pos_, max_chunk_);
  const size_t need = stats_.buffer_bytes + slot_bytes + (dev.integrated ? 0 : stats_.weight_bytes);
  if (need > dev.free_bytes)
    fail("cuda decoder: the weights (", (stats_.weight_bytes + slot_bytes) >> 20, " MiB) and cache (",
         stats_.buffer_bytes >> 20, " MiB) do not fit the ", dev.free_bytes >> 20,
         " MiB free on the device (expert_slots puts routed experts in K slots per layer)");
  for (const WeightMatrix* w : mats) {
    Weight d{c_.keep(w->w, code_bytes(*w)), nullptr, nullptr};
    if (w->quantised()) d.scales = c_.keep(w->scales, sb_bytes(*w)), d.biases = c_.keep(w->biases, sb_bytes(*w));
    weights_[w->w] = d;
  }
  if (expert_slots > 0) slots_ = std::make_unique<ExpertSlots>(c_, m, expert_slots, max_chunk_);
  allocate(kv_f16_ ? 2 : 4);
  const ModelConfig& c = m.cfg;
  if (kv_f16_)
    k_rows_ = alloc(max_chunk_ * c.n_kv_heads * c.head_dim * 4),
    v_rows_ = alloc(max_chunk_ * c.n_kv_heads * c.head_dim * 4);
  std::vector<double> inv(std::max<int64_t>(1, c.rot_dims / 2));
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / c.rot_dims);
  inv_freq_ = reinterpret_cast<double*>(const_cast<uint8_t*>(c_.keep(inv.data(), inv.size() * sizeof(double))));
  greedy_ = static_cast<int32_t*>(c_.hold(sizeof(int32_t)));
  check(cudaHostAlloc(reinterpret_cast<void**>(&host_in_), 2 * max_chunk_ * sizeof(int32_t), cudaHostAllocDefault),
        "cudaHostAlloc (tokens)");
  check(cudaHostAlloc(reinterpret_cast<void**>(&host_token_), sizeof(int32_t), cudaHostAllocDefault),
        "cudaHostAlloc (token)");
  check(cudaHostAlloc(reinterpret_cast<void**>(&host_logits_), c.vocab * sizeof(float), cudaHostAllocDefault),
        "cudaHostAlloc (logits)");
  check(cudaStreamSynchronize(c_.stream()), "uploading the weights");
}

CudaDecoder::~CudaDecoder() {
  cudaStreamSynchronize(c_.stream());
  if (exec_) cudaGraphExecDestroy(exec_);
  for (void* p : {static_cast<void*>(host_in_), static_cast<void*>(host_token_), static_cast<void*>(host_logits_)}) {
    if (p) cudaFreeHost(p);
  }
}

float* CudaDecoder::alloc(size_t bytes) { return static_cast<float*>(c_.hold(bytes)); }

float* CudaDecoder::upload(const std::vector<float>& v) {
  return reinterpret_cast<float*>(const_cast<uint8_t*>(c_.keep(v.data(), v.size() * sizeof(float))));
}

void CudaDecoder::launched(cudaError_t e, const char* kernel) { check(e, kernel); }

void CudaDecoder::embed(int64_t n) {
  const WeightMatrix& t = m_.embed;
  const Weight& w = weights_.at(t.w);
  const EmbedArgs a{w.codes, w.scales, w.biases, type_code(t.dtype), t.quantised() ? t.bits : 0, t.group, t.cols, n};
  launched(launch_embed(a, reinterpret_cast<const int32_t*>(token_), x_, c_.stream()), "embed");
}

void CudaDecoder::matmul(const WeightMatrix& w, float* x, float* y, int64_t n, bool gather, int64_t x_div) {
  if (const uint8_t* const* parts = gather && slots_ ? slots_->parts(w) : nullptr) {
    QMatArgs a = shape_args(w, n);
    a.parts = parts, a.ids = reinterpret_cast<const int32_t*>(routed_), a.x_div = static_cast<int>(x_div);
    launched(launch_qmatmul(a, x, y, c_.stream()), "gathered expert matmul (slots)");
    return;
  }
  const Weight& d = weights_.at(w.w);
  if (w.quantised()) {
    QMatArgs a = shape_args(w, n);
    a.codes = d.codes, a.scales = d.scales, a.biases = d.biases;
    if (gather) a.ids = reinterpret_cast<const int32_t*>(routed_), a.x_div = static_cast<int>(x_div);
    launched(launch_qmatmul(a, x, y, c_.stream()), gather ? "gathered expert matmul" : "qmatmul");
    return;
  }
  DenseArgs a{};
  a.w = d.codes, a.type = type_code(w.dtype), a.rows = w.rows, a.cols = w.cols, a.mat = 0, a.n = n;
  launched(launch_dense_matmul(a, x, y, c_.stream()), "dense_matmul");
}

void CudaDecoder::rmsnorm(float* x, float* w, int64_t rows, int64_t d, float* y) {
  launched(launch_rmsnorm(x, w, rows, d, m_.cfg.rms_eps, y, c_.stream()), "rmsnorm");
}

void CudaDecoder::add(float* x, float* y, int64_t n) { launched(launch_add(x, 1.0f, n, y, c_.stream()), "add"); }

void CudaDecoder::silu_mul(float* gate, float* up, int64_t n) {
  launched(launch_silu_mul(gate, up, n, gate, c_.stream()), "silu_mul");
}

void CudaDecoder::rope(float* x, int64_t heads) {
  const ModelConfig& c = m_.cfg;
  launched(launch_rope(x, reinterpret_cast<const int32_t*>(position_), inv_freq_, n_, static_cast<int>(heads),
                       static_cast<int>(c.head_dim), static_cast<int>(c.rot_dims), c_.stream()),
           "rope");
}

float* CudaDecoder::kv_rows(int64_t l, bool v) {
  if (!kv_f16_) return DecoderWalk::kv_rows(l, v);
  return v ? v_rows_ : k_rows_;
}

void CudaDecoder::store_kv(int64_t l) {
  if (!kv_f16_) return;
  const int64_t kv = m_.cfg.n_kv_heads * m_.cfg.head_dim;
  for (const auto& [rows, cache] : {std::pair{k_rows_, k_cache_[l]}, std::pair{v_rows_, v_cache_[l]}}) {
    auto* half = reinterpret_cast<uint16_t*>(cache) + pos_ * kv;
    launched(launch_to_half(rows, n_ * kv, half, c_.stream()), "to_half (KV cache)");
  }
}

void CudaDecoder::attend(int64_t l) {
  const ModelConfig& c = m_.cfg;
  const AttentionArgs a{static_cast<int>(c.n_heads),
                        static_cast<int>(c.n_kv_heads),
                        static_cast<int>(c.head_dim),
                        pos_,
                        n_,
                        kv_f16_,
                        static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)))};
  launched(launch_attention(a, q_, k_cache_[l], v_cache_[l], attn_, c_.stream()), "attention");
}

void CudaDecoder::route(const MoeWeights& w) {
  const RouterSpec& s = w.spec;
  auto* ids = slots_ ? slots_->ids(w) : reinterpret_cast<int32_t*>(ids_);
  routed_ = reinterpret_cast<float*>(ids);
  if (s.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKArgs a{n_, s.n_experts, m_.top_k, s.norm_topk_prob};
    launched(launch_route_softmax_topk(a, e_logits_, ids, wts_, c_.stream()), "route_softmax_topk");
    return;
  }
  const SigmoidGroupArgs a{n_,
                           s.n_experts,
                           m_.top_k,
                           s.n_group,
                           s.topk_group,
                           s.norm_topk_prob,
                           s.routed_scaling_factor,
                           s.correction_bias.empty() ? nullptr : vec(s.correction_bias)};
  launched(launch_route_sigmoid_group(a, e_logits_, ids, wts_, c_.stream()), "route_sigmoid_group");
}

void CudaDecoder::combine(int64_t k) {
  launched(launch_moe_combine(rows_, wts_, n_, static_cast<int>(k), m_.cfg.hidden, y_, c_.stream()), "moe_combine");
}

// The step's kernels captured and replayed: the first capture is instantiated, later ones update
// that executable in place (same kernels, new position), or re-instantiate when the update fails.
void CudaDecoder::run_graph() {
  const cudaStream_t s = c_.stream();
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t g = nullptr;
  try {
    forward(1);
    launched(launch_argmax(logits_, m_.cfg.vocab, greedy_, s), "argmax");
  } catch (...) {
    cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
  cudaGraphExecUpdateResultInfo info{};
  if (exec_ && cudaGraphExecUpdate(exec_, g, &info) != cudaSuccess) {
    cudaGetLastError();
    cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  cudaError_t e = cudaSuccess;
  if (!exec_) {
    e = cudaGraphInstantiate(&exec_, g, 0);
    ++stats_.graph_builds;
  }
  cudaGraphDestroy(g);
  check(e, "cudaGraphInstantiate");
  check(cudaGraphLaunch(exec_, s), "cudaGraphLaunch");
  ++stats_.graph_launches;
}

int32_t CudaDecoder::append(const int32_t* tokens, int64_t n, float* logits) {
  check_append(m_, "cuda", tokens, n, pos_, max_pos_, max_chunk_);
  const cudaStream_t s = c_.stream();
  for (int64_t t = 0; t < n; ++t) host_in_[t] = tokens[t], host_in_[max_chunk_ + t] = static_cast<int32_t>(pos_ + t);
  check(cudaMemcpyAsync(token_, host_in_, n * sizeof(int32_t), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (tokens)");
  check(cudaMemcpyAsync(position_, host_in_ + max_chunk_, n * sizeof(int32_t), cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync (positions)");
  if (slots_) slots_->before_step();
  if (graph_ && n == 1) {
    run_graph();
  } else {
    forward(n);
    launched(launch_argmax(logits_, m_.cfg.vocab, greedy_, s), "argmax");
  }
  check(cudaMemcpyAsync(host_token_, greedy_, sizeof(int32_t), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (token)");
  if (slots_) slots_->queue_ids();
  const size_t V = static_cast<size_t>(m_.cfg.vocab);
  if (logits)
    check(cudaMemcpyAsync(host_logits_, logits_, V * sizeof(float), cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (logits)");
  check(cudaStreamSynchronize(s), "decode step");
  if (slots_) slots_->after_step(n);
  pos_ += n;
  ++stats_.appends;
  if (logits) std::memcpy(logits, host_logits_, V * sizeof(float));
  return *host_token_;
}

}  // namespace bs::BS_CUDA_NS
