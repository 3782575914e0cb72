// The kernel table of a GPU set (Metal, CUDA), written once: each op runs OpsT's method (an
// AccelOps with static accepts(), max_head_dim and max_experts) through
// on_device(body) — which runs body under the set's lock and returns false when the device
// failed (the set then reports itself unusable) — and otherwise, or when the call's shape is
// outside the kernels' limits, finishes on the reference kernel.
#pragma once
#include "common/accel-limits.h"
#include "common/backend.h"
#include "common/function-ref.h"

namespace bs {

template <class OpsT, bool (*on_device)(FunctionRef<void(OpsT&)>)>
struct AccelTable {
  static const Kernels& ref() { return reference_backend().k; }

  static void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
    if (!on_device([&](OpsT& o) { o.qmatmul(w, mat, x, n, y); })) ref().qmatmul(ctx, w, mat, x, n, y);
  }
  static void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
    qmatmul(ctx, w, mat, x, 1, y);
  }
  static void dense_matmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n,
                           float* y) {
    if (!on_device([&](OpsT& o) { o.dense_matmul(w, mat, x, n, y); })) ref().dense_matmul(ctx, w, mat, x, n, y);
  }
  static void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m,
                            float* y) {
    if (!on_device([&](OpsT& o) { o.gather_matmul(w, ids, x, m, y); })) ref().gather_matmul(ctx, w, ids, x, m, y);
  }
  static void embed(const ExecCtx& ctx, const WeightMatrix& t, const int32_t* ids, int64_t n, float* out) {
    if (!on_device([&](OpsT& o) { o.embed(t, ids, n, out); })) ref().embed(ctx, t, ids, n, out);
  }
  static void rmsnorm(const ExecCtx& ctx, const float* x, const float* w, int64_t rows, int64_t d, float eps,
                      float* y) {
    if (!on_device([&](OpsT& o) { o.rmsnorm(x, w, rows, d, eps, y); })) ref().rmsnorm(ctx, x, w, rows, d, eps, y);
  }
  static void rope(const ExecCtx& ctx, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) {
    if (!on_device([&](OpsT& o) { o.rope(x, positions, n_tok, p); })) ref().rope(ctx, x, positions, n_tok, p);
  }
  static void attention(const ExecCtx& ctx, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                        const AttentionParams& p, float* out) {
    if (!fits_attention(p, OpsT::max_head_dim) ||
        !on_device([&](OpsT& o) { o.attention(q, k, v, pos0, n_tok, p, out); })) {
      ref().attention(ctx, q, k, v, pos0, n_tok, p, out);
    }
  }
  static void route_softmax_topk(const ExecCtx& ctx, const float* logits, int64_t n_tok, const SoftmaxTopKParams& p,
                                 int32_t* ids, float* weights) {
    if (!fits_softmax_topk(p, OpsT::max_experts) ||
        !on_device([&](OpsT& o) { o.route_softmax_topk(logits, n_tok, p, ids, weights); })) {
      ref().route_softmax_topk(ctx, logits, n_tok, p, ids, weights);
    }
  }
  static void route_sigmoid_group(const ExecCtx& ctx, const float* logits, int64_t n_tok, const SigmoidGroupParams& p,
                                  int32_t* ids, float* weights) {
    if (!fits_sigmoid_group(p, OpsT::max_experts) ||
        !on_device([&](OpsT& o) { o.route_sigmoid_group(logits, n_tok, p, ids, weights); })) {
      ref().route_sigmoid_group(ctx, logits, n_tok, p, ids, weights);
    }
  }
  static void silu_mul(const ExecCtx& ctx, const float* gate, const float* up, int64_t n, float* out) {
    if (!on_device([&](OpsT& o) { o.silu_mul(gate, up, n, out); })) ref().silu_mul(ctx, gate, up, n, out);
  }
  static void add(const ExecCtx& ctx, const float* x, float s, int64_t n, float* y) {
    if (!on_device([&](OpsT& o) { o.add(x, s, n, y); })) ref().add(ctx, x, s, n, y);
  }
  static void lora_delta(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
    // B is checked here: supports() is asked with A only.
    if (!OpsT::accepts(Op::LoraDelta, &l.b) || !on_device([&](OpsT& o) { o.lora_delta(l, x, n, y); })) {
      ref().lora_delta(ctx, l, x, n, y);
    }
  }

  static Kernels kernels() {
    Kernels k;
    k.qmatvec = qmatvec;
    k.qmatmul = qmatmul;
    k.dense_matmul = dense_matmul;
    k.gather_matmul = gather_matmul;
    k.embed = embed;
    k.rmsnorm = rmsnorm;
    k.rope = rope;
    k.attention = attention;
    k.route_softmax_topk = route_softmax_topk;
    k.route_sigmoid_group = route_sigmoid_group;
    k.silu_mul = silu_mul;
    k.add = add;
    k.lora_delta = lora_delta;
    return k;
  }
};

}  // namespace bs
