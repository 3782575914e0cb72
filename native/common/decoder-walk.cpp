#include "common/decoder-walk.h"

#include <cmath>

#include "common/blocks.h"
#include "common/prerouter/heads.h"

namespace bs {

std::vector<double> rope_table(const ModelConfig& c, int axis) {
  std::vector<double> inv = c.rope_inv_freq;
  if (inv.empty()) {
    inv.resize(std::max<int64_t>(1, c.rot_dims / 2));
    for (size_t i = 0; i < inv.size(); ++i) inv[i] = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / c.rot_dims);
  }
  for (size_t i = 0; axis >= 0 && i < inv.size(); ++i) {
    if (mrope_axis(c, static_cast<int>(i)) != axis) inv[i] = 0.0;
  }
  return inv;
}

std::vector<const WeightMatrix*> decoder_matrices(const Model& m) {
  std::vector<const WeightMatrix*> out{&m.embed, &m.lm_head.w};
  auto mlp = [&](const MlpWeights& w) {
    for (const Linear* l : {&w.gate, &w.up, &w.down}) out.push_back(&l->w);
  };
  for (const LayerWeights& lw : m.layers) {
    if (lw.is_linear) {
      const LinearAttnWeights& a = lw.linear;
      for (const Linear* l : {&a.qkv, &a.z, &a.b, &a.a, &a.qkvz, &a.ba, &a.out})
        if (l->w.w) out.push_back(&l->w);
    } else {
      for (const Linear* l : {&lw.attn.q, &lw.attn.k, &lw.attn.v, &lw.attn.o}) out.push_back(&l->w);
    }
    if (!lw.is_moe) {
      mlp(lw.mlp);
      continue;
    }
    for (const WeightMatrix* w : {&lw.moe.router.w, &lw.moe.gate, &lw.moe.up, &lw.moe.down}) out.push_back(w);
    if (lw.moe.has_shared) mlp(lw.moe.shared);
    if (lw.moe.shared_gated) out.push_back(&lw.moe.shared_gate.w);
  }
  for (const int64_t owner : m.prerouter ? m.prerouter->owners() : std::vector<int64_t>{}) {
    const PrerouterHead& h = *m.prerouter->head(owner);
    for (const WeightMatrix* w : {&h.fc1, &h.fc2, &h.linear_init})
      if (!h.router_alias && w->w) out.push_back(w);
  }
  return out;
}

std::vector<const std::vector<float>*> decoder_vectors(const Model& m) {
  std::vector<const std::vector<float>*> out{&m.final_norm};
  for (const LayerWeights& lw : m.layers) {
    for (const std::vector<float>* v : {&lw.input_norm, &lw.post_norm, &lw.attn.q_norm, &lw.attn.k_norm,
                                        &lw.attn.q.bias, &lw.attn.k.bias, &lw.attn.v.bias, &lw.attn.o.bias})
      out.push_back(v);
    for (const MlpWeights* w : {&lw.mlp, &lw.moe.shared})
      for (const Linear* l : {&w->gate, &w->up, &w->down}) out.push_back(&l->bias);
    out.push_back(&lw.moe.router.bias);
    out.push_back(&lw.moe.shared_gate.bias);
    if (lw.is_moe) out.push_back(&lw.moe.spec.correction_bias);
    const LinearAttnWeights& a = lw.linear;
    for (const std::vector<float>* v : {&a.conv, &a.dt_bias, &a.a_neg, &a.norm, &a.q_norm, &a.k_norm, &a.log_decay})
      out.push_back(v);
    for (const Linear* l : {&a.qkv, &a.z, &a.b, &a.a, &a.qkvz, &a.ba, &a.out}) out.push_back(&l->bias);
  }
  return out;
}

bool slot_experts(const Model& m) { return m.streamer && m.stream.decode_path == ExpertPath::Staged; }

std::string decoder_unsupported(const Model& m, const DecoderKernels& k) {
  const ModelConfig& c = m.cfg;
  const std::string& b = k.name;
  const bool linear = std::count(c.linear_layer.begin(), c.linear_layer.end(), true) > 0;
  // The linear-attention kernels keep a key head in registers, 32 lanes wide.
  if (linear && (c.linear.k_dim % 32 != 0 || c.linear.k_dim > 256 || c.linear.conv_kernel > 8))
    return "linear-attention key heads of " + std::to_string(c.linear.k_dim) +
           " (a multiple of 32 up to 256) or a conv kernel of " + std::to_string(c.linear.conv_kernel) +
           " taps (up to 8)";
  // Lightning layers go through the attention layers' RoPE (their table, heads of head_dim).
  if (linear && c.linear.lightning && (c.linear.k_dim != c.head_dim || c.linear.rot_dims != c.rot_dims))
    return "lightning heads of " + std::to_string(c.linear.k_dim) + " with " + std::to_string(c.linear.rot_dims) +
           " rotary dims, unlike the attention layers' " + std::to_string(c.head_dim) + " and " +
           std::to_string(c.rot_dims);
  if (m.streamer && m.stream.decode_path != ExpertPath::Exact && !(k.slots && slot_experts(m)))
    return std::string("the ") + path_name(m.stream.decode_path) + " decode path has no " + b + " kernels (use " +
           (k.slots ? "exact or staged" : "exact") + ")";
  if (c.head_dim > k.max_head_dim || c.n_heads % c.n_kv_heads != 0)
    return "head_dim above " + std::to_string(k.max_head_dim) + " or query heads not a multiple of kv heads";
  if (c.router.n_experts > k.max_experts) return "more than " + std::to_string(k.max_experts) + " experts";
  for (const LayerWeights& lw : m.layers) {
    if (lw.is_moe && !lw.moe.stacked) return "per-expert or fused expert layouts (the kernels gather from one stack)";
    if (lw.is_moe && !lw.moe.gate.quantised()) return "routed experts must be quantised (4- or 8-bit)";
  }
  for (const WeightMatrix* w : decoder_matrices(m)) {
    if (!k.accepts(w->quantised() ? Op::QMatMul : Op::DenseMatMul, w))
      return "a weight format the " + b + " kernels do not take (" + std::string(dtype_name(w->dtype)) + ", " +
             std::to_string(w->bits) + "-bit, group " + std::to_string(w->group) + ")";
  }
  return "";
}

void check_append(const Model& m, const std::string& name, const int32_t* tokens, int64_t n, int64_t pos,
                  int64_t max_pos, int64_t max_chunk) {
  if (n < 1 || n > max_chunk) fail(name, " decoder: a chunk takes 1 to ", max_chunk, " tokens, got ", n);
  if (pos + n > max_pos)
    fail(name, " decoder: positions ", pos, "..", pos + n - 1, " run past its cache of ", max_pos, " positions");
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= m.cfg.vocab)
      fail(name, " decoder: token ", tokens[t], " is outside the vocabulary of ", m.cfg.vocab);
  }
}

}  // namespace bs
