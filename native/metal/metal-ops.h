// The kernel table's ops on a Metal device, one command buffer per call: operands are staged in
// shared buffers (weights wrapped in place when the device takes the range), the kernels of
// params.h run, results are copied back. The same code drives Apple's GPU and the shim device
// of the native tests; the per-token engine path would encode many ops into one CommandList.
#pragma once
#include <memory>
#include <vector>

#include "common/backend.h"
#include "metal/metal-device.h"

namespace bs::metal {

// One MoE block's routed experts: router [E, hidden]; gate, up [E, inter, hidden]; down
// [E, hidden, inter]; all affine.
struct MoeWeights {
  const WeightMatrix *router, *gate, *up, *down;
};

class MetalOps {
 public:
  explicit MetalOps(Device& d) : d_(d) {}

  // Whether the kernels take weight w for op (formats, alignment, 32-bit offsets); shape limits
  // that depend on call parameters are checked by fits_* below.
  static bool accepts(Op op, const WeightMatrix* w);
  static bool fits_attention(const bs::AttentionParams& p);
  static bool fits_softmax_topk(const bs::SoftmaxTopKParams& p);
  static bool fits_sigmoid_group(const bs::SigmoidGroupParams& p);

  // The Kernels signatures without the ExecCtx; each throws bs::Error when the device fails.
  void qmatmul(const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y);
  // With a slot table (streaming: w is the stack of expert slots), token i reads matrix
  // slots[ids[i]] of w; n_experts entries. Without one, matrix ids[i].
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
  // experts, in one command list: routing ids and weights stay on the GPU (only out comes back).
  void moe_block(const MoeWeights& m, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out);
  // A prerouter head (heads.h): logits[E] = linear·f + fc2·gelu_erf(fc1·f) for the features
  // f = [hidden; onehot(cur); onehot(prev)]; fc1/fc2 null for a head without the MLP.
  void prerouter(const WeightMatrix& linear, const WeightMatrix* fc1, const WeightMatrix* fc2, const float* hidden,
                 const int32_t* cur, const int32_t* prev, int k, float* logits);

 private:
  Device& d_;
  std::vector<std::unique_ptr<Buffer>> pool_;  // grow-only staging buffers, one per operand slot
  friend class Call;
};

}  // namespace bs::metal
