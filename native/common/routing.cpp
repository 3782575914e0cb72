#include "common/routing.h"

namespace bs {

int RouterSpec::max_k() const {
  if (family == RoutingFamily::SigmoidGroup && n_group > 1) return topk_group * (n_experts / n_group);
  return n_experts;
}

void route(const Dispatch& d, const ExecCtx& ctx, const RouterSpec& spec, const float* logits, int64_t n_tok, int k,
           int32_t* ids, float* weights) {
  if (k <= 0) k = spec.top_k;
  if (spec.family == RoutingFamily::SoftmaxTopK) {
    const SoftmaxTopKParams p{spec.n_experts, k, spec.norm_topk_prob};
    d.pick(Op::RouteSoftmaxTopK).route_softmax_topk(ctx, logits, n_tok, p, ids, weights);
  } else {
    const SigmoidGroupParams p{spec.n_experts,
                               k,
                               spec.n_group,
                               spec.topk_group,
                               spec.norm_topk_prob,
                               spec.routed_scaling_factor,
                               spec.correction_bias.data()};
    d.pick(Op::RouteSigmoidGroup).route_sigmoid_group(ctx, logits, n_tok, p, ids, weights);
  }
}

}  // namespace bs
