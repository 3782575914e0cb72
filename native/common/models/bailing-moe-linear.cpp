// bailing_moe_linear (Ling / Ring-mini-linear-2.0) as mlx-lm converts it: lightning linear
// attention layers (lightning-attention.h) with a GQA softmax layer closing every group of
// layer_group_size layers (and every layer past the last whole group), one fused
// query_key_value per layer, dense MLPs below first_k_dense_replace, sigmoid-group routing with
// expert_bias and ungated shared experts. Every RMSNorm is a plain x̂·w.
#include <cmath>

#include "common/error.h"
#include "common/lightning-attention.h"
#include "common/models/arch.h"

namespace bs {

namespace {

void refuse_true(const ConfigReader& r, const char* key, const std::string& why) {
  if (r.boolean(key, false)) r.error(key, "must be false: " + why);
}

int64_t rotary(const ConfigReader& r, int64_t head_dim, double factor) {
  const int64_t rot = static_cast<int64_t>(head_dim * factor);  // int() truncation, as mlx-lm
  if (rot < 2 || rot % 2 != 0) {
    r.error("partial_rotary_factor",
            "must give an even number ≥ 2 of rotary dims (head size " + std::to_string(head_dim) + " × factor)");
  }
  return rot;
}

void read_config(const ConfigReader& r, ModelConfig& cfg) {
  read_decoder_config(r, cfg);
  cfg.embed_name = "model.word_embeddings";
  cfg.fused_qkv = true;
  refuse_true(r, "use_bias", "dense / MLP biases are not supported");
  refuse_true(r, "use_qkv_bias", "query_key_value biases are not supported");
  refuse_true(r, "rope_traditional", "only NeoX-style (half-split) RoPE is supported");
  refuse_true(r, "norm_head", "mlx-lm rescales lm_head at every load; convert with norm_head folded in");
  const double factor = r.number("partial_rotary_factor", 0.0, 1.0);
  if (factor > 1.0) r.error("partial_rotary_factor", "must be in (0, 1]");
  cfg.rot_dims = rotary(r, cfg.head_dim, factor);
  cfg.qk_norm = r.boolean("use_qk_norm", false);
  cfg.attention_bias = false;
  if (cfg.hidden % cfg.n_heads != 0) {
    r.error("num_attention_heads", "must divide hidden_size (linear layers use hidden_size / heads per head)");
  }
  LinearAttnConfig& la = cfg.linear;
  la.lightning = true;
  la.k_heads = la.v_heads = cfg.n_heads;
  la.k_dim = la.v_dim = cfg.hidden / cfg.n_heads;
  la.conv_kernel = 0;
  la.rot_dims = rotary(r, la.k_dim, factor);
  la.norm_groups = r.integer("group_norm_size", 1);
  if (cfg.hidden % la.norm_groups != 0) r.error("group_norm_size", "must divide hidden_size");
  const int64_t group = r.integer("layer_group_size", 1);
  if (group > cfg.n_layers) r.error("layer_group_size", "must not exceed num_hidden_layers");
  cfg.linear_layer.resize(cfg.n_layers);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    cfg.linear_layer[l] = (l + 1) % group != 0 && l < cfg.n_layers / group * group;
  }

  const int64_t first_dense = r.integer("first_k_dense_replace", 0);
  if (first_dense > cfg.n_layers) r.error("first_k_dense_replace", "must not exceed num_hidden_layers");
  cfg.intermediate = r.integer("intermediate_size", 1, first_dense > 0 ? std::nullopt : std::optional<int64_t>(1));
  cfg.moe_layer.resize(cfg.n_layers);
  for (int64_t l = 0; l < cfg.n_layers; ++l) cfg.moe_layer[l] = l >= first_dense;
  cfg.moe_intermediate = r.integer("moe_intermediate_size", 1);
  const int64_t shared = r.integer("num_shared_experts", 0, 0);
  const int64_t shared_inter = r.integer("moe_shared_expert_intermediate_size", 1, cfg.moe_intermediate);
  cfg.shared_intermediate = r.boolean("moe_router_enable_shared_expert", true) ? shared * shared_inter : 0;
  if (r.string("score_function", "softmax") != "sigmoid") {
    r.error("score_function", "must be \"sigmoid\" for bailing_moe_linear (grouped sigmoid routing)");
  }
  RouterSpec& rs = cfg.router;
  rs.family = RoutingFamily::SigmoidGroup;
  rs.n_experts = static_cast<int>(r.integer("num_experts", 1));
  rs.top_k = static_cast<int>(r.integer("num_experts_per_tok", 1));
  rs.norm_topk_prob = r.boolean("norm_topk_prob");
  rs.n_group = static_cast<int>(r.integer("n_group", 1, 1));
  // mlx-lm's topk_group default (4) only matters with groups.
  rs.topk_group = rs.n_group > 1 ? static_cast<int>(r.integer("topk_group", 1, 4)) : 1;
  rs.routed_scaling_factor = static_cast<float>(r.number("routed_scaling_factor", 0.0, 1.0));
  // A router with expert_bias: zeros here, each MoE layer's tensor at load.
  if (r.boolean("moe_router_enable_expert_bias", false)) rs.correction_bias.assign(rs.n_experts, 0.0f);
  check_router_config(r, cfg);
}

void load_lightning(const ModelConfig& cfg, TensorLoader& t, int64_t l, const std::string& a, LinearAttnWeights& w) {
  const LinearAttnConfig& c = cfg.linear;
  const int64_t HD = c.k_heads * c.k_dim;
  w.qkv = t.linear(a + ".query_key_value", 3 * HD, cfg.hidden);
  w.z = t.linear(a + ".g_proj", HD, cfg.hidden);
  w.norm = t.vector(a + ".g_norm.weight", HD);
  w.out = t.linear(a + ".dense", cfg.hidden, HD);
  if (cfg.qk_norm) {
    w.q_norm = t.vector(a + ".query_layernorm.weight", c.k_dim);
    w.k_norm = t.vector(a + ".key_layernorm.weight", c.k_dim);
  }
  w.log_decay.resize(c.k_heads);
  lightning_log_decays(c.k_heads, l, cfg.n_layers, w.log_decay.data());
}

void load_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out) {
  const std::string p = layer_prefix(l), a = p + ".attention";
  out.is_linear = cfg.linear_layer[l];
  // The softmax layers' fused projection is smaller than the linear layers' (GQA).
  if (!out.is_linear && t.has(a + ".g_proj.weight")) {
    fail("layer ", l, " is a softmax-attention layer by config.json (layer_group_size) but the folder has ",
         cfg.weight_prefix, a, ".g_proj, which only linear layers have; the layer pattern does not match the tensors");
  }
  if (out.is_linear && !t.has(a + ".g_proj.weight") && t.has(a + ".query_key_value.weight")) {
    fail("layer ", l, " is a linear-attention layer by config.json (layer_group_size) but the folder has no ",
         cfg.weight_prefix, a, ".g_proj.weight; the layer pattern does not match the tensors");
  }
  out.input_norm = t.vector(p + ".input_layernorm.weight", cfg.hidden);
  out.post_norm = t.vector(p + ".post_attention_layernorm.weight", cfg.hidden);
  if (out.is_linear) {
    load_lightning(cfg, t, l, a, out.linear);
  } else {
    const int64_t q_dim = cfg.n_heads * cfg.head_dim, kv_dim = cfg.n_kv_heads * cfg.head_dim;
    out.attn.q = t.linear(a + ".query_key_value", q_dim + 2 * kv_dim, cfg.hidden);
    out.attn.o = t.linear(a + ".dense", cfg.hidden, q_dim);
    if (cfg.qk_norm) {
      out.attn.q_norm = t.vector(a + ".query_layernorm.weight", cfg.head_dim);
      out.attn.k_norm = t.vector(a + ".key_layernorm.weight", cfg.head_dim);
    }
  }
  out.is_moe = cfg.moe_layer[l];
  const std::string m = p + ".mlp";
  if (!out.is_moe) {
    out.mlp = load_mlp(t, m, cfg.hidden, cfg.intermediate);
    return;
  }
  if (t.has(m + ".gate.gate_proj.bias")) {
    fail("tensor ", cfg.weight_prefix, m, ".gate.gate_proj.bias: a router bias is not supported (only expert_bias)");
  }
  load_routed_experts(cfg, t, m, out.moe, ".gate.gate_proj");
  // expert_bias only steers selection (mlx-lm keeps it float32).
  if (!cfg.router.correction_bias.empty()) {
    out.moe.spec.correction_bias = t.vector(m + ".gate.expert_bias", cfg.router.n_experts);
  }
  if (cfg.shared_intermediate > 0) {
    out.moe.has_shared = true;
    out.moe.shared = load_mlp(t, m + ".shared_experts", cfg.hidden, cfg.shared_intermediate);
  }
}

}  // namespace

const ArchDef& bailing_moe_linear_arch() {
  static const ArchDef def{"bailing_moe_linear", read_config, load_layer};
  return def;
}

}  // namespace bs
