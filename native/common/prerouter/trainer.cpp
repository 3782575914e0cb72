#include "common/prerouter/trainer.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/prng.h"
#include "cpu/thread-pool.h"

namespace bs {

namespace {

// The features f = [x; onehot(cur); onehot(prev)] of a sample, kept sparse.
struct Features {
  const float* x;
  const int32_t* cur;
  const int32_t* prev;  // nullptr at t = 0
};

float dot_f(const float* row, const Features& f, int64_t H, int64_t E, int k) {
  double acc = 0;
  for (int64_t i = 0; i < H; ++i) acc += static_cast<double>(row[i]) * f.x[i];
  for (int j = 0; j < k; ++j) {
    acc += row[H + f.cur[j]];
    if (f.prev) acc += row[H + E + f.prev[j]];
  }
  return static_cast<float>(acc);
}

void axpy_f(float* row, float g, const Features& f, int64_t H, int64_t E, int k) {
  for (int64_t i = 0; i < H; ++i) row[i] += g * f.x[i];
  for (int j = 0; j < k; ++j) {
    row[H + f.cur[j]] += g;
    if (f.prev) row[H + E + f.prev[j]] += g;
  }
}

double gelu_grad(double u) {
  return 0.5 * (1 + std::erf(u / std::sqrt(2.0))) + u * std::exp(-0.5 * u * u) / std::sqrt(2 * M_PI);
}

Features features(const RoutingTrace& tr, int64_t owner, int64_t t) {
  return {tr.x(owner, t), tr.ids(owner, t), t > 0 ? tr.ids(owner, t - 1) : nullptr};
}

// Forward of one sample: u [U], a [U], z [E] → softmax p [E]; returns the cross-entropy.
double forward(const HeadFloats& h, const Features& f, const int32_t* target, int64_t H, int64_t E, int k,
               std::vector<float>& u, std::vector<float>& a, std::vector<double>& p) {
  const int64_t F = H + 2 * E, U = h.units;
  u.resize(U);
  a.resize(U);
  p.resize(E);
  for (int64_t j = 0; j < U; ++j) {
    u[j] = dot_f(&h.fc1[j * F], f, H, E, k);
    a[j] = gelu_erf(u[j]);
  }
  double mx = -INFINITY;
  for (int64_t e = 0; e < E; ++e) {
    double z = dot_f(&h.linear[e * F], f, H, E, k);
    for (int64_t j = 0; j < U; ++j) z += static_cast<double>(h.fc2[e * U + j]) * a[j];
    p[e] = z;
    mx = std::max(mx, z);
  }
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - mx));
  double loss = 0;
  for (double& v : p) v /= sum;
  for (int j = 0; j < k; ++j) loss -= std::log(std::max(p[target[j]], 1e-300)) / k;
  return loss;
}

struct Grads {
  std::vector<float> fc1, fc2, linear;
  std::vector<float> u, a, du;
  std::vector<double> p;
  double loss = 0;
};

struct Adam {
  std::vector<float> m, v;
  void step(std::vector<float>& w, const std::vector<float>& g, double lr, int t, ThreadPool* pool) {
    if (m.empty()) m.assign(w.size(), 0.0f), v.assign(w.size(), 0.0f);
    constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
    ExecCtx{pool}.parallel_for(static_cast<int64_t>(w.size()), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        m[i] = static_cast<float>(b1 * m[i] + (1 - b1) * g[i]);
        v[i] = static_cast<float>(b2 * v[i] + (1 - b2) * g[i] * g[i]);
        w[i] -= static_cast<float>(lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps));
      }
    });
  }
};

}  // namespace

std::vector<int64_t> head_samples(const RoutingTrace& trace, int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t t = begin; t < std::min(end, trace.tokens() - 1); ++t) out.push_back(t);
  return out;
}

void train_head(HeadFloats& h, const RoutingTrace& trace, const std::vector<int64_t>& samples, int64_t experts,
                const TrainOptions& o, ThreadPool* pool, const std::function<void(int, double)>& progress) {
  if (samples.empty()) fail("prerouter calibration: no training samples for the head of layer ", h.owner);
  const int64_t H = trace.hidden(), E = experts, U = h.units, F = H + 2 * E;
  const int k = trace.k();
  const int parts = pool ? pool->size() : 1;
  std::vector<Grads> g(parts);
  Grads total;
  Adam a_fc1, a_fc2, a_lin;
  SplitMix rng(o.seed ^ (0x5851f42d4c957f2dull * static_cast<uint64_t>(h.owner + 1)));
  std::vector<int64_t> batch(o.batch);
  for (int step = 1; step <= o.steps; ++step) {
    for (int64_t& t : batch) t = samples[rng.below(samples.size())];
    ExecCtx{pool}.parallel_for(parts, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) {
        Grads& gr = g[part];
        gr.fc1.assign(U * F, 0.0f);
        gr.fc2.assign(E * U, 0.0f);
        gr.linear.assign(E * F, 0.0f);
        gr.loss = 0;
        gr.du.resize(U);
        for (int64_t b = part; b < o.batch; b += parts) {
          const int64_t t = batch[b];
          const Features f = features(trace, h.owner, t);
          const int32_t* target = trace.ids(h.owner + 1, t + 1);
          gr.loss += forward(h, f, target, H, E, k, gr.u, gr.a, gr.p);
          // dL/dz = softmax − uniform over the k targets, averaged over the batch.
          for (int j = 0; j < k; ++j) gr.p[target[j]] -= 1.0 / k;
          std::fill(gr.du.begin(), gr.du.end(), 0.0f);
          for (int64_t e = 0; e < E; ++e) {
            const float dz = static_cast<float>(gr.p[e] / o.batch);
            axpy_f(&gr.linear[e * F], dz, f, H, E, k);
            for (int64_t j = 0; j < U; ++j) {
              gr.fc2[e * U + j] += dz * gr.a[j];
              gr.du[j] += dz * h.fc2[e * U + j];
            }
          }
          for (int64_t j = 0; j < U; ++j)
            axpy_f(&gr.fc1[j * F], static_cast<float>(gr.du[j] * gelu_grad(gr.u[j])), f, H, E, k);
        }
      }
    });
    total.fc1 = g[0].fc1;
    total.fc2 = g[0].fc2;
    total.linear = g[0].linear;
    double loss = g[0].loss;
    for (int p = 1; p < parts; ++p) {
      loss += g[p].loss;
      for (size_t i = 0; i < total.fc1.size(); ++i) total.fc1[i] += g[p].fc1[i];
      for (size_t i = 0; i < total.fc2.size(); ++i) total.fc2[i] += g[p].fc2[i];
      for (size_t i = 0; i < total.linear.size(); ++i) total.linear[i] += g[p].linear[i];
    }
    a_fc1.step(h.fc1, total.fc1, o.lr, step, pool);
    a_fc2.step(h.fc2, total.fc2, o.lr, step, pool);
    a_lin.step(h.linear, total.linear, o.lr, step, pool);
    if (progress) progress(step, loss / o.batch);
  }
}

double head_loss(const HeadFloats& h, const RoutingTrace& trace, const std::vector<int64_t>& samples, int64_t experts) {
  if (samples.empty()) return 0;
  std::vector<float> u, a;
  std::vector<double> p;
  double sum = 0;
  for (int64_t t : samples) {
    sum += forward(h, features(trace, h.owner, t), trace.ids(h.owner + 1, t + 1), trace.hidden(), experts, trace.k(), u,
                   a, p);
  }
  return sum / static_cast<double>(samples.size());
}

double head_recall(const Model& m, const Prerouter& p, int64_t owner, const RoutingTrace& trace,
                   const std::vector<int64_t>& samples) {
  const PrerouterHead* h = p.head(owner);
  if (!h) fail("prerouter: no head for layer ", owner);
  if (samples.empty()) return 0;
  const int k = trace.k();
  HeadScratch s;
  std::vector<float> logits(m.cfg.router.n_experts), w(k);
  std::vector<int32_t> ids(k);
  int64_t hits = 0;
  for (int64_t t : samples) {
    p.predict(m, *h, trace.x(owner, t), trace.ids(owner, t), t > 0 ? trace.ids(owner, t - 1) : nullptr, k, s,
              logits.data());
    route(m.dispatch(), m.ctx(), m.layers[owner + 1].moe.spec, logits.data(), 1, k, ids.data(), w.data());
    const int32_t* want = trace.ids(owner + 1, t + 1);
    for (int j = 0; j < k; ++j) hits += std::count(want, want + k, ids[j]);
  }
  return static_cast<double>(hits) / (static_cast<double>(samples.size()) * k);
}

void round_to_f16(HeadFloats& h) {
  for (std::vector<float>* v : {&h.fc1, &h.fc2, &h.linear}) {
    for (float& x : *v) x = f16_to_f32(f32_to_f16(x));
  }
}

}  // namespace bs
