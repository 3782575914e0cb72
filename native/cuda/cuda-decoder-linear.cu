// The CUDA decoder's hybrid-model pieces (Qwen3-Next, Qwen3.5; bailing_moe_linear): the Gated
// DeltaNet's conv and delta-rule and lightning attention's recurrence over each linear layer's
// state on the device, the sigmoid gates and head copies the walk asks for, and the state's
// snapshots a session truncates back to.
#include <cmath>

#include "common/error.h"
#include "cuda/causal-conv.cuh"
#include "cuda/copy-heads.cuh"
#include "cuda/cuda-decoder.cuh"
#include "cuda/delta-rule.cuh"
#include "cuda/lightning-rule.cuh"
#include "cuda/sigmoid-mul.cuh"

namespace bs::BS_CUDA_NS {

void CudaDecoder::conv_silu(int64_t l, const LinearAttnWeights& w) {
  const LinearAttnConfig& c = m_.cfg.linear;
  launched(launch_causal_conv_silu(vec(w.conv), c.conv_dim(), static_cast<int>(c.conv_kernel), rec_ + rec_offset_[l],
                                   lin_qkv_, n_, lin_conv_, c_.stream()),
           "causal_conv_silu");
}

void CudaDecoder::delta_rule(int64_t l, const LinearAttnWeights& w) {
  const LinearAttnConfig& c = m_.cfg.linear;
  const DeltaArgs a{lin_conv_, lin_b_, lin_a_,    vec(w.a_neg), vec(w.dt_bias), rec_ + rec_offset_[l] + c.conv_floats(),
                    lin_y_,    n_,     c.k_heads, c.v_heads,    c.k_dim,        c.v_dim};
  launched(launch_delta_rule(a, c_.stream()), "delta_rule");
}

void CudaDecoder::lightning_rule(int64_t l, const LinearAttnWeights& w, float* q, float* k, float* v) {
  const LinearAttnConfig& c = m_.cfg.linear;
  const LightningArgs a{q,      k,  v,         vec(w.log_decay), rec_ + rec_offset_[l],
                        lin_y_, n_, c.k_heads, c.k_dim,          1.0f / std::sqrt(static_cast<float>(c.k_dim))};
  launched(launch_lightning_rule(a, c_.stream()), "lightning_rule");
}

void CudaDecoder::sigmoid_mul(float* x, float* g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step) {
  launched(launch_sigmoid_mul(x, g, n, period, g_stride, g_step, c_.stream()), "sigmoid_mul");
}

void CudaDecoder::copy_heads(float* src, int64_t src_token, int64_t src_head, float* dst, int64_t dst_token,
                             int64_t dst_head, int64_t heads, int64_t width) {
  const HeadCopy h{src, src_token, src_head, dst, dst_token, dst_head, n_, heads, width};
  launched(launch_copy_heads(h, c_.stream()), "copy_heads");
}

void CudaDecoder::save_state(int slot) {
  if (slot < 0) fail("cuda decoder: snapshot slot ", slot);
  if (static_cast<size_t>(slot) >= snapshots_.size()) snapshots_.resize(slot + 1, nullptr);
  if (!snapshots_[slot]) snapshots_[slot] = alloc(rec_floats_ * 4);
  check(cudaMemcpyAsync(snapshots_[slot], rec_, rec_floats_ * 4, cudaMemcpyDeviceToDevice, c_.stream()),
        "cudaMemcpyAsync (state snapshot)");
}

void CudaDecoder::load_state(int slot) {
  if (slot < 0) {
    check(cudaMemsetAsync(rec_, 0, rec_floats_ * 4, c_.stream()), "cudaMemsetAsync (recurrent state)");
    return;
  }
  if (static_cast<size_t>(slot) >= snapshots_.size() || !snapshots_[slot])
    fail("cuda decoder: no state snapshot in slot ", slot);
  check(cudaMemcpyAsync(rec_, snapshots_[slot], rec_floats_ * 4, cudaMemcpyDeviceToDevice, c_.stream()),
        "cudaMemcpyAsync (state restore)");
}

void CudaDecoder::read_state(int slot, float* rec) const {
  const float* from = rec_;
  if (slot >= 0) {
    if (static_cast<size_t>(slot) >= snapshots_.size() || !snapshots_[slot])
      fail("cuda decoder: no state snapshot in slot ", slot);
    from = snapshots_[slot];
  }
  check(copy_to_host(rec, from, rec_floats_ * 4, c_.stream()), "cudaMemcpyAsync (read_state)");
  check(wait_stream(c_.stream()), "reading the recurrent state back");
}

}  // namespace bs::BS_CUDA_NS
