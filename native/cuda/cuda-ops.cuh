// The kernel table's ops on a CUDA device, one stream synchronisation per call: activations are
// staged into scratch buffers, weights come from the context (resident when they lie in mapped
// files), the kernels run, results come back. moe_block and prerouter chain several kernels
// with the routing ids kept on the device. Each method throws bs::Error when the device fails.
#pragma once
#include <cstdint>

#include "common/backend.h"
#include "cuda/device-context.cuh"

namespace bs::BS_CUDA_NS {

// One MoE block's routed experts: router [E, hidden]; gate, up [E, inter, hidden]; down
// [E, hidden, inter]; all affine.
struct MoeWeights {
  const WeightMatrix *router, *gate, *up, *down;
};

class Ops {
 public:
  explicit Ops(Context& c) : c_(c) {}

  // Whether the kernels take weight w for op; shape limits that depend on call parameters are
  // checked by fits_* below.
  static bool accepts(Op op, const WeightMatrix* w);
  static bool fits_attention(const bs::AttentionParams& p);
  static bool fits_softmax_topk(const bs::SoftmaxTopKParams& p);
  static bool fits_sigmoid_group(const bs::SigmoidGroupParams& p);

  void qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y);
  // With a slot table, row i reads matrix slots[ids[i]] of w (n_experts entries); else ids[i].
  // Only the matrices named are brought to the device (kept there when w lies in a mapped file).
  void gather_matmul(const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y,
                     const int32_t* slots = nullptr, int64_t n_experts = 0);
  void dense_matmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y);
  void embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out);
  void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y);
  void rope(float* x, const int32_t* positions, int64_t n_tok, const bs::RopeParams& p);
  void attention(const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                 const bs::AttentionParams& p, float* out);
  void route_softmax_topk(const float* logits, int64_t n_tok, const bs::SoftmaxTopKParams& p, int32_t* ids,
                          float* weights);
  void route_sigmoid_group(const float* logits, int64_t n_tok, const bs::SigmoidGroupParams& p, int32_t* ids,
                           float* weights);
  void silu_mul(const float* gate, const float* up, int64_t n, float* out);
  void add(const float* x, float s, int64_t n, float* y);
  void lora_delta(const LoraWeights& l, const float* x, int64_t n, float* y);
  // out[n, hidden] = Σ_j w_j · down_j(silu(gate_j·x) · up_j·x) over each token's softmax top-k
  // experts: router, routing, gathered matmuls and the weighted sum on the device, one sync.
  void moe_block(const MoeWeights& m, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out);
  // A prerouter head: logits[E] = linear·f + fc2·gelu_erf(fc1·f), f = [hidden; onehot(cur);
  // onehot(prev)] never built; fc1/fc2 null for a head without the MLP.
  void prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2, const float* hidden,
                 const int32_t* cur, const int32_t* prev, int k, float* logits);

 private:
  Context& c_;
};

}  // namespace bs::BS_CUDA_NS
