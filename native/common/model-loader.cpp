// load_model: config.json → architecture → tensors checked against the config, plus the
// loaders every architecture shares.
#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/experts/streamer.h"
#include "common/io/prefaulter.h"
#include "common/models/arch.h"
#include "common/prerouter/heads.h"
#include "common/rope-scaling.h"
#include "cpu/thread-pool.h"

namespace bs {

namespace {

const ArchDef* const kArchs[] = {&qwen3_moe_arch(),   &glm4_moe_arch(),          &qwen3_next_arch(),
                                 &qwen3_5_moe_arch(), &qwen3_vl_moe_arch(),      &qwen3_arch(),
                                 &llama_arch(),       &bailing_moe_linear_arch()};

const ArchDef& find_arch(const ConfigReader& r) {
  const std::string type = r.string("model_type");
  for (const ArchDef* a : kArchs) {
    if (type == a->model_type) return *a;
  }
  std::string names;
  for (const std::string& a : supported_architectures()) names += (names.empty() ? "" : ", ") + a;
  fail(r.what(), ": model_type \"", type, "\" is not supported (supported: ", names, ")");
}

const Backend& pick_backend(const std::string& name) {
  if (name.empty() || name == "auto") return best_backend();
  const Backend* b = find_backend(name);
  if (!b) {
    std::string names = "auto";
    for (const Backend* c : compiled_backends()) names += std::string(", ") + c->name;
    fail("backend \"", name, "\" is not compiled into this build (available: ", names, ")");
  }
  if (!b->usable()) fail("backend \"", name, "\" is compiled but this machine lacks what it needs (", b->detail, ")");
  return *b;
}

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const ArchDef* a : kArchs) out.push_back(a->model_type);
  return out;
}

std::string layer_prefix(int64_t l) { return "model.layers." + std::to_string(l); }

void read_decoder_config(const ConfigReader& r, ModelConfig& c) {
  c.vocab = r.integer("vocab_size", 1);
  c.hidden = r.integer("hidden_size", 1);
  c.n_layers = r.integer("num_hidden_layers", 1);
  c.n_heads = r.integer("num_attention_heads", 1);
  c.n_kv_heads = r.integer("num_key_value_heads", 1, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0) r.error("num_key_value_heads", "must divide num_attention_heads");
  c.head_dim = r.integer("head_dim", 2, c.hidden / c.n_heads);
  if (c.head_dim % 2 != 0 || c.head_dim < 2) r.error("head_dim", "must be even and ≥ 2 (RoPE pairs dims)");
  c.rms_eps = static_cast<float>(r.number("rms_norm_eps", 0.0));
  // Qwen3.5 keeps RoPE under rope_parameters.
  // > 1: frequencies theta^(-2i/d) must fall with i (yarn's correction divides by log theta).
  c.rope_theta = r.has("rope_theta") || !r.has("rope_parameters") ? r.number("rope_theta", 1.0)
                                                                  : r.sub("rope_parameters").number("rope_theta", 1.0);
  // Archs with RoPE over the whole head read rope_scaling once rot_dims is known (read_rope_scaling).
  const bool scaled = c.arch == "llama" || c.arch == "qwen3" || c.arch == "qwen3_moe";
  if (r.has("rope_scaling") && c.mrope_section.empty() && !scaled) {
    r.error("rope_scaling", "is not supported for " + c.arch + " (only plain RoPE); it must be null");
  }
  c.max_positions = r.integer("max_position_embeddings", 1);
  c.tie_embeddings = r.boolean("tie_word_embeddings", false);
  c.eos_token_ids = r.int_list("eos_token_id");
  c.bos_token_id = r.has("bos_token_id") ? r.integer("bos_token_id", 0) : -1;
  const std::string in_vocab = "must be a token id below vocab_size " + std::to_string(c.vocab);
  if (c.bos_token_id >= c.vocab) r.error("bos_token_id", in_vocab);
  for (int64_t id : c.eos_token_ids) {
    if (id >= c.vocab) r.error("eos_token_id", in_vocab);
  }
  if (r.has("pad_token_id") && r.integer("pad_token_id", 0) >= c.vocab) r.error("pad_token_id", in_vocab);
}

void read_dense_config(const ConfigReader& r, ModelConfig& c) {
  read_decoder_config(r, c);
  c.rot_dims = c.head_dim;
  read_rope_scaling(r, c);
  c.attention_bias = r.boolean("attention_bias", false);
  if (c.attention_bias && c.arch != "llama")
    r.error("attention_bias", "is not supported for " + c.arch + " (must be false)");
  c.intermediate = r.integer("intermediate_size", 1);
  c.moe_layer.assign(c.n_layers, false);
}

void check_router_config(const ConfigReader& r, const ModelConfig& cfg) {
  const RouterSpec& s = cfg.router;
  const char* experts_key = cfg.arch == "glm4_moe" ? "n_routed_experts" : "num_experts";
  if (s.n_experts < 1) r.error(experts_key, "must be ≥ 1 for a model with MoE layers");
  if (s.top_k > s.n_experts) r.error("num_experts_per_tok", "must not exceed the number of experts");
  if (s.family != RoutingFamily::SigmoidGroup) return;
  if (s.n_experts % s.n_group != 0) r.error("n_group", "must divide n_routed_experts");
  if (s.n_group > 1 && s.n_experts / s.n_group < 2) r.error("n_group", "must leave ≥ 2 experts per group");
  if (s.topk_group > s.n_group) r.error("topk_group", "must not exceed n_group");
  if (s.top_k > s.max_k()) r.error("num_experts_per_tok", "must not exceed topk_group × experts per group");
}

bool load_layer_base(const ModelConfig& c, TensorLoader& t, int64_t l, LayerWeights& out) {
  const std::string p = layer_prefix(l);
  out.input_norm = t.vector(p + ".input_layernorm.weight", c.hidden);
  out.post_norm = t.vector(p + ".post_attention_layernorm.weight", c.hidden);
  const std::string a = p + ".self_attn";
  AttentionWeights& w = out.attn;
  w.q = t.linear(a + ".q_proj", c.n_heads * c.head_dim, c.hidden, c.attention_bias);
  w.k = t.linear(a + ".k_proj", c.n_kv_heads * c.head_dim, c.hidden, c.attention_bias);
  w.v = t.linear(a + ".v_proj", c.n_kv_heads * c.head_dim, c.hidden, c.attention_bias);
  w.o = t.linear(a + ".o_proj", c.hidden, c.n_heads * c.head_dim, c.o_bias);
  if (c.qk_norm) {
    w.q_norm = t.vector(a + ".q_norm.weight", c.head_dim);
    w.k_norm = t.vector(a + ".k_norm.weight", c.head_dim);
  }
  out.is_moe = c.moe_layer[l];
  if (!out.is_moe) out.mlp = load_mlp(t, p + ".mlp", c.hidden, c.intermediate, c.mlp_bias);
  return out.is_moe;
}

MlpWeights load_mlp(TensorLoader& t, const std::string& prefix, int64_t hidden, int64_t inter, bool bias) {
  return MlpWeights{t.linear(prefix + ".gate_proj", inter, hidden, bias),
                    t.linear(prefix + ".up_proj", inter, hidden, bias),
                    t.linear(prefix + ".down_proj", hidden, inter, bias)};
}

namespace {

enum class ExpertLayout { Stacked, PerExpert, Fused };

// The expert layout of MoE layer `mlp` from its tensor names; a mixture fails naming two tensors.
ExpertLayout find_expert_layout(const ModelConfig& c, const TensorLoader& t, const std::string& mlp) {
  struct Found {
    ExpertLayout layout;
    const char* what;
    std::string tensor;
  };
  std::vector<Found> found;
  const std::string stacked = mlp + ".switch_mlp.gate_proj.weight", per = mlp + ".experts.0.gate_proj.weight";
  const std::string fused = mlp + ".experts.gate_up_proj";
  if (t.has(stacked)) found.push_back({ExpertLayout::Stacked, "stacked", stacked});
  if (t.has(per)) found.push_back({ExpertLayout::PerExpert, "per-expert", per});
  if (t.has(fused) || t.has(fused + ".weight")) {
    found.push_back({ExpertLayout::Fused, "fused gate_up", t.has(fused) ? fused : fused + ".weight"});
  }
  if (found.size() > 1) {
    fail("tensors ", c.weight_prefix, found[0].tensor, " and ", c.weight_prefix, found[1].tensor, " mix the ",
         found[0].what, " and ", found[1].what, " expert layouts; a layer's experts must use one");
  }
  return found.empty() ? ExpertLayout::Stacked : found[0].layout;  // none: the stacked loader names what is missing
}

// Expert e's slice of tensor `t` stacked [E × split, ...]: sub-matrix `which` of e's `split`.
ExpertPart stacked_part(const TensorInfo& t, int64_t E, int64_t split, int64_t which) {
  ExpertPart p;
  p.bytes = t.nbytes / static_cast<uint64_t>(E * split);
  p.tensor.assign(static_cast<size_t>(E), &t);
  for (int64_t e = 0; e < E; ++e) p.offset.push_back(static_cast<uint64_t>(e * split + which) * p.bytes);
  return p;
}

// The weight tensor behind `path` and, when quantised, its scales and biases.
std::vector<const TensorInfo*> part_tensors(const TensorLoader& t, const std::string& path, const WeightMatrix& m) {
  std::vector<const TensorInfo*> out{t.has(path + ".weight") ? t.info(path + ".weight") : t.info(path)};
  if (m.quantised()) {
    out.push_back(t.info(path + ".scales"));
    out.push_back(t.info(path + ".biases"));
  }
  return out;
}

const char* const kProjs[3] = {".gate_proj", ".up_proj", ".down_proj"};

void load_stacked(TensorLoader& t, const std::string& mlp, int64_t E, int64_t I, int64_t H, MoeWeights& out) {
  WeightMatrix* mats[3] = {&out.gate, &out.up, &out.down};
  for (int p = 0; p < 3; ++p) {
    const std::string path = mlp + ".switch_mlp" + kProjs[p];
    *mats[p] = p < 2 ? t.stacked(path, E, I, H) : t.stacked(path, E, H, I);
    for (const TensorInfo* x : part_tensors(t, path, *mats[p])) out.expert_parts.push_back(stacked_part(*x, E, 1, 0));
  }
}

// Hugging Face's experts.N.{gate,up,down}_proj: one tensor per expert, in any file.
void load_per_expert(TensorLoader& t, const std::string& mlp, int64_t E, int64_t I, int64_t H, MoeWeights& out) {
  out.stacked = false;
  WeightMatrix* mats[3] = {&out.gate, &out.up, &out.down};
  for (int p = 0; p < 3; ++p) {
    const size_t first = out.expert_parts.size();
    for (int64_t e = 0; e < E; ++e) {
      const std::string path = mlp + ".experts." + std::to_string(e) + kProjs[p];
      const WeightMatrix m = p < 2 ? t.expert(path, I, H) : t.expert(path, H, I);
      const std::vector<const TensorInfo*> parts = part_tensors(t, path, m);
      if (e == 0) {
        *mats[p] = m;
        out.expert_parts.resize(first + parts.size());
      } else if (m.format != mats[p]->format || m.dtype != mats[p]->dtype || m.bits != mats[p]->bits ||
                 m.group != mats[p]->group) {
        fail(*parts[0]->file, ": tensor ", parts[0]->name, " is stored as ",
             m.quantised() ? std::to_string(m.bits) + "-bit" : "plain", " ", dtype_name(m.dtype),
             " unlike expert 0's; the experts of a layer must share one format");
      }
      for (size_t k = 0; k < parts.size(); ++k) {
        ExpertPart& x = out.expert_parts[first + k];
        x.bytes = parts[k]->nbytes;
        x.tensor.push_back(parts[k]);
        x.offset.push_back(0);
      }
    }
  }
}

// Hugging Face's experts.gate_up_proj [E, 2 × inter, hidden] (per expert: gate rows, then up
// rows) and experts.down_proj [E, hidden, inter], with or without ".weight".
void load_fused(TensorLoader& t, const std::string& mlp, int64_t E, int64_t I, int64_t H, MoeWeights& out) {
  out.stacked = false;
  const std::string gu = mlp + ".experts.gate_up_proj", down = mlp + ".experts.down_proj";
  const WeightMatrix m = t.stacked(gu, E, 2 * I, H);
  out.down = t.stacked(down, E, H, I);
  const std::vector<const TensorInfo*> gu_parts = part_tensors(t, gu, m);
  for (int half = 0; half < 2; ++half) {
    WeightMatrix& x = half == 0 ? out.gate : out.up;
    x = m;
    x.n_mats = 1;
    x.rows = I;
    x.w = m.w_row(0, half * I);
    if (m.quantised()) {
      x.scales = m.scales + m.sb_index(0, half * I) * dtype_size(m.dtype);
      x.biases = m.biases + m.sb_index(0, half * I) * dtype_size(m.dtype);
    }
    for (const TensorInfo* p : gu_parts) out.expert_parts.push_back(stacked_part(*p, E, 2, half));
  }
  for (const TensorInfo* p : part_tensors(t, down, out.down)) out.expert_parts.push_back(stacked_part(*p, E, 1, 0));
  out.down.n_mats = 1;  // expert 0's, like gate and up: the experts run one at a time
}

// A linear-attention layer's state grows with v_heads·v_dim·k_dim, which small weight files do
// not bound (real models: a few MiB a layer), so each session would zero-fill whatever it says.
void check_state_size(const ModelConfig& c, const std::string& config_path) {
  const LinearAttnConfig& la = c.linear;
  const double floats =
      static_cast<double>(la.v_heads) * static_cast<double>(la.v_dim) * static_cast<double>(la.k_dim) +
      std::max<double>(0, la.conv_kernel - 1) * (2.0 * la.k_heads * la.k_dim + 1.0 * la.v_heads * la.v_dim);
  constexpr double kMaxFloats = double{1 << 26};  // 256 MiB of float32 per layer
  if (floats > kMaxFloats) {
    fail(config_path, ": a linear-attention layer's recurrent state would be ",
         static_cast<uint64_t>(floats * 4 / (1 << 20)),
         " MiB (value heads × value head dim × key head dim floats, from ",
         la.lightning ? "hidden_size and num_attention_heads"
                      : "linear_num_value_heads, linear_value_head_dim and linear_key_head_dim",
         "), over the 256 MiB per layer this engine allows");
  }
}

}  // namespace

void load_routed_experts(const ModelConfig& c, TensorLoader& t, const std::string& mlp_prefix, MoeWeights& out,
                         const char* router) {
  const ExpertLayout layout = find_expert_layout(c, t, mlp_prefix);
  const int64_t E = c.router.n_experts, I = c.moe_intermediate, H = c.hidden;
  out.router = t.linear(mlp_prefix + router, E, H);
  out.spec = c.router;
  out.expert_checked.reset(new std::atomic<bool>[static_cast<size_t>(E)]());
  switch (layout) {
    case ExpertLayout::Stacked: load_stacked(t, mlp_prefix, E, I, H, out); break;
    case ExpertLayout::PerExpert: load_per_expert(t, mlp_prefix, E, I, H, out); break;
    case ExpertLayout::Fused: load_fused(t, mlp_prefix, E, I, H, out); break;
  }
}

std::shared_ptr<Model> load_model(const std::string& dir, const LoadOptions& opts) {
  if (opts.threads < 1 || opts.threads > 256) fail("threads must be between 1 and 256, got ", opts.threads);
  if (opts.activation_bits != 24 && opts.activation_bits != 16 && opts.activation_bits != 8) {
    fail("activationBits must be 8, 16 or 24, got ", opts.activation_bits);
  }
  if (opts.prefill_chunk < 1 || opts.prefill_chunk > 4096) {
    fail("prefillChunk must be between 1 and 4096, got ", opts.prefill_chunk);
  }
  const Backend& backend = pick_backend(opts.backend);
  const std::string config_path = (std::filesystem::path(dir) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) fail("model folder ", dir, " does not exist or is not a directory");
  if (!std::filesystem::exists(config_path, ec)) fail("model folder ", dir, " has no config.json");
  const Json config = Json::parse(read_text_file(config_path), config_path);
  const ArchDef& arch = find_arch(ConfigReader(config, config_path, "the engine"));
  const ConfigReader r(config, config_path, arch.model_type);

  auto m = std::make_shared<Model>(backend, opts.threads, opts.kv_f16, opts.activation_bits);
  m->prefill_chunk = opts.prefill_chunk;
  m->profile = opts.profile;
  if (opts.profile && m->ctx().pool) m->ctx().pool->set_timing(true);
  ModelConfig& c = m->cfg;
  c.arch = arch.model_type;
  arch.read_config(r, c);
  check_state_size(c, config_path);
  const QuantConfig quant = QuantConfig::from_config(config, config_path);
  m->store = WeightStore::open(dir);
  TensorLoader t(*m->store, quant, arch.model_type);
  t.set_prefix(c.weight_prefix);

  m->embed = t.linear(c.embed_name, c.vocab, c.hidden).w;
  m->final_norm = t.vector("model.norm.weight", c.hidden);
  m->lm_head = c.tie_embeddings ? Linear{m->embed, {}} : t.linear("lm_head", c.vocab, c.hidden);
  m->layers.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    arch.load_layer(c, t, l, m->layers[l]);
    const MoeWeights& moe = m->layers[l].moe;
    if (m->layers[l].is_moe && m->expert_bytes == 0) {
      m->expert_bytes = moe.gate.mat_bytes() + moe.up.mat_bytes() + moe.down.mat_bytes();
    }
  }
  m->matrix_bytes = t.matrix_bytes();

  m->top_k = c.router.top_k;
  if (opts.top_k != 0) {
    if (opts.top_k < 1 || opts.top_k > c.router.max_k()) {
      fail_option("topK", "routing width", "must be between 1 and ", c.router.max_k(),
                  " for this model (the experts a token can reach), got ", opts.top_k);
    }
    m->top_k = opts.top_k;
  }
  m->stream = opts.stream;
  if (std::count(c.moe_layer.begin(), c.moe_layer.end(), true) > 0) {
    m->streamer = std::make_unique<ExpertStreamer>(*m, opts.stream);
    m->stream.slots = m->streamer->staged_slots();
  }
  if (opts.stream.prerouter != PrerouterMode::Off) {
    if (possible_owners(*m).empty()) {
      fail(
          "prerouter: this model has no two consecutive MoE layers, so there is no routing to predict; "
          "turn the prerouter off");
    }
    m->prerouter = opts.stream.prerouter == PrerouterMode::Zero ? Prerouter::zero_training(*m)
                                                                : Prerouter::from_file(*m, opts.stream.prerouter_file);
  }
  if (opts.prefault) {
    // Started last: the streamer's madvise calls above change the mappings, and each such call
    // would wait for a populate step. One span per file, its first tensor's bytes to its last's.
    std::vector<Prefaulter::Span> spans;
    for (const auto& f : m->store->files()) {
      const uint8_t *lo = nullptr, *hi = nullptr;
      for (const TensorInfo& ti : f->tensors()) {
        if (ti.nbytes == 0) continue;
        lo = lo ? std::min(lo, ti.data) : ti.data;
        hi = std::max(hi, ti.data + ti.nbytes);
      }
      if (lo) spans.emplace_back(lo, static_cast<uint64_t>(hi - lo));
    }
    // Then each routed expert's first-use finiteness check, on the same idle time, so requests
    // skip it; a corrupt expert stays unchecked and its first use reports it.
    const Model* model = m.get();
    auto check_experts = [model](const std::atomic<bool>& stop, std::atomic<uint64_t>& done) {
      for (const LayerWeights& lw : model->layers) {
        if (!lw.is_moe || !lw.moe.expert_checked) continue;
        for (int64_t e = 0; e < lw.moe.spec.n_experts && !stop.load(std::memory_order_relaxed); ++e) {
          try {
            check_expert_finite(lw.moe, e);
            done.fetch_add(1, std::memory_order_relaxed);
          } catch (const std::exception&) {
          }
        }
      }
    };
    m->prefaulter = std::make_unique<Prefaulter>(std::move(spans), check_experts);
  }
  return m;
}

}  // namespace bs
