// What a GPU kernel set's host code offers (Metal's MetalOps, CUDA's Ops): the kernel table's
// ops without the ExecCtx, and the chains that keep routing on the device (a MoE block's routed
// experts, a prerouter head). Each method throws bs::Error when the device fails; the table
// (accel-table.h) then finishes the call on the reference kernel.
#pragma once
#include <cstdint>

#include "common/backend.h"

namespace bs {

// One MoE block's routed experts: router [E, hidden]; gate, up [E, inter, hidden]; down
// [E, hidden, inter]; all affine.
struct MoeBlockWeights {
  const WeightMatrix *router, *gate, *up, *down;
};

class AccelOps {
 public:
  virtual ~AccelOps() = default;
  virtual void qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) = 0;
  // With a slot table (streaming: w is the stack of expert slots), row i reads matrix
  // slots[ids[i]] of w; n_experts entries. Without one, matrix ids[i].
  virtual void gather_matmul(const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y,
                             const int32_t* slots = nullptr, int64_t n_experts = 0) = 0;
  virtual void dense_matmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) = 0;
  virtual void embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) = 0;
  virtual void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) = 0;
  virtual void rope(float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) = 0;
  virtual void attention(const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                         const AttentionParams& p, float* out) = 0;
  virtual void route_softmax_topk(const float* logits, int64_t n_tok, const SoftmaxTopKParams& p, int32_t* ids,
                                  float* weights) = 0;
  virtual void route_sigmoid_group(const float* logits, int64_t n_tok, const SigmoidGroupParams& p, int32_t* ids,
                                   float* weights) = 0;
  virtual void silu_mul(const float* gate, const float* up, int64_t n, float* out) = 0;
  virtual void add(const float* x, float s, int64_t n, float* y) = 0;
  virtual void lora_delta(const LoraWeights& l, const float* x, int64_t n, float* y) = 0;
  // out[n, hidden] = Σ_j w_j · down_j(silu(gate_j·x) · up_j·x) over each token's softmax top-k
  // experts, in one submission: routing ids and weights stay on the device (only out comes back).
  virtual void moe_block(const MoeBlockWeights& m, const SoftmaxTopKParams& rp, const float* x, int64_t n,
                         float* out) = 0;
  // A prerouter head (heads.h): logits[E] = linear·f + fc2·gelu_erf(fc1·f) for the features
  // f = [hidden; onehot(cur); onehot(prev)], never built; fc1/fc2 null for a head without the MLP.
  virtual void prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2,
                         const float* hidden, const int32_t* cur, const int32_t* prev, int k, float* logits) = 0;
};

}  // namespace bs

// The overriding declarations, written once for every class that implements AccelOps (the
// default arguments repeated: calls through the derived type see them).
#define BS_ACCEL_OPS_OVERRIDES                                                                                         \
  void qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) override;                      \
  void gather_matmul(const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y,                   \
                     const int32_t* slots = nullptr, int64_t n_experts = 0) override;                                  \
  void dense_matmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) override;                 \
  void embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) override;                           \
  void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) override;               \
  void rope(float* x, const int32_t* positions, int64_t n_tok, const bs::RopeParams& p) override;                      \
  void attention(const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,                            \
                 const bs::AttentionParams& p, float* out) override;                                                   \
  void route_softmax_topk(const float* logits, int64_t n_tok, const bs::SoftmaxTopKParams& p, int32_t* ids,            \
                          float* weights) override;                                                                    \
  void route_sigmoid_group(const float* logits, int64_t n_tok, const bs::SigmoidGroupParams& p, int32_t* ids,          \
                           float* weights) override;                                                                   \
  void silu_mul(const float* gate, const float* up, int64_t n, float* out) override;                                   \
  void add(const float* x, float s, int64_t n, float* y) override;                                                     \
  void lora_delta(const LoraWeights& l, const float* x, int64_t n, float* y) override;                                 \
  void moe_block(const bs::MoeBlockWeights& m, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out) \
      override;                                                                                                        \
  void prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2, const float* hidden,    \
                 const int32_t* cur, const int32_t* prev, int k, float* logits) override;
