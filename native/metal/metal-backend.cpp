// The Metal table: each op runs through MetalOps on the current device under one lock. A device
// failure never escapes: the call is finished by the reference kernel and the set reports itself
// unusable from then on (as the CUDA set does).
#include "metal/metal-backend.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "common/error.h"
#include "metal/metal-ops.h"

namespace bs {

namespace metal {

#ifndef BRAINSTEM_WITH_METAL
Device* system_device() { return nullptr; }
const std::string& system_device_error() {
  static const std::string why = "not a macOS build";
  return why;
}
#endif

namespace {

struct State {
  std::mutex mu;
  Device* device = nullptr;  // a test's device; else the system's
  std::unique_ptr<MetalOps> ops;
  Device* ops_device = nullptr;
  std::atomic<bool> failed{false};
};

State& state() {
  static State s;
  return s;
}

Device* current() {
  State& s = state();
  return s.device ? s.device : system_device();
}

}  // namespace

void use_device(Device* d) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.device = d;
  s.ops.reset();
  s.ops_device = nullptr;
  s.failed = false;
}

std::string describe() {
  Device* d = current();
  if (!d) return "Metal: unavailable (" + system_device_error() + ")";
  char budget[64];
  std::snprintf(budget, sizeof budget, "%.1f GiB", static_cast<double>(d->working_set_budget()) / (1 << 30));
  return "Metal on " + d->name() + ", GPU working-set budget " + budget +
         (state().failed ? "; disabled after a device error" : "");
}

// Runs body(ops) under the lock; false (and the set marked failed) when the device fails.
template <class F>
bool on_device(F&& body) {
  State& s = state();
  if (s.failed) return false;
  std::lock_guard<std::mutex> lock(s.mu);
  Device* d = current();
  if (!d) return false;
  try {
    if (!s.ops || s.ops_device != d) {
      s.ops = std::make_unique<MetalOps>(*d);
      s.ops_device = d;
    }
    body(*s.ops);
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "brainstem: metal: %s; using the CPU reference from now on\n", e.what());
    s.failed = true;
    return false;
  }
}

}  // namespace metal

namespace {

using metal::MetalOps;
using metal::on_device;

const Kernels& ref() { return reference_backend().k; }

void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (!on_device([&](MetalOps& o) { o.qmatmul(w, mat, x, n, y); })) ref().qmatmul(ctx, w, mat, x, n, y);
}

void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
  qmatmul(ctx, w, mat, x, 1, y);
}

void dense_matmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  if (!on_device([&](MetalOps& o) { o.dense_matmul(w, mat, x, n, y); })) ref().dense_matmul(ctx, w, mat, x, n, y);
}

void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y) {
  if (!on_device([&](MetalOps& o) { o.gather_matmul(w, ids, x, m, y); })) ref().gather_matmul(ctx, w, ids, x, m, y);
}

void embed(const ExecCtx& ctx, const WeightMatrix& t, const int32_t* ids, int64_t n, float* out) {
  if (!on_device([&](MetalOps& o) { o.embed(t, ids, n, out); })) ref().embed(ctx, t, ids, n, out);
}

void rmsnorm(const ExecCtx& ctx, const float* x, const float* w, int64_t rows, int64_t d, float eps, float* y) {
  if (!on_device([&](MetalOps& o) { o.rmsnorm(x, w, rows, d, eps, y); })) ref().rmsnorm(ctx, x, w, rows, d, eps, y);
}

void rope(const ExecCtx& ctx, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) {
  if (!on_device([&](MetalOps& o) { o.rope(x, positions, n_tok, p); })) ref().rope(ctx, x, positions, n_tok, p);
}

void attention(const ExecCtx& ctx, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
               const AttentionParams& p, float* out) {
  if (!MetalOps::fits_attention(p) || !on_device([&](MetalOps& o) { o.attention(q, k, v, pos0, n_tok, p, out); })) {
    ref().attention(ctx, q, k, v, pos0, n_tok, p, out);
  }
}

void route_softmax_topk(const ExecCtx& ctx, const float* logits, int64_t n_tok, const SoftmaxTopKParams& p,
                        int32_t* ids, float* weights) {
  if (!MetalOps::fits_softmax_topk(p) ||
      !on_device([&](MetalOps& o) { o.route_softmax_topk(logits, n_tok, p, ids, weights); })) {
    ref().route_softmax_topk(ctx, logits, n_tok, p, ids, weights);
  }
}

void route_sigmoid_group(const ExecCtx& ctx, const float* logits, int64_t n_tok, const SigmoidGroupParams& p,
                         int32_t* ids, float* weights) {
  if (!MetalOps::fits_sigmoid_group(p) ||
      !on_device([&](MetalOps& o) { o.route_sigmoid_group(logits, n_tok, p, ids, weights); })) {
    ref().route_sigmoid_group(ctx, logits, n_tok, p, ids, weights);
  }
}

void silu_mul(const ExecCtx& ctx, const float* gate, const float* up, int64_t n, float* out) {
  if (!on_device([&](MetalOps& o) { o.silu_mul(gate, up, n, out); })) ref().silu_mul(ctx, gate, up, n, out);
}

void add(const ExecCtx& ctx, const float* x, float s, int64_t n, float* y) {
  if (!on_device([&](MetalOps& o) { o.add(x, s, n, y); })) ref().add(ctx, x, s, n, y);
}

void lora_delta(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  // B is checked here: supports() is asked with A only.
  if (!MetalOps::accepts(Op::LoraDelta, &l.b) || !on_device([&](MetalOps& o) { o.lora_delta(l, x, n, y); })) {
    ref().lora_delta(ctx, l, x, n, y);
  }
}

bool usable() { return metal::current() != nullptr && !metal::state().failed; }

}  // namespace

const Backend& metal_backend() {
  static const Backend b = {
      .name = "metal",
      .detail = "Metal kernels (MSL compiled at run time); one command buffer per call, weights wrapped in place",
      .usable = usable,
      .accepts = MetalOps::accepts,
      .k = {.qmatvec = qmatvec,
            .qmatmul = qmatmul,
            .dense_matmul = dense_matmul,
            .gather_matmul = gather_matmul,
            .embed = embed,
            .rmsnorm = rmsnorm,
            .rope = rope,
            .attention = attention,
            .route_softmax_topk = route_softmax_topk,
            .route_sigmoid_group = route_sigmoid_group,
            .silu_mul = silu_mul,
            .add = add,
            .lora_delta = lora_delta},
  };
  return b;
}

}  // namespace bs
