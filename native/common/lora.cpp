#include "common/lora.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "common/model.h"
#include "common/safetensors.h"

namespace bs {

namespace {

constexpr const char* kTargets =
    "LoRA targets: self_attn.{q,k,v,o}_proj, the dense mlp.{gate,up,down}_proj, "
    "mlp.shared_experts.{gate,up,down}_proj (mlp.shared_expert.* on hybrid models) and "
    "linear_attn.{in_proj_qkv,in_proj_z,in_proj_b,in_proj_a,in_proj_qkvz,in_proj_ba,out_proj} of model.layers.N; "
    "on bailing_moe_linear attention.{query_key_value,dense} and, on its linear layers, attention.g_proj";

struct Target {
  int64_t layer = 0;
  LoraSlot slot = LoraSlot::Q;
  const Linear* linear = nullptr;
};

// The layer's dense MLP (mlp.*_proj) or shared experts (mlp.shared_experts.* / mlp.shared_expert.*)
// into `out`; false for any other name. Routed experts are refused.
bool shared_or_dense(const LayerWeights& lw, int64_t l, const std::string& rest, const std::string& bad, Target& out) {
  if (rest.rfind("mlp.switch_mlp.", 0) == 0 || rest.rfind("mlp.experts.", 0) == 0) {
    fail(bad,
         "a routed-expert projection: LoRA on routed experts is not supported (experts are read per token from "
         "the base files; ",
         kTargets, ")");
  }
  struct Named {
    const char* name;
    LoraSlot slot;
  };
  static const Named mlp[] = {{"gate_proj", LoraSlot::Gate}, {"up_proj", LoraSlot::Up}, {"down_proj", LoraSlot::Down}};
  // glm4_moe and bailing name their shared experts mlp.shared_experts, Qwen3-Next / Qwen3.5 mlp.shared_expert.
  const size_t shared_len = rest.rfind("mlp.shared_experts.", 0) == 0  ? 19
                            : rest.rfind("mlp.shared_expert.", 0) == 0 ? 18
                                                                       : 0;
  const bool shared = shared_len > 0;
  const bool dense = !shared && rest.rfind("mlp.", 0) == 0;
  const std::string proj = shared ? rest.substr(shared_len) : dense ? rest.substr(4) : std::string();
  for (int i = 0; i < 3 && (shared || dense); ++i) {
    if (proj != mlp[i].name) continue;
    const MlpWeights* w = nullptr;
    if (shared && lw.is_moe && lw.moe.has_shared) w = &lw.moe.shared;
    if (!shared && !lw.is_moe) w = &lw.mlp;
    if (!w) {
      if (shared) fail(bad, "but layer ", l, " has no shared experts (", kTargets, ")");
      fail(bad, "but layer ", l, " is a MoE layer without a dense MLP (", kTargets, ")");
    }
    const Linear* lin[] = {&w->gate, &w->up, &w->down};
    out = {l, mlp[i].slot, lin[i]};
    return true;
  }
  return false;
}

// bailing_moe_linear: attention.query_key_value / dense (the Q / O slots of a softmax layer, the
// LinQkv / LinOut slots of a lightning layer) and the lightning layers' g_proj (LinZ).
Target resolve_bailing(const Model& m, const LayerWeights& lw, int64_t l, const std::string& rest,
                       const std::string& bad) {
  const LinearAttnWeights& la = lw.linear;
  if (rest == "attention.query_key_value") {
    return lw.is_linear ? Target{l, LoraSlot::LinQkv, &la.qkv} : Target{l, LoraSlot::Q, &lw.attn.q};
  }
  if (rest == "attention.dense") {
    return lw.is_linear ? Target{l, LoraSlot::LinOut, &la.out} : Target{l, LoraSlot::O, &lw.attn.o};
  }
  if (rest == "attention.g_proj") {
    if (!lw.is_linear) fail(bad, "but layer ", l, " is not a linear-attention layer (", kTargets, ")");
    return {l, LoraSlot::LinZ, &la.z};
  }
  if (rest == "mlp.gate.gate_proj") fail(bad, "the MoE router, which cannot carry a LoRA (", kTargets, ")");
  Target t;
  if (shared_or_dense(lw, l, rest, bad, t)) return t;
  fail(bad, "which is not a module of this ", m.cfg.arch, " model (", kTargets, ")");
}

// Maps an MLX module path onto the layer slot and base Linear it adds to, or fails saying
// why that module cannot carry a LoRA.
Target resolve(const Model& m, const LoraModuleSpec& ms, const std::string& who) {
  // Qwen3.5 names carry "language_model." before model.layers; adapters may write it or not.
  const std::string& pre = m.cfg.weight_prefix;
  const std::string p = !pre.empty() && ms.module.rfind(pre, 0) == 0 ? ms.module.substr(pre.size()) : ms.module;
  const std::string bad = who + ": tensor " + ms.a_tensor + " targets " + ms.module + ", ";
  const std::string prefix = "model.layers.";
  size_t at = prefix.size();
  if (p.rfind(prefix, 0) != 0 || at >= p.size() || !std::isdigit(static_cast<unsigned char>(p[at]))) {
    fail(bad, "which is not a module of this ", m.cfg.arch, " model (", kTargets, ")");
  }
  int64_t l = 0;
  while (at < p.size() && std::isdigit(static_cast<unsigned char>(p[at])) && l < (1 << 20))
    l = l * 10 + (p[at++] - '0');
  if (at >= p.size() || p[at] != '.')
    fail(bad, "which is not a module of this ", m.cfg.arch, " model (", kTargets, ")");
  if (l >= m.cfg.n_layers) fail(bad, "but the model has ", m.cfg.n_layers, " layers (0-", m.cfg.n_layers - 1, ")");
  const std::string rest = p.substr(at + 1);
  const LayerWeights& lw = m.layers[static_cast<size_t>(l)];
  if (m.cfg.fused_qkv) return resolve_bailing(m, lw, l, rest, bad);
  struct Named {
    const char* name;
    LoraSlot slot;
  };
  static const Named attn[] = {{"self_attn.q_proj", LoraSlot::Q},
                               {"self_attn.k_proj", LoraSlot::K},
                               {"self_attn.v_proj", LoraSlot::V},
                               {"self_attn.o_proj", LoraSlot::O}};
  const Linear* attn_linear[] = {&lw.attn.q, &lw.attn.k, &lw.attn.v, &lw.attn.o};
  for (int i = 0; i < 4; ++i) {
    if (rest != attn[i].name) continue;
    if (lw.is_linear) fail(bad, "but layer ", l, " is a linear-attention layer (", kTargets, ")");
    return {l, attn[i].slot, attn_linear[i]};
  }
  static const Named lin[] = {
      {"linear_attn.in_proj_qkv", LoraSlot::LinQkv},   {"linear_attn.in_proj_z", LoraSlot::LinZ},
      {"linear_attn.in_proj_b", LoraSlot::LinB},       {"linear_attn.in_proj_a", LoraSlot::LinA},
      {"linear_attn.in_proj_qkvz", LoraSlot::LinQkvz}, {"linear_attn.in_proj_ba", LoraSlot::LinBa},
      {"linear_attn.out_proj", LoraSlot::LinOut}};
  const LinearAttnWeights& la = lw.linear;
  const Linear* lin_linear[] = {&la.qkv, &la.z, &la.b, &la.a, &la.qkvz, &la.ba, &la.out};
  for (int i = 0; i < 7; ++i) {
    if (rest != lin[i].name) continue;
    if (!lw.is_linear) fail(bad, "but layer ", l, " is not a linear-attention layer (", kTargets, ")");
    const bool fused_slot = lin[i].slot == LoraSlot::LinQkvz || lin[i].slot == LoraSlot::LinBa;
    if (lin[i].slot != LoraSlot::LinOut && fused_slot != la.fused) {
      fail(bad, "but this ", m.cfg.arch, " model's linear attention has no such projection (", kTargets, ")");
    }
    return {l, lin[i].slot, lin_linear[i]};
  }
  if (rest == "mlp.gate") fail(bad, "the MoE router, which cannot carry a LoRA (", kTargets, ")");
  if (rest == "mlp.shared_expert_gate") fail(bad, "the shared-expert gate, which cannot carry a LoRA (", kTargets, ")");
  Target t;
  if (shared_or_dense(lw, l, rest, bad, t)) return t;
  fail(bad, "which is not a module of this ", m.cfg.arch, " model (", kTargets, ")");
}

// rows × cols of `src` (stored [rows, cols], or [cols, rows] when transposed) into a new
// row-major [rows, cols] buffer of dtype `dst`.
std::vector<uint8_t> copy_matrix(const TensorInfo& src, int64_t rows, int64_t cols, bool transposed, DType dst) {
  const size_t es = dtype_size(dst);
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols) * es);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t from = static_cast<size_t>(transposed ? c * rows + r : r * cols + c);
      uint8_t* to = out.data() + static_cast<size_t>(r * cols + c) * es;
      if (dst == src.dtype) {
        std::memcpy(to, src.data + from * es, es);
      } else {
        const float f = load_float(src.data, src.dtype, from);
        std::memcpy(to, &f, 4);
      }
    }
  }
  return out;
}

std::string expected_shape(int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

}  // namespace

bool LoraAdapter::belongs_to(const Model& m) const { return model_id_ == m.id; }

uint64_t LoraAdapter::bytes() const {
  uint64_t b = 0;
  for (const auto& m : modules_) b += m->a_bytes.size() + m->b_bytes.size();
  return b;
}

std::shared_ptr<const LoraAdapter> load_lora(const Model& m, const LoraSpec& spec) {
  const std::string who = "adapter \"" + spec.name + "\" (" + spec.file + ")";
  if (spec.modules.empty()) fail(who, ": no modules to load");
  const std::unique_ptr<SafetensorsFile> file = SafetensorsFile::open(spec.file);
  std::unordered_map<std::string, const TensorInfo*> tensors;
  for (const TensorInfo& t : file->tensors()) tensors.emplace(t.name, &t);

  auto adapter = std::make_shared<LoraAdapter>();
  adapter->name_ = spec.name;
  adapter->model_id_ = m.id;
  adapter->layers_.resize(static_cast<size_t>(m.cfg.n_layers));
  for (const LoraModuleSpec& ms : spec.modules) {
    const Target tg = resolve(m, ms, who);
    LayerLora& layer = adapter->layers_[static_cast<size_t>(tg.layer)];
    const LoraModule*& slot = layer.slot[static_cast<int>(tg.slot)];
    if (slot) fail(who, ": module ", ms.module, " appears twice (the second time from tensor ", ms.a_tensor, ")");
    if (!std::isfinite(ms.scale)) fail(who, ": module ", ms.module, " has a non-finite scale ", ms.scale);
    auto find = [&](const std::string& name) -> const TensorInfo& {
      auto it = tensors.find(name);
      if (it == tensors.end()) fail(who, ": tensor ", name, " (module ", ms.module, ") is not in the file");
      if (!is_float_weight(it->second->dtype)) {
        fail(who, ": tensor ", name, " has dtype ", dtype_name(it->second->dtype), " but must be F16, BF16 or F32");
      }
      return *it->second;
    };
    const TensorInfo& a = find(ms.a_tensor);
    const TensorInfo& b = find(ms.b_tensor);
    const int64_t in = tg.linear->w.cols, out = tg.linear->w.rows;
    const char* layout = ms.transposed ? "mlx-lm lora_a [in, r], lora_b [r, out]" : "lora_A [r, in], lora_B [out, r]";
    const size_t r_axis = ms.transposed ? 1 : 0;
    if (a.shape.size() != 2 || a.shape[1 - r_axis] != in || a.shape[r_axis] < 1) {
      fail(who, ": tensor ", a.name, " has shape ", a.shape_str(), " but module ", ms.module, " takes ", in,
           " inputs: expected ", ms.transposed ? "[" + std::to_string(in) + ", r]" : "[r, " + std::to_string(in) + "]",
           " (", layout, ")");
    }
    const int64_t rank = a.shape[r_axis];
    const std::vector<int64_t> want_b =
        ms.transposed ? std::vector<int64_t>{rank, out} : std::vector<int64_t>{out, rank};
    if (b.shape != want_b) {
      fail(who, ": tensor ", b.name, " has shape ", b.shape_str(), " but module ", ms.module, " has ", out,
           " outputs and rank ", rank, " (from ", a.name, "): expected ", expected_shape(want_b[0], want_b[1]), " (",
           layout, ")");
    }
    // A and B share one dtype in the kernels; mixed files are widened to F32.
    const DType dt = a.dtype == b.dtype ? a.dtype : DType::F32;
    auto mod = std::make_unique<LoraModule>();
    mod->path = ms.module;
    mod->a_bytes = copy_matrix(a, rank, in, ms.transposed, dt);
    mod->b_bytes = copy_matrix(b, out, rank, ms.transposed, dt);
    auto view = [&](const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
      WeightMatrix w;
      w.format = WFormat::Dense;
      w.dtype = dt;
      w.rows = rows;
      w.cols = cols;
      w.w = bytes.data();
      return w;
    };
    mod->w = LoraWeights{view(mod->a_bytes, rank, in), view(mod->b_bytes, out, rank), static_cast<float>(ms.scale)};
    slot = mod.get();
    adapter->modules_.push_back(std::move(mod));
  }
  return adapter;
}

}  // namespace bs
