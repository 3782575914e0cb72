// The Metal decoder's hybrid-model pieces (Qwen3-Next, Qwen3.5; bailing_moe_linear): the Gated
// DeltaNet's conv and delta-rule and lightning attention's recurrence over each linear layer's
// state, the sigmoid gates and head copies the walk asks for, and the state's snapshots (shared
// memory: plain copies between command lists) a session truncates back to.
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "metal/metal-decoder.h"
#include "metal/metal-encode.h"

namespace bs::metal {

void MetalDecoder::conv_silu(int64_t l, const LinearAttnWeights& w) {
  const LinearAttnConfig& c = m_.cfg.linear;
  const ConvParams p{u32(c.conv_dim()), u32(c.conv_kernel), u32(n_)};
  c_->dispatch("bs_causal_conv", {ceil_div(c.conv_dim(), BS_BLOCK)}, BS_BLOCK,
               {vec(w.conv), at(rec_, rec_offset_[l]), lin_qkv_, lin_conv_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::delta_rule(int64_t l, const LinearAttnWeights& w) {
  const LinearAttnConfig& c = m_.cfg.linear;
  const DeltaParams p{u32(n_), u32(c.k_heads), u32(c.v_heads), u32(c.k_dim), u32(c.v_dim)};
  c_->dispatch("bs_delta_rule", {ceil_div(c.v_dim, BS_DELTA_ROWS), u32(c.v_heads)}, 32,
               {lin_conv_,
                lin_b_,
                lin_a_,
                vec(w.a_neg),
                vec(w.dt_bias),
                at(rec_, rec_offset_[l] + c.conv_floats()),
                lin_y_,
                {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::lightning_rule(int64_t l, const LinearAttnWeights& w, Arg q, Arg k, Arg v) {
  const LinearAttnConfig& c = m_.cfg.linear;
  const LightningParams p{u32(n_), u32(c.k_heads), u32(c.k_dim), 1.0f / std::sqrt(static_cast<float>(c.k_dim))};
  c_->dispatch("bs_lightning_rule", {ceil_div(c.k_dim, BS_DELTA_ROWS), u32(c.k_heads)}, 32,
               {q, k, v, vec(w.log_decay), at(rec_, rec_offset_[l]), lin_y_, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::sigmoid_mul(Arg x, Arg g, int64_t n, int64_t period, int64_t g_stride, int64_t g_step) {
  const GateParams p{u32(n), u32(period), u32(g_stride), u32(g_step)};
  c_->dispatch("bs_sigmoid_mul", {ceil_div(n, BS_BLOCK)}, BS_BLOCK, {x, g, {nullptr, 0, &p, sizeof p}});
}

void MetalDecoder::copy_heads(Arg src, int64_t src_token, int64_t src_head, Arg dst, int64_t dst_token,
                              int64_t dst_head, int64_t heads, int64_t width) {
  const HeadCopyParams p{u32(src_token), u32(src_head), u32(dst_token), u32(dst_head), u32(n_), u32(heads), u32(width)};
  c_->dispatch("bs_copy_heads", {ceil_div(n_ * heads * width, BS_BLOCK)}, BS_BLOCK,
               {src, dst, {nullptr, 0, &p, sizeof p}});
}

namespace {

float* floats(Arg a) { return reinterpret_cast<float*>(a.buf->contents() + a.offset); }

}  // namespace

void MetalDecoder::save_state(int slot) {
  if (slot < 0) fail("metal decoder: snapshot slot ", slot);
  if (static_cast<size_t>(slot) >= snapshots_.size()) snapshots_.resize(slot + 1);
  if (!snapshots_[slot].buf) snapshots_[slot] = alloc(rec_floats_ * 4);
  std::memcpy(floats(snapshots_[slot]), floats(rec_), rec_floats_ * 4);
}

void MetalDecoder::load_state(int slot) {
  if (slot < 0) {
    std::memset(floats(rec_), 0, rec_floats_ * 4);
    return;
  }
  if (static_cast<size_t>(slot) >= snapshots_.size() || !snapshots_[slot].buf)
    fail("metal decoder: no state snapshot in slot ", slot);
  std::memcpy(floats(rec_), floats(snapshots_[slot]), rec_floats_ * 4);
}

void MetalDecoder::read_state(int slot, float* rec) const {
  Arg from = rec_;
  if (slot >= 0) {
    if (static_cast<size_t>(slot) >= snapshots_.size() || !snapshots_[slot].buf)
      fail("metal decoder: no state snapshot in slot ", slot);
    from = snapshots_[slot];
  }
  std::memcpy(rec, floats(from), rec_floats_ * 4);
}

}  // namespace bs::metal
