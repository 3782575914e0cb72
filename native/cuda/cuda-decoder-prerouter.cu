// The prerouter on the CUDA decoder's device, as the CPU path runs it (common/session.h): at the
// last token of an append that returns logits, each head predicts the next token's routing of
// the layer after it; a decode step then routes that layer by the prediction. Nothing is read back
// but, with expert slots, the predicted ids beside the routed ones (the slots fetch them first).
#include "common/prerouter/heads.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/op-args.cuh"
#include "cuda/prerouter.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// The walk's prediction buffers are float32 buffers; ids are written there as int32.
int32_t* as_ids(float* p) { return reinterpret_cast<int32_t*>(p); }

}  // namespace

bool CudaDecoder::route_by_prediction(int64_t l) {
  if (n_ != 1 || !has_pred_[l]) return false;
  routed_ = as_ids(pred_[l].ids[1 - parity_]), routed_wts_ = pred_[l].wts[1 - parity_];
  if (slots_) {  // the slots count what the step used from their ids
    int32_t* ids = slots_->ids(m_.layers[l].moe);
    check(cudaMemcpyAsync(ids, routed_, top_k_ * sizeof(int32_t), cudaMemcpyDeviceToDevice, c_.stream()),
          "cudaMemcpyAsync (predicted ids)");
    routed_ = ids;
  }
  ++stats_.predicted_layers;
  return true;
}

void CudaDecoder::routed(int64_t owner) {
  const PrerouterHead* h = m_.prerouter ? m_.prerouter->head(owner) : nullptr;
  if (!h) return;
  const int64_t k = top_k_, H = m_.cfg.hidden, E = m_.cfg.router.n_experts;
  const cudaStream_t s = c_.stream();
  Predicted& p = pred_[owner];
  const int32_t* cur = routed_ + (n_ - 1) * k;
  if (head_) {
    // Features: the last token's MoE input, its experts, and the previous token's (this chunk's,
    // or the last append's; none after a truncation or a top-k change).
    float* hidden = xn_ + (n_ - 1) * H;
    const int32_t* prev = n_ >= 2 ? routed_ + (n_ - 2) * k : has_last_[owner] ? as_ids(p.last) : nullptr;
    if (h->router_alias) {
      const int64_t n = n_;
      n_ = 1;
      linear(m_.layers[owner + 1].moe.router, hidden, head_logits_);
      n_ = n;
    } else {
      const PrerouterArgs pl{
          w_->weight(h->linear_init).codes, type_code(h->linear_init.dtype), E, H, E, static_cast<int>(k), false};
      launched(launch_prerouter_linear(pl, hidden, cur, prev, head_logits_, s), "prerouter_linear");
      if (h->has_mlp) {
        const int64_t units = h->fc1.rows;
        const PrerouterArgs p1{
            w_->weight(h->fc1).codes, type_code(h->fc1.dtype), units, H, E, static_cast<int>(k), true};
        launched(launch_prerouter_linear(p1, hidden, cur, prev, head_act_, s), "prerouter_linear (fc1)");
        const DenseArgs p2{w_->weight(h->fc2).codes, type_code(h->fc2.dtype), E, units, 0, 1, true, 1.0f};
        launched(launch_dense_matmul(p2, head_act_, head_logits_, s), "prerouter fc2");
      }
    }
    const Predicted& next = pred_[owner + 1];
    const MoeWeights& moe = m_.layers[owner + 1].moe;
    route_into(moe.spec, head_logits_, 1, as_ids(next.ids[parity_]), next.wts[parity_]);
    made_pred_[owner + 1] = 1;
    if (slots_)  // the slots fetch the predicted experts after this step
      check(
          cudaMemcpyAsync(slots_->prediction(moe), next.ids[parity_], k * sizeof(int32_t), cudaMemcpyDeviceToDevice, s),
          "cudaMemcpyAsync (prediction for the slots)");
  }
  // The last token's experts, for the next append's features.
  check(cudaMemcpyAsync(p.last, cur, k * sizeof(int32_t), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync (last ids)");
  has_last_[owner] = 1;
}

}  // namespace bs::BS_CUDA_NS
