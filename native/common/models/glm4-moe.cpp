// glm4_moe (GLM-4.5-Air layout) as mlx-lm converts it: attention with optional q/k/v bias
// and optional per-head q/k RMSNorm, partial rotary RoPE, dense layers below
// first_k_dense_replace, sigmoid-group (noaux_tc) routing with a plain float router and
// correction bias, and shared experts added to the routed output.
#include "common/models/arch.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  read_decoder_config(r, cfg);
  const double factor = r.number("partial_rotary_factor", 0.0, 1.0);
  if (factor > 1.0) r.error("partial_rotary_factor", "must be in (0, 1]");
  cfg.rot_dims = static_cast<int64_t>(cfg.head_dim * factor);  // int() truncation, as mlx-lm
  if (cfg.rot_dims < 2 || cfg.rot_dims % 2 != 0) {
    r.error("partial_rotary_factor", "must give an even number ≥ 2 of rotary dims (head_dim × factor)");
  }
  cfg.qk_norm = r.boolean("use_qk_norm");
  cfg.attention_bias = r.boolean("attention_bias");
  cfg.intermediate = r.integer("intermediate_size", 1);
  cfg.moe_intermediate = r.integer("moe_intermediate_size", 1);
  if (r.string("scoring_func", "sigmoid") != "sigmoid") r.error("scoring_func", "must be \"sigmoid\" for glm4_moe");
  if (r.string("topk_method", "noaux_tc") != "noaux_tc") r.error("topk_method", "must be \"noaux_tc\" for glm4_moe");

  RouterSpec& rs = cfg.router;
  rs.family = RoutingFamily::SigmoidGroup;
  rs.n_experts = static_cast<int>(r.integer("n_routed_experts", 1));
  rs.top_k = static_cast<int>(r.integer("num_experts_per_tok", 1));
  rs.norm_topk_prob = r.boolean("norm_topk_prob");
  rs.n_group = static_cast<int>(r.integer("n_group", 1));
  rs.topk_group = static_cast<int>(r.integer("topk_group", 1));
  rs.routed_scaling_factor = static_cast<float>(r.number("routed_scaling_factor", 0.0));
  const int64_t shared = r.has("n_shared_experts") ? r.integer("n_shared_experts", 0) : 0;
  cfg.shared_intermediate = shared * cfg.moe_intermediate;

  const int64_t first_dense = r.integer("first_k_dense_replace", 0);
  cfg.moe_layer.resize(cfg.n_layers);
  for (int64_t l = 0; l < cfg.n_layers; ++l) cfg.moe_layer[l] = l >= first_dense;
  check_router_config(r, cfg);
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  if (!load_layer_base(cfg, t, l, out)) return;
  // MoEGate is a bare float parameter (mlx-lm never quantises it); the correction bias [E]
  // only steers selection.
  const std::string p = layer_prefix(l) + ".mlp";
  load_routed_experts(cfg, t, p, out.moe);
  out.moe.spec.correction_bias = t.vector(p + ".gate.e_score_correction_bias", cfg.router.n_experts);
  if (cfg.shared_intermediate > 0) {
    out.moe.has_shared = true;
    out.moe.shared = load_mlp(t, p + ".shared_experts", cfg.hidden, cfg.shared_intermediate);
  }
}

}  // namespace

const ArchDef& glm4_moe_arch() {
  static const ArchDef def{"glm4_moe", read_config, load_layer};
  return def;
}

}  // namespace bs
