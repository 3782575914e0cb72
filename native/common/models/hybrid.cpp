// The layers Qwen3-Next and Qwen3.5-MoE share: Gated DeltaNet (linear attention) layers with a
// gated full-attention layer every full_attention_interval layers (or as layer_types lists),
// partial NeoX RoPE, softmax top-k routing and a sigmoid-gated shared expert. MLX files store
// the RMSNorm weights with the +1 already added, so every norm is a plain x̂·w.
#include <cmath>

#include "common/error.h"
#include "common/models/arch.h"

namespace bs {

namespace {

const char* kLinear = "linear_attention";
const char* kFull = "full_attention";

// Which layers are full attention: layer_types when given (checked against the interval when
// both are), else every full_attention_interval-th layer (i + 1) % interval == 0.
void read_layer_types(const ConfigReader& r, ModelConfig& cfg) {
  const std::vector<std::string> types = r.string_list("layer_types");
  const bool has_interval = r.has("full_attention_interval");
  const int64_t interval = has_interval ? r.integer("full_attention_interval", 1) : 0;
  if (types.empty() && !has_interval) r.error("full_attention_interval", "is needed when layer_types is absent");
  if (interval > cfg.n_layers) r.error("full_attention_interval", "must not exceed num_hidden_layers");
  if (!types.empty() && static_cast<int64_t>(types.size()) != cfg.n_layers) {
    r.error("layer_types", "must list one type per layer (num_hidden_layers " + std::to_string(cfg.n_layers) + ")");
  }
  cfg.linear_layer.resize(cfg.n_layers);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const bool by_interval = has_interval && (l + 1) % interval != 0;
    if (types.empty()) {
      cfg.linear_layer[l] = by_interval;
      continue;
    }
    if (types[l] != kLinear && types[l] != kFull) {
      r.error("layer_types", "entries must be \"linear_attention\" or \"full_attention\" (entry " + std::to_string(l) +
                                 " is \"" + types[l] + "\")");
    }
    cfg.linear_layer[l] = types[l] == kLinear;
    if (has_interval && cfg.linear_layer[l] != by_interval) {
      r.error("full_attention_interval",
              "disagrees with layer_types at layer " + std::to_string(l) + " (\"" + types[l] + "\")");
    }
  }
}

// conv1d.weight [C, K, 1] (MLX) or [C, 1, K] (Hugging Face): the same bytes, c-major.
std::vector<float> conv_weight(TensorLoader& t, const std::string& name, int64_t C, int64_t K) {
  const TensorInfo* info = t.info(name + ".weight");
  if (!info) t.vector(name + ".weight", C * K);  // throws naming the missing tensor
  const std::vector<int64_t> mlx{C, K, 1}, hf{C, 1, K};
  if (info->shape != mlx && info->shape != hf) {
    fail(*info->file, ": tensor ", info->name, " has shape ", info->shape_str(), " but config.json implies ",
         shape_to_string(mlx), " (depthwise conv: conv_dim × linear_conv_kernel_dim)");
  }
  if (!is_float_weight(info->dtype)) {
    fail(*info->file, ": tensor ", info->name, " has dtype ", dtype_name(info->dtype), " but must be F16, BF16 or F32");
  }
  std::vector<float> w(static_cast<size_t>(C * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = load_float(info->data, info->dtype, i);
  for (float v : w) {
    if (!std::isfinite(v)) fail(*info->file, ": tensor ", info->name, " holds a non-finite value (NaN or ±Inf)");
  }
  return w;
}

void load_linear_attention(const ModelConfig& cfg, TensorLoader& t, const std::string& p, bool fused,
                           LinearAttnWeights& w) {
  const LinearAttnConfig& c = cfg.linear;
  const int64_t H = cfg.hidden, r = c.v_heads / c.k_heads;
  w.fused = fused;
  if (fused) {
    w.qkvz = t.linear(p + ".in_proj_qkvz", c.k_heads * (2 * c.k_dim + 2 * r * c.v_dim), H);
    w.ba = t.linear(p + ".in_proj_ba", 2 * c.v_heads, H);
  } else {
    w.qkv = t.linear(p + ".in_proj_qkv", c.conv_dim(), H);
    w.z = t.linear(p + ".in_proj_z", c.value_dim(), H);
    w.b = t.linear(p + ".in_proj_b", c.v_heads, H);
    w.a = t.linear(p + ".in_proj_a", c.v_heads, H);
  }
  w.conv = conv_weight(t, p + ".conv1d", c.conv_dim(), c.conv_kernel);
  w.dt_bias = t.vector(p + ".dt_bias", c.v_heads);
  w.a_neg = t.vector(p + ".A_log", c.v_heads);
  for (float& a : w.a_neg) a = -std::exp(a);
  w.norm = t.vector(p + ".norm.weight", c.v_dim);
  w.out = t.linear(p + ".out_proj", H, c.value_dim());
}

}  // namespace

void read_hybrid_config(const ConfigReader& r, ModelConfig& cfg) {
  read_decoder_config(r, cfg);
  // Qwen3.5 keeps the factor under rope_parameters, Qwen3-Next at the top level.
  const bool nested = r.has("rope_parameters") && r.sub("rope_parameters").has("partial_rotary_factor");
  const ConfigReader rope = nested ? r.sub("rope_parameters") : r;
  const double factor = rope.number("partial_rotary_factor", 0.0, 1.0);
  if (factor > 1.0) rope.error("partial_rotary_factor", "must be in (0, 1]");
  cfg.rot_dims = static_cast<int64_t>(cfg.head_dim * factor);
  if (cfg.rot_dims < 2 || cfg.rot_dims % 2 != 0) {
    rope.error("partial_rotary_factor", "must give an even number ≥ 2 of rotary dims (head_dim × factor)");
  }
  cfg.qk_norm = true;
  cfg.attention_bias = false;
  cfg.attn_output_gate = true;
  LinearAttnConfig& la = cfg.linear;
  la.k_heads = r.integer("linear_num_key_heads", 1);
  la.v_heads = r.integer("linear_num_value_heads", 1);
  la.k_dim = r.integer("linear_key_head_dim", 1);
  la.v_dim = r.integer("linear_value_head_dim", 1);
  la.conv_kernel = r.integer("linear_conv_kernel_dim", 1);
  if (la.v_heads % la.k_heads != 0) r.error("linear_num_value_heads", "must be a multiple of linear_num_key_heads");
  read_layer_types(r, cfg);
  cfg.intermediate = r.integer("intermediate_size", 1, 1);
  cfg.moe_intermediate = r.integer("moe_intermediate_size", 1);
  cfg.shared_intermediate = r.integer("shared_expert_intermediate_size", 0, 0);
  RouterSpec& rs = cfg.router;
  rs.family = RoutingFamily::SoftmaxTopK;
  rs.n_experts = static_cast<int>(r.integer("num_experts", 1));
  rs.top_k = static_cast<int>(r.integer("num_experts_per_tok", 1));
  rs.norm_topk_prob = r.boolean("norm_topk_prob", true);
  const int64_t step = r.integer("decoder_sparse_step", 1, 1);
  const std::vector<int64_t> dense = r.int_list("mlp_only_layers");
  cfg.moe_layer.assign(cfg.n_layers, false);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    bool listed = false;
    for (int64_t d : dense) listed = listed || d == l;
    cfg.moe_layer[l] = !listed && (l + 1) % step == 0;
  }
  check_router_config(r, cfg);
}

void load_hybrid_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, bool fused, LayerWeights& out) {
  const std::string p = layer_prefix(l);
  out.is_linear = cfg.linear_layer[l];
  const char* want = out.is_linear ? ".linear_attn" : ".self_attn";
  const char* other = out.is_linear ? ".self_attn" : ".linear_attn";
  const std::string probe = out.is_linear ? ".conv1d.weight" : ".o_proj.weight";
  const std::string other_probe = out.is_linear ? ".o_proj.weight" : ".conv1d.weight";
  if (!t.has(p + want + probe) && t.has(p + other + other_probe)) {
    const std::string name = cfg.weight_prefix + p;
    fail("layer ", l, " is ", out.is_linear ? kLinear : kFull,
         " by config.json (full_attention_interval / layer_types) but the folder has ", name, other, " tensors and no ",
         name, want, probe, "; the layer types do not match the tensors");
  }
  out.input_norm = t.vector(p + ".input_layernorm.weight", cfg.hidden);
  out.post_norm = t.vector(p + ".post_attention_layernorm.weight", cfg.hidden);
  if (out.is_linear) {
    load_linear_attention(cfg, t, p + ".linear_attn", fused, out.linear);
  } else {
    // q_proj holds q and its output gate per head: 2 × heads × head_dim rows.
    const std::string a = p + ".self_attn";
    const int64_t q_dim = cfg.n_heads * cfg.head_dim, kv_dim = cfg.n_kv_heads * cfg.head_dim;
    out.attn.q = t.linear(a + ".q_proj", 2 * q_dim, cfg.hidden);
    out.attn.k = t.linear(a + ".k_proj", kv_dim, cfg.hidden);
    out.attn.v = t.linear(a + ".v_proj", kv_dim, cfg.hidden);
    out.attn.o = t.linear(a + ".o_proj", cfg.hidden, q_dim);
    out.attn.q_norm = t.vector(a + ".q_norm.weight", cfg.head_dim);
    out.attn.k_norm = t.vector(a + ".k_norm.weight", cfg.head_dim);
  }
  out.is_moe = cfg.moe_layer[l];
  if (!out.is_moe) out.mlp = load_mlp(t, p + ".mlp", cfg.hidden, cfg.intermediate);
  if (!out.is_moe) return;
  const std::string m = p + ".mlp";
  load_routed_experts(cfg, t, m, out.moe);
  if (cfg.shared_intermediate > 0) {
    out.moe.has_shared = true;
    out.moe.shared = load_mlp(t, m + ".shared_expert", cfg.hidden, cfg.shared_intermediate);
    out.moe.shared_gated = true;
    out.moe.shared_gate = t.linear(m + ".shared_expert_gate", 1, cfg.hidden);
  }
}

}  // namespace bs
