#include "common/prerouter/heads.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/prng.h"

namespace bs {

namespace {

WeightMatrix dense_view(const uint8_t* data, DType dt, int64_t rows, int64_t cols) {
  WeightMatrix w;
  w.format = WFormat::Dense;
  w.dtype = dt;
  w.rows = rows;
  w.cols = cols;
  w.w = data;
  return w;
}

bool any_nonzero(const WeightMatrix& w) {
  for (int64_t r = 0; r < w.rows; ++r) {
    for (int64_t c = 0; c < w.cols; ++c) {
      if (dequant(w, 0, r, c) != 0.0f) return true;
    }
  }
  return false;
}

const char* routing_name(RoutingFamily f) { return f == RoutingFamily::SoftmaxTopK ? "softmax_topk" : "sigmoid_group"; }

void dense(const Model& m, const WeightMatrix& w, const float* x, float* y) {
  m.dispatch().pick(Op::DenseMatMul, &w).dense_matmul(m.ctx(), w, 0, x, 1, y);
}

}  // namespace

float gelu_erf(float x) { return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)))); }

std::vector<int64_t> possible_owners(const Model& m) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l + 1 < m.cfg.n_layers; ++l) {
    if (m.layers[l].is_moe && m.layers[l + 1].is_moe) out.push_back(l);
  }
  return out;
}

HeadFloats zero_training_floats(const Model& m, int64_t owner, int64_t units, uint64_t seed) {
  const int64_t H = m.cfg.hidden, E = m.cfg.router.n_experts, F = H + 2 * E;
  HeadFloats h;
  h.owner = owner;
  h.units = units;
  h.linear.assign(E * F, 0.0f);
  const WeightMatrix& router = m.layers[owner + 1].moe.router.w;
  for (int64_t e = 0; e < E; ++e) dequant_row(router, 0, e, h.linear.data() + e * F);
  h.fc2.assign(E * units, 0.0f);
  h.fc1.resize(units * F);
  SplitMix rng(seed ^ (0x9e37ull * static_cast<uint64_t>(owner + 1)));
  const double sd = 1.0 / std::sqrt(static_cast<double>(F));
  for (float& v : h.fc1) v = static_cast<float>(rng.normal() * sd);
  return h;
}

std::unique_ptr<Prerouter> Prerouter::zero_training(const Model& m) {
  auto p = std::unique_ptr<Prerouter>(new Prerouter());
  p->source_ = "zero-training";
  p->by_layer_.assign(m.cfg.n_layers, -1);
  for (int64_t o : possible_owners(m)) {
    PrerouterHead h;
    h.owner = o;
    h.router_alias = true;
    p->by_layer_[o] = static_cast<int>(p->heads_.size());
    p->heads_.push_back(std::move(h));
  }
  return p;
}

std::unique_ptr<Prerouter> Prerouter::from_floats(const Model& m, std::vector<HeadFloats> heads, std::string source) {
  const int64_t H = m.cfg.hidden, E = m.cfg.router.n_experts, F = H + 2 * E;
  const std::vector<int64_t> allowed = possible_owners(m);
  auto p = std::unique_ptr<Prerouter>(new Prerouter());
  p->source_ = std::move(source);
  p->by_layer_.assign(m.cfg.n_layers, -1);
  for (HeadFloats& f : heads) {
    if (std::find(allowed.begin(), allowed.end(), f.owner) == allowed.end()) {
      fail("prerouter head for layer ", f.owner, ": layers ", f.owner, " and ", f.owner + 1,
           " must both be MoE layers");
    }
    if (static_cast<int64_t>(f.linear.size()) != E * F || static_cast<int64_t>(f.fc1.size()) != f.units * F ||
        static_cast<int64_t>(f.fc2.size()) != E * f.units) {
      fail("prerouter head for layer ", f.owner, ": weights do not have the shapes [", E, ", ", F, "], [", f.units,
           ", ", F, "], [", E, ", ", f.units, "]");
    }
    PrerouterHead h;
    h.owner = f.owner;
    h.owned.reserve(f.linear.size() + f.fc1.size() + f.fc2.size());
    h.owned.insert(h.owned.end(), f.linear.begin(), f.linear.end());
    h.owned.insert(h.owned.end(), f.fc1.begin(), f.fc1.end());
    h.owned.insert(h.owned.end(), f.fc2.begin(), f.fc2.end());
    const auto* base = reinterpret_cast<const uint8_t*>(h.owned.data());
    h.linear_init = dense_view(base, DType::F32, E, F);
    h.fc1 = dense_view(base + 4 * f.linear.size(), DType::F32, f.units, F);
    h.fc2 = dense_view(base + 4 * (f.linear.size() + f.fc1.size()), DType::F32, E, f.units);
    h.has_mlp = f.units > 0 && any_nonzero(h.fc2);
    if (p->by_layer_[f.owner] >= 0) fail("prerouter: two heads for layer ", f.owner);
    p->by_layer_[f.owner] = static_cast<int>(p->heads_.size());
    p->heads_.push_back(std::move(h));
  }
  return p;
}

std::unique_ptr<Prerouter> Prerouter::from_file(const Model& m, const std::string& path) {
  const int64_t H = m.cfg.hidden, E = m.cfg.router.n_experts, F = H + 2 * E;
  auto p = std::unique_ptr<Prerouter>(new Prerouter());
  p->source_ = path;
  p->by_layer_.assign(m.cfg.n_layers, -1);
  p->file_ = SafetensorsFile::open(path);
  const std::vector<int64_t> allowed = possible_owners(m);

  for (const auto& entry : p->file_->metadata()) {
    // Named copies of the pair's halves: lambdas capture structured bindings only from clang 16.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    auto want = [&](const std::string& expect, const std::string& hint) {
      if (value != expect)
        fail(path, ": metadata ", key, " is \"", value, "\" but this model needs \"", expect, "\"", hint);
    };
    if (key == "kind") want("prerouter", " (not a prerouter heads file?)");
    if (key == "routing") want(routing_name(m.cfg.router.family), " (heads of another model family)");
    if (key == "hidden_size") want(std::to_string(H), "");
    if (key == "num_experts") want(std::to_string(E), "");
    if (key == "top_k") {
      want(std::to_string(m.top_k), "; the heads were calibrated for another routing width: load the model with topK " +
                                        value + " or calibrate heads for K=" + std::to_string(m.top_k));
    }
  }
  // layers.<N>.{fc1,fc2,linear_init}.weight
  std::map<int64_t, std::map<std::string, const TensorInfo*>> by_owner;
  for (const TensorInfo& t : p->file_->tensors()) {
    const std::string& n = t.name;
    size_t dot1 = n.find('.'), dot2 = dot1 == std::string::npos ? dot1 : n.find('.', dot1 + 1);
    const std::string part = dot2 == std::string::npos ? "" : n.substr(dot2 + 1);
    const std::string num = dot2 == std::string::npos ? "" : n.substr(dot1 + 1, dot2 - dot1 - 1);
    const bool digits = !num.empty() && num.size() < 6 && std::all_of(num.begin(), num.end(), ::isdigit);
    if (n.rfind("layers.", 0) != 0 || !digits ||
        (part != "fc1.weight" && part != "fc2.weight" && part != "linear_init.weight")) {
      fail(path, ": unexpected tensor ", n, " (a prerouter file holds layers.<N>.{fc1,fc2,linear_init}.weight)");
    }
    by_owner[std::stoll(num)][part] = &t;
  }
  if (by_owner.empty()) fail(path, ": holds no prerouter heads (no layers.<N>.fc1.weight tensors)");
  for (const auto& [owner, parts] : by_owner) {
    const std::string pre = "layers." + std::to_string(owner);
    if (std::find(allowed.begin(), allowed.end(), owner) == allowed.end()) {
      fail(path, ": head ", pre, " predicts layer ", owner + 1, ", but layers ", owner, " and ", owner + 1,
           " of this model are not both MoE layers");
    }
    for (const char* part : {"fc1.weight", "fc2.weight", "linear_init.weight"}) {
      if (!parts.count(part)) fail(path, ": head ", pre, " lacks ", pre, ".", part);
    }
    const TensorInfo& fc1 = *parts.at("fc1.weight");
    const TensorInfo& fc2 = *parts.at("fc2.weight");
    const TensorInfo& lin = *parts.at("linear_init.weight");
    for (const TensorInfo* t : {&fc1, &fc2, &lin}) {
      if (!is_float_weight(t->dtype))
        fail(path, ": tensor ", t->name, " has dtype ", dtype_name(t->dtype), "; heads are F16, BF16 or F32");
      if (t->shape.size() != 2) fail(path, ": tensor ", t->name, " has shape ", t->shape_str(), "; heads are matrices");
    }
    const int64_t units = fc1.shape[0];
    auto check = [&](const TensorInfo& t, int64_t r, int64_t c, const char* why) {
      if (t.shape[0] != r || t.shape[1] != c) {
        fail(path, ": tensor ", t.name, " has shape ", t.shape_str(), " but this model needs [", r, ", ", c, "] (", why,
             ")");
      }
    };
    check(fc1, units, F, "features = hidden_size + 2 × experts");
    check(fc2, E, units, "experts × fc1 outputs");
    check(lin, E, F, "experts × features");
    PrerouterHead h;
    h.owner = owner;
    h.fc1 = dense_view(fc1.data, fc1.dtype, units, F);
    h.fc2 = dense_view(fc2.data, fc2.dtype, E, units);
    h.linear_init = dense_view(lin.data, lin.dtype, E, F);
    h.has_mlp = any_nonzero(h.fc2);
    p->by_layer_[owner] = static_cast<int>(p->heads_.size());
    p->heads_.push_back(std::move(h));
  }
  return p;
}

void Prerouter::check_size() const {
  if (file_) file_->check_size();
}

const PrerouterHead* Prerouter::head(int64_t owner) const {
  if (owner < 0 || owner >= static_cast<int64_t>(by_layer_.size()) || by_layer_[owner] < 0) return nullptr;
  return &heads_[by_layer_[owner]];
}

std::vector<int64_t> Prerouter::owners() const {
  std::vector<int64_t> o;
  for (const PrerouterHead& h : heads_) o.push_back(h.owner);
  std::sort(o.begin(), o.end());
  return o;
}

void Prerouter::predict(const Model& m, const PrerouterHead& h, const float* hidden, const int32_t* cur,
                        const int32_t* prev, int k, HeadScratch& s, float* logits) const {
  if (h.router_alias) {
    linear_forward(m.dispatch(), m.ctx(), m.layers[h.owner + 1].moe.router, hidden, 1, logits);
    return;
  }
  const int64_t H = m.cfg.hidden, E = m.cfg.router.n_experts;
  s.f.assign(H + 2 * E, 0.0f);
  std::copy_n(hidden, H, s.f.begin());
  for (int j = 0; j < k; ++j) {
    if (cur) s.f[H + cur[j]] = 1.0f;
    if (prev) s.f[H + E + prev[j]] = 1.0f;
  }
  dense(m, h.linear_init, s.f.data(), logits);
  if (!h.has_mlp) return;
  s.h.resize(h.fc1.rows);
  s.y.resize(E);
  dense(m, h.fc1, s.f.data(), s.h.data());
  for (float& v : s.h) v = gelu_erf(v);
  dense(m, h.fc2, s.h.data(), s.y.data());
  m.dispatch().pick(Op::Add).add(m.ctx(), s.y.data(), 1.0f, E, logits);
}

}  // namespace bs
