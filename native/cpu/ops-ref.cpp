#include "cpu/ops-ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace bs {

namespace {

// y[t, r] = Σ_c W[mat][r, c] · x[t, c]; each row is dequantised once and reused across tokens.
void matmul_rows(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  ctx.parallel_for(w.rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequant_row(w, mat, r, row.data());
      for (int64_t t = 0; t < n; ++t) {
        const float* xt = x + t * w.cols;
        double acc = 0;
        for (int64_t c = 0; c < w.cols; ++c) acc += static_cast<double>(row[c]) * xt[c];
        y[t * w.rows + r] = static_cast<float>(acc);
      }
    }
  });
}

void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
  matmul_rows(ctx, w, mat, x, 1, y);
}

void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  matmul_rows(ctx, w, mat, x, n, y);
}

void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y) {
  ctx.parallel_for(w.rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      int32_t loaded = -1;
      for (int64_t i = 0; i < m; ++i) {
        if (ids[i] != loaded) {
          dequant_row(w, ids[i], r, row.data());
          loaded = ids[i];
        }
        const float* xi = x + i * w.cols;
        double acc = 0;
        for (int64_t c = 0; c < w.cols; ++c) acc += static_cast<double>(row[c]) * xi[c];
        y[i * w.rows + r] = static_cast<float>(acc);
      }
    }
  });
}

void gather_matmul_multi(const ExecCtx& ctx, const WeightMatrix* const* w, int count, const int32_t* ids,
                         const float* x, int64_t m, float* const* ys) {
  for (int j = 0; j < count; ++j) gather_matmul(ctx, *w[j], ids, x, m, ys[j]);
}

void embed(const ExecCtx&, const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) dequant_row(table, 0, ids[i], out + i * table.cols);
}

void rmsnorm(const ExecCtx&, const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * d;
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    float* yr = y + r * d;
    for (int64_t i = 0; i < d; ++i) yr[i] = static_cast<float>(xr[i] * inv * w[i]);
  }
}

void rope(const ExecCtx&, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) {
  const int half = p.rot_dims / 2;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int h = 0; h < p.n_heads; ++h) {
      float* v = x + (t * p.n_heads + h) * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const double angle = positions[t] * std::pow(p.theta, -2.0 * i / p.rot_dims);
        const double c = std::cos(angle), s = std::sin(angle);
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<float>(a * c - b * s);
        v[i + half] = static_cast<float>(b * c + a * s);
      }
    }
  }
}

void attention(const ExecCtx& ctx, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
               const AttentionParams& p, float* out) {
  const int group = p.n_q_heads / p.n_kv_heads;
  const int64_t kv_stride = static_cast<int64_t>(p.n_kv_heads) * p.head_dim;
  const DType dt = p.kv_f16 ? DType::F16 : DType::F32;
  const auto* kb = static_cast<const uint8_t*>(k);
  const auto* vb = static_cast<const uint8_t*>(v);
  ctx.parallel_for(n_tok * p.n_q_heads, [&](int64_t i0, int64_t i1) {
    std::vector<double> score, acc(static_cast<size_t>(p.head_dim));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / p.n_q_heads;
      const int h = static_cast<int>(i % p.n_q_heads), g = h / group;
      const float* qv = q + i * p.head_dim;
      const int64_t n_keys = pos0 + t + 1;  // causal: keys at positions 0..pos0+t
      score.assign(static_cast<size_t>(n_keys), 0.0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        const size_t base = static_cast<size_t>(j * kv_stride + g * p.head_dim);
        double d = 0;
        for (int c = 0; c < p.head_dim; ++c) d += static_cast<double>(qv[c]) * load_float(kb, dt, base + c);
        score[j] = d * p.scale;
        mx = std::max(mx, score[j]);
      }
      double sum = 0;
      for (double& s : score) sum += (s = std::exp(s - mx));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < n_keys; ++j) {
        const size_t base = static_cast<size_t>(j * kv_stride + g * p.head_dim);
        for (int c = 0; c < p.head_dim; ++c) acc[c] += score[j] * load_float(vb, dt, base + c);
      }
      float* o = out + i * p.head_dim;
      for (int c = 0; c < p.head_dim; ++c) o[c] = static_cast<float>(acc[c] / sum);
    }
  });
}

// A per-thread buffer of at least n elements: routing runs once per layer per decode step,
// and the decode path allocates nothing once warm.
template <class T>
T* grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Indices of the k largest of score[0..n), by descending score, ties to the lower index:
// each index is inserted after every kept index with a score ≥ its own.
void top_k(const double* score, int n, int k, int32_t* out) {
  int filled = 0;
  for (int e = 0; e < n; ++e) {
    if (filled == k && !(score[e] > score[out[k - 1]])) continue;
    int pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && score[e] > score[out[pos - 1]]) {
      out[pos] = out[pos - 1];
      --pos;
    }
    out[pos] = e;
  }
}

void route_softmax_topk(const ExecCtx&, const float* logits, int64_t n_tok, const SoftmaxTopKParams& p, int32_t* ids,
                        float* weights) {
  thread_local std::vector<double> buf;
  double* prob = grow(buf, static_cast<size_t>(p.n_experts));
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* l = logits + t * p.n_experts;
    const double mx = *std::max_element(l, l + p.n_experts);
    double sum = 0;
    for (int e = 0; e < p.n_experts; ++e) sum += (prob[e] = std::exp(l[e] - mx));
    for (int e = 0; e < p.n_experts; ++e) prob[e] /= sum;
    int32_t* id = ids + t * p.top_k;
    float* w = weights + t * p.top_k;
    top_k(prob, p.n_experts, p.top_k, id);
    double wsum = 0;
    for (int j = 0; j < p.top_k; ++j) wsum += prob[id[j]];
    for (int j = 0; j < p.top_k; ++j) w[j] = static_cast<float>(p.norm_topk_prob ? prob[id[j]] / wsum : prob[id[j]]);
  }
}

void route_sigmoid_group(const ExecCtx&, const float* logits, int64_t n_tok, const SigmoidGroupParams& p, int32_t* ids,
                         float* weights) {
  const int E = p.n_experts, group_size = E / p.n_group;
  thread_local std::vector<double> buf;
  thread_local std::vector<int32_t> ibuf;
  double* s = grow(buf, static_cast<size_t>(2 * E + p.n_group));
  double* sel = s + E;
  double* gscore = sel + E;
  int32_t* keep = grow(ibuf, static_cast<size_t>(p.n_group + 2));
  int32_t* best2 = keep + p.n_group;
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* l = logits + t * E;
    for (int e = 0; e < E; ++e) {
      s[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(l[e])));
      sel[e] = s[e] + (p.correction_bias ? p.correction_bias[e] : 0.0f);
    }
    if (p.n_group > 1) {
      // Group score = sum of its two best selection scores; groups outside the best
      // topk_group get selection score 0.0 (mlx-lm's choice).
      for (int g = 0; g < p.n_group; ++g) {
        top_k(sel + g * group_size, group_size, 2, best2);
        gscore[g] = sel[g * group_size + best2[0]] + sel[g * group_size + best2[1]];
      }
      top_k(gscore, p.n_group, p.topk_group, keep);
      for (int g = 0; g < p.n_group; ++g) {
        if (std::find(keep, keep + p.topk_group, g) != keep + p.topk_group) continue;
        std::fill(sel + g * group_size, sel + (g + 1) * group_size, 0.0);
      }
    }
    int32_t* id = ids + t * p.top_k;
    float* w = weights + t * p.top_k;
    top_k(sel, E, p.top_k, id);
    double wsum = 0;
    for (int j = 0; j < p.top_k; ++j) wsum += s[id[j]];
    // mlx-lm renormalises only when top_k > 1.
    const bool renorm = p.norm_topk_prob && p.top_k > 1;
    for (int j = 0; j < p.top_k; ++j) {
      w[j] = static_cast<float>((renorm ? s[id[j]] / wsum : s[id[j]]) * p.routed_scaling_factor);
    }
  }
}

void silu_mul(const ExecCtx&, const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void add(const ExecCtx&, const float* x, float s, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += s * x[i];
}

// t = A·x per token in double, then every output row adds scale · B[o]·t; rows are split over
// the pool, so results are bit-identical for any thread count.
void lora_delta(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
  const int64_t rank = l.a.rows, in = l.a.cols, out = l.b.rows;
  std::vector<double> t(static_cast<size_t>(n * rank));
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t k = 0; k < rank; ++k) {
    dequant_row(l.a, 0, k, row.data());
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0;
      for (int64_t c = 0; c < in; ++c) acc += static_cast<double>(row[c]) * x[i * in + c];
      t[i * rank + k] = acc;
    }
  }
  ctx.parallel_for(out, [&](int64_t o0, int64_t o1) {
    std::vector<float> b(static_cast<size_t>(rank));
    for (int64_t o = o0; o < o1; ++o) {
      dequant_row(l.b, 0, o, b.data());
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0;
        for (int64_t k = 0; k < rank; ++k) acc += static_cast<double>(b[k]) * t[i * rank + k];
        float& yo = y[i * out + o];
        yo = static_cast<float>(yo + static_cast<double>(l.scale) * acc);
      }
    }
  });
}

bool usable() { return true; }

bool accepts(Op op, const WeightMatrix* w) {
  switch (op) {
    case Op::QMatVec:
    case Op::QMatMul: return w && w->quantised();
    case Op::DenseMatMul:
    case Op::LoraDelta: return w && !w->quantised();
    default: return true;
  }
}

}  // namespace

const Backend& cpu_reference_backend() {
  static const Backend b = {
      .name = "cpu-ref",
      .detail = "scalar reference kernels (the spec)",
      .usable = usable,
      .accepts = accepts,
      .k = {.qmatvec = qmatvec,
            .qmatmul = qmatmul,
            .dense_matmul = matmul_rows,
            .gather_matmul = gather_matmul,
            .gather_matmul_multi = gather_matmul_multi,
            .embed = embed,
            .rmsnorm = rmsnorm,
            .rope = rope,
            .attention = attention,
            .route_softmax_topk = route_softmax_topk,
            .route_sigmoid_group = route_sigmoid_group,
            .silu_mul = silu_mul,
            .add = add,
            .lora_delta = lora_delta},
  };
  return b;
}

}  // namespace bs
