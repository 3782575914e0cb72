// The prerouter on the decoder's device, as the CPU path runs it (common/session.h): at the last
// token of an append that returns logits, each head predicts the next token's routing of the
// layer after it; a decode step then routes that layer by the prediction. Nothing is read back.
#include "common/prerouter/heads.h"
#include "metal/metal-decoder.h"
#include "metal/metal-encode.h"

namespace bs::metal {

void MetalDecoder::predict(int64_t owner, Arg ids) {
  const PrerouterHead* h = m_.prerouter->head(owner);
  if (!h) return;
  const int64_t k = top_k_, H = m_.cfg.hidden, E = m_.cfg.router.n_experts;
  Predicted& p = pred_[owner];
  const Arg cur = at(ids, (n_ - 1) * k);
  if (predicting_) {
    // Features: the last token's MoE input, its experts, and the previous token's (this chunk's,
    // or the last append's; unknown after a truncation or a top-k change).
    const Arg hidden = at(xn_, (n_ - 1) * H);
    const bool has_prev = n_ >= 2 || has_last_[owner];
    const Arg prev = n_ >= 2 ? at(ids, (n_ - 2) * k) : has_last_[owner] ? p.last : token_;
    if (h->router_alias) {
      const int64_t n = n_;
      n_ = 1;
      linear(m_.layers[owner + 1].moe.router, hidden, head_logits_);
      n_ = n;
    } else {
      const Weight& wl = weight(h->linear_init);
      const PrerouterParams pl{
          u32(E), u32(H), u32(E), u32(k), type_code(h->linear_init.dtype), wl.w_off, 1u, has_prev ? 1u : 0u, 0u};
      c_->dispatch("bs_prerouter_linear", {ceil_div(E, BS_MM_SIMDGROUPS)}, kMatThreads,
                   {wl.codes, hidden, cur, prev, head_logits_, {nullptr, 0, &pl, sizeof pl}});
      if (h->has_mlp) {
        const int64_t units = h->fc1.rows;
        const Weight &w1 = weight(h->fc1), &w2 = weight(h->fc2);
        PrerouterParams p1 = pl;
        p1.rows = u32(units), p1.type = type_code(h->fc1.dtype), p1.w_off = w1.w_off, p1.gelu = 1;
        const DenseParams p2{u32(E), u32(units), type_code(h->fc2.dtype), w2.w_off, 0, 1, 1, 1.0f};
        c_->dispatch("bs_prerouter_linear", {ceil_div(units, BS_MM_SIMDGROUPS)}, kMatThreads,
                     {w1.codes, hidden, cur, prev, head_act_, {nullptr, 0, &p1, sizeof p1}});
        c_->dispatch("bs_dense_matmul", {dense_groups(E, units), 1}, kMatThreads,
                     {w2.codes, head_act_, head_logits_, {nullptr, 0, &p2, sizeof p2}});
      }
    }
    const Predicted& next = pred_[owner + 1];
    route(m_.layers[owner + 1].moe.spec, head_logits_, 1, next.ids[parity_], next.wts[parity_]);
    made_pred_[owner + 1] = 1;
  }
  // The last token's experts, for the next append's features.
  const ElementwiseParams pc{u32(k), 0.0f};
  c_->dispatch("bs_copy", {ceil_div(k, BS_BLOCK)}, BS_BLOCK, {cur, p.last, {nullptr, 0, &pc, sizeof pc}});
  has_last_[owner] = 1;
}

}  // namespace bs::metal
