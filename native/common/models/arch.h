// An architecture = how to read its config.json and which tensors make up a layer. The
// loaders below are the shared building blocks every architecture composes.
#pragma once
#include <cstdint>
#include <string>

#include "common/config-reader.h"
#include "common/model.h"
#include "common/tensor-loader.h"

namespace bs {

struct ArchDef {
  const char* model_type;
  // Fills cfg from config.json; throws bs::Error naming the field that is wrong.
  void (*read_config)(const ConfigReader& r, ModelConfig& cfg);
  // Loads layer `l` (prefix "model.layers.<l>"), checking every tensor against cfg.
  void (*load_layer)(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out);
};

const ArchDef& qwen3_moe_arch();
const ArchDef& glm4_moe_arch();
const ArchDef& qwen3_next_arch();
const ArchDef& qwen3_5_moe_arch();
const ArchDef& qwen3_vl_moe_arch();
const ArchDef& qwen3_arch();
const ArchDef& llama_arch();
const ArchDef& bailing_moe_linear_arch();

// Keys both architectures share (sizes, heads, norms, RoPE, vocabulary, special tokens),
// with the cross-field checks (GQA divisibility, even head_dim ...).
void read_decoder_config(const ConfigReader& r, ModelConfig& cfg);
// read_decoder_config plus what dense models (qwen3, llama) share: RoPE over the full head,
// intermediate_size, no MoE layers; attention_bias (refused but for llama).
void read_dense_config(const ConfigReader& r, ModelConfig& cfg);
// Checks the router fields once the family and widths are known.
void check_router_config(const ConfigReader& r, const ModelConfig& cfg);

std::string layer_prefix(int64_t l);
// The parts of layer l every architecture shares: the two norms, self_attn.{q,k,v,o}_proj
// (+ .bias when cfg.attention_bias, q_norm/k_norm when cfg.qk_norm) and, for a dense layer,
// mlp.{gate,up,down}_proj. Returns whether the layer is MoE (its FFN is left to the caller).
bool load_layer_base(const ModelConfig& cfg, TensorLoader& t, int64_t l, LayerWeights& out);
// mlp.{gate,up,down}_proj (or any prefix) with the given intermediate width (+ .bias each when bias).
MlpWeights load_mlp(TensorLoader& t, const std::string& prefix, int64_t hidden, int64_t inter, bool bias = false);
// The router mlp<router> [E, hidden] (quantised or plain; bailing: .gate.gate_proj) and the
// experts (stacked mlp.switch_mlp.{gate,up,down}_proj or a Hugging Face layout); out.spec starts as cfg.router.
void load_routed_experts(const ModelConfig& cfg, TensorLoader& t, const std::string& mlp_prefix, MoeWeights& out,
                         const char* router = ".gate");

// Hybrid Gated DeltaNet / gated-attention MoE models (models/hybrid.cpp): the keys Qwen3-Next
// and Qwen3.5's text_config share, and one layer (`fused`: qwen3_next's in_proj_qkvz / _ba).
void read_hybrid_config(const ConfigReader& r, ModelConfig& cfg);
// Multimodal RoPE from a rope_scaling / rope_parameters object `rs`: mrope_section (3 sections)
// and mrope_interleaved, read before read_decoder_config (which then accepts rope_scaling);
// check_mrope once rot_dims is known: the sections must cover its rot_dims / 2 frequency slots.
void read_mrope(const ConfigReader& rs, ModelConfig& cfg);
// The key of the object holding mrope_section in a text config: "rope_parameters"
// (transformers 5) or "rope_scaling"; nullptr when neither has it.
const char* mrope_key(const ConfigReader& text);
void check_mrope(const ConfigReader& rs, const ModelConfig& cfg);
void load_hybrid_layer(const ModelConfig& cfg, TensorLoader& t, int64_t l, bool fused, LayerWeights& out);

}  // namespace bs
