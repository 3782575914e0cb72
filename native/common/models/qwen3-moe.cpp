// qwen3_moe (Qwen3-30B-A3B and siblings) as mlx-lm converts it: GQA attention with per-head
// q/k RMSNorm before RoPE (full head_dim, non-traditional), softmax top-k routing with
// optional renormalisation, dense MLP layers where mlp_only_layers / decoder_sparse_step say.
#include <algorithm>

#include "common/models/arch.h"
#include "common/rope-scaling.h"

namespace bs {

namespace {

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  read_decoder_config(r, cfg);
  cfg.rot_dims = cfg.head_dim;
  read_rope_scaling(r, cfg);  // Qwen3's documented YaRN for contexts past 32K
  cfg.qk_norm = true;
  cfg.attention_bias = false;
  cfg.intermediate = r.integer("intermediate_size", 1);
  cfg.moe_intermediate = r.integer("moe_intermediate_size", 1);

  RouterSpec& rs = cfg.router;
  rs.family = RoutingFamily::SoftmaxTopK;
  rs.n_experts = static_cast<int>(r.integer("num_experts", 0));
  rs.top_k = static_cast<int>(r.integer("num_experts_per_tok", 1));
  rs.norm_topk_prob = r.boolean("norm_topk_prob");
  const int64_t step = r.integer("decoder_sparse_step", 1, 1);
  const std::vector<int64_t> dense = r.int_list("mlp_only_layers");
  for (int64_t l : dense) {
    if (l >= cfg.n_layers) r.error("mlp_only_layers", "must list layers below num_hidden_layers");
  }
  cfg.moe_layer.resize(cfg.n_layers);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const bool listed = std::find(dense.begin(), dense.end(), l) != dense.end();
    cfg.moe_layer[l] = !listed && rs.n_experts > 0 && (l + 1) % step == 0;
  }
  if (std::count(cfg.moe_layer.begin(), cfg.moe_layer.end(), true) > 0) check_router_config(r, cfg);
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  // The router is an ordinary (usually 8-bit quantised) Linear [E, hidden].
  if (load_layer_base(cfg, t, l, out)) load_routed_experts(cfg, t, layer_prefix(l) + ".mlp", out.moe);
}

}  // namespace

const ArchDef& qwen3_moe_arch() {
  static const ArchDef def{"qwen3_moe", read_config, load_layer};
  return def;
}

}  // namespace bs
