// The kernels only the whole-token CUDA decoder uses, over the CPU emulation and, through the same
// staging code (cuda-op-runners.h), on a CUDA device when there is one: argmax (greedy sampling
// on the device: the first largest wins as std::max_element, NaNs never), the f16 conversion of
// KV rows (bit-exact with the reference's f32_to_f16), the fused q/k norm and RoPE (as the
// separate rmsnorm and rope kernels; with the f16 cache store joined, as the pair conversion),
// decode attention split over key ranges and at positions read from device memory, the residual
// add joined to RMSNorm (and to a MoE layer's combine), the SiLU gate read by the down projection,
// a prefill chunk's routed rows sorted by expert and their grouped product, and the LoRA steps of several linears in
// one launch (bit-exact with the separate launches in the emulation; within a float's last bits on a device). The
// decoder itself is checked against the CPU engine by cuda-decoder.test.ts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "cuda-op-runners.h"
#include "fixtures.h"
#include "harness.h"
#include "route-sort-check.h"

namespace {

using bt::Launch;

// -2 when the launch fails.
int32_t argmax_of(const bt::CudaDecoderOps& run, const std::vector<float>& x) {
  int32_t out = -1;
  return run.argmax(x.data(), 0, static_cast<int64_t>(x.size()), &out) == Launch::ok ? out : -2;
}

// Largest |a - b| / (1 + |b|).
double worst_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / (1.0 + std::fabs(b[i])));
  return worst;
}

// Fused against separate launches: the same bits where the runner is exact, else within 1e-6.
bool same_result(const bt::CudaDecoderOps& run, const std::vector<float>& a, const std::vector<float>& b) {
  return run.exact ? std::memcmp(a.data(), b.data(), a.size() * 4) == 0 : worst_diff(a, b) <= 1e-6;
}

void check_argmax(bt::T& t, const bt::CudaDecoderOps& run) {
  bt::Rng rng(5);
  std::vector<float> x(1000);
  for (float& v : x) v = static_cast<float>(rng.uniform(-4.0, 4.0));
  x[700] = x[300] = 9.0f;  // a tie across threads: the lower index
  EXPECT(argmax_of(run, x) == 300) << run.name << ": " << argmax_of(run, x);
  x[10] = std::numeric_limits<float>::quiet_NaN();
  EXPECT(argmax_of(run, x) == 300) << run.name << ": a NaN never wins";
  EXPECT(argmax_of(run, {1.0f, 3.0f, 3.0f}) == 1) << run.name;
  EXPECT(argmax_of(run, std::vector<float>(40, std::numeric_limits<float>::quiet_NaN())) == 0)
      << run.name << ": nothing compares: 0";
  // Seeded lengths, every offset (16-byte aligned or not) and every lane of a float4 holding the
  // first largest, a tie after it, a tail past the float4 loads: the first largest, as
  // std::max_element.
  for (int c = 0; c < 16; ++c) {
    bt::Rng r(500 + c);
    const size_t n = 8 + r.below(9000), off = c % 4;
    std::vector<float> buf(n + off);
    for (float& v : buf) v = static_cast<float>(r.below(50));
    const size_t pos = std::min<size_t>(n - 2, 4 * r.below(n / 4) + c / 4);
    buf[off + pos] = 99.0f;
    buf[off + pos + 1 + static_cast<size_t>(r.below(n - pos - 1))] = 99.0f;
    const auto want = static_cast<int32_t>(pos);
    int32_t got = -1;
    EXPECT(run.argmax(buf.data(), static_cast<int64_t>(off), static_cast<int64_t>(n), &got) == Launch::ok);
    EXPECT(got == want) << run.name << " seed " << 500 + c << " n " << n << " offset " << off << ": got " << got
                        << " want " << want;
  }
}

void check_to_half(bt::T& t, const bt::CudaDecoderOps& run) {
  bt::Rng rng(6);
  std::vector<float> x(777);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(rng.uniform(-1.0, 1.0)) * std::ldexp(1.0f, static_cast<int>(i % 40) - 24);
  x[0] = 65504.0f, x[1] = 1e6f, x[2] = -0.0f, x[3] = std::numeric_limits<float>::infinity();
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> out(x.size());
  EXPECT(run.to_half(x.data(), out.data(), nullptr, nullptr, n, -1, 0) == Launch::ok) << run.name;
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT(out[i] == bs::f32_to_f16(x[i])) << run.name << " element " << i << ": " << x[i];
  // The pair form (K and V rows in one launch): each half as the single form; then into cache
  // row 2 of rows n + 5 wide, the row read from device memory, the rows before it untouched.
  const std::vector<float> y(x.rbegin(), x.rend());
  for (const int32_t row : {-1, 2}) {
    const int64_t stride = n + 5, start = row < 0 ? 0 : row * stride;
    std::vector<uint16_t> o0(start + n, 7), o1(start + n, 7);
    EXPECT(run.to_half(x.data(), o0.data(), y.data(), o1.data(), n, row, stride) == Launch::ok) << run.name;
    bool kept = true;
    for (int64_t i = 0; i < start; ++i) kept &= o0[i] == 7 && o1[i] == 7;
    EXPECT(kept) << run.name << ": row " << row << " wrote before its start";
    for (int64_t i = 0; i < n; ++i)
      EXPECT(o0[start + i] == bs::f32_to_f16(x[i]) && o1[start + i] == bs::f32_to_f16(y[i]))
          << run.name << " row " << row << " pair element " << i;
  }
}

// Seeded shapes (head widths that are and are not multiples of a warp, partial rotation, GQA,
// several tokens at scattered positions): the fused kernel against rmsnorm then rope.
void check_qk_norm_rope(bt::T& t, const bt::CudaDecoderOps& run) {
  for (int c = 0; c < 10; ++c) {
    bt::Rng r(900 + c);
    const int hd = std::vector<int>{64, 128, 256, 80, 96}[r.below(5)];
    const int rot = std::vector<int>{hd, hd / 2, 32}[r.below(3)];
    const int n_q = 1 + static_cast<int>(r.below(9)), n_kv = 1 + static_cast<int>(r.below(4));
    const int64_t n_tok = 1 + static_cast<int64_t>(r.below(3));
    const float eps = 1e-6f;
    const bool norm = c % 3 != 2;  // else RoPE alone (null norm weights)
    std::vector<float> q(n_tok * n_q * hd), k(n_tok * n_kv * hd), qw(hd), kw(hd);
    for (std::vector<float>* v : {&q, &k, &qw, &kw})
      for (float& e : *v) e = static_cast<float>(r.uniform(-2.0, 2.0));
    std::vector<int32_t> pos(n_tok);
    for (int32_t& p : pos) p = static_cast<int32_t>(r.below(5000));
    std::vector<double> inv_freq(rot / 2);
    for (int i = 0; i < rot / 2; ++i) inv_freq[i] = std::pow(1e6, -2.0 * i / rot);
    std::vector<float> q2 = q, k2 = k;
    const std::string desc = std::string(run.name) + " seed " + std::to_string(900 + c) + " head_dim " +
                             std::to_string(hd) + " rot " + std::to_string(rot) + " heads " + std::to_string(n_q) +
                             "/" + std::to_string(n_kv) + " tokens " + std::to_string(n_tok) + (norm ? "" : " no norm");
    // The f16 cache store joined: q and k as without it, the cache rows from `row` on as the
    // pair conversion of the final k and the v rows, the rows before it untouched.
    const bt::QkShape shape{n_tok, n_q, n_kv, hd, rot, eps};
    const int32_t row = static_cast<int32_t>(r.below(4));
    const int64_t kv = n_tok * n_kv * hd, cache = row * n_kv * hd + kv;
    const std::vector<float> v_rows = bt::random_vec(r, kv);
    std::vector<uint16_t> k_cache(cache, 0x3c01), v_cache(cache, 0x3c02), k_want = k_cache, v_want = v_cache;
    std::vector<float> q3 = q, k3 = k;
    const bt::QkStore store{v_rows.data(), k_cache.data(), v_cache.data(), row};
    const float *q_w = norm ? qw.data() : nullptr, *k_w = norm ? kw.data() : nullptr;
    EXPECT(run.qk_norm_rope(shape, q.data(), k.data(), q_w, k_w, pos.data(), inv_freq.data(), nullptr) == Launch::ok)
        << desc;
    EXPECT(run.qk_norm_rope(shape, q3.data(), k3.data(), q_w, k_w, pos.data(), inv_freq.data(), &store) == Launch::ok)
        << desc;
    EXPECT(run.to_half(k3.data(), k_want.data(), v_rows.data(), v_want.data(), kv, row, n_kv * hd) == Launch::ok);
    EXPECT(q3 == q && k3 == k) << desc << ": the store changed q or k";
    EXPECT(k_cache == k_want && v_cache == v_want) << desc << " row " << row << ": the joined f16 store differs";
    if (norm) {
      EXPECT(run.rmsnorm(q2.data(), qw.data(), n_tok * n_q, hd, eps, q2.data()) == Launch::ok);
      EXPECT(run.rmsnorm(k2.data(), kw.data(), n_tok * n_kv, hd, eps, k2.data()) == Launch::ok);
    }
    EXPECT(run.rope(q2.data(), pos.data(), inv_freq.data(), n_tok, n_q, hd, rot) == Launch::ok);
    EXPECT(run.rope(k2.data(), pos.data(), inv_freq.data(), n_tok, n_kv, hd, rot) == Launch::ok);
    // squares summed in another order: a float's last bit at most (RoPE alone: the same bits)
    const double worst = std::max(worst_diff(q, q2), worst_diff(k, k2));
    EXPECT(worst <= 1e-6) << desc << ": worst difference " << worst;
    if (!norm) EXPECT(same_result(run, q, q2) && same_result(run, k, k2)) << desc << ": not rope's bits";
  }
}

// Softmax attention in double; query t sees keys [0, its position].
std::vector<double> attention_ref(const bt::AttnShape& a, const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v) {
  const int hd = a.head_dim, group = a.n_q / a.n_kv;
  std::vector<double> out(q.size());
  for (int64_t t = 0; t < a.n_tok; ++t) {
    const int64_t keys = (a.positions ? a.positions[t] : a.pos0 + t) + 1;
    for (int h = 0; h < a.n_q; ++h) {
      const int g = h / group;
      const float* qh = q.data() + (t * a.n_q + h) * hd;
      std::vector<double> sc(keys);
      double big = -1e300, sum = 0.0;
      for (int64_t j = 0; j < keys; ++j) {
        double d = 0.0;
        for (int e = 0; e < hd; ++e) d += static_cast<double>(qh[e]) * k[(j * a.n_kv + g) * hd + e];
        sc[j] = d * a.scale, big = std::max(big, sc[j]);
      }
      for (double& x : sc) x = std::exp(x - big), sum += x;
      for (int e = 0; e < hd; ++e) {
        double want = 0.0;
        for (int64_t j = 0; j < keys; ++j) want += sc[j] * v[(j * a.n_kv + g) * hd + e];
        out[(t * a.n_q + h) * hd + e] = want / sum;
      }
    }
  }
  return out;
}

// Decode attention over caches of seeded lengths (one key; one range; ranges of uneven size; more
// keys than kAttnSplits ranges hold at kAttnSplitKeys), f32 and f16, GQA, split and unsplit; a
// query at an earlier position read from device memory (a graph captured at pos0, replayed); two
// tokens at positions: against softmax attention in double.
void check_attention(bt::T& t, const bt::CudaDecoderOps& run) {
  const std::vector<int64_t> lengths{1, 5, 33, 64, 65, 200, 1100};
  for (int c = 0; c < static_cast<int>(lengths.size()) * 2; ++c) {
    bt::Rng r(950 + c);
    const int64_t keys = lengths[c / 2];
    const bool f16 = c % 2 == 1;
    const int hd = std::vector<int>{64, 128, 80}[r.below(3)], n_kv = 1 + static_cast<int>(r.below(2)), n_q = 2 * n_kv;
    std::vector<float> q(2 * n_q * hd), k(keys * n_kv * hd), v(k.size());
    for (std::vector<float>* x : {&q, &k, &v})
      for (float& e : *x) e = static_cast<float>(r.uniform(-1.5, 1.5));
    std::vector<uint16_t> kh(k.size()), vh(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      kh[i] = bs::f32_to_f16(k[i]), vh[i] = bs::f32_to_f16(v[i]);
      if (f16) k[i] = bs::f16_to_f32(kh[i]), v[i] = bs::f16_to_f32(vh[i]);  // the reference reads what is stored
    }
    const void* kp = f16 ? static_cast<const void*>(kh.data()) : k.data();
    const void* vp = f16 ? static_cast<const void*>(vh.data()) : v.data();
    const int32_t earlier[2] = {static_cast<int32_t>(keys / 2), static_cast<int32_t>(keys - 1)};
    struct Mode {
      const char* name;
      int64_t n_tok;
      bool split;
      const int32_t* positions;
    };
    const Mode modes[] = {{"split", 1, true, nullptr},
                          {"whole", 1, false, nullptr},
                          {"split at a position", 1, true, earlier},
                          {"two tokens at positions", 2, false, earlier}};
    for (const Mode& m : modes) {
      const bt::AttnShape a{
          n_q, n_kv, hd, keys - 1, m.n_tok, keys, f16, m.split, 1.0f / std::sqrt(static_cast<float>(hd)), m.positions};
      const std::vector<float> qm(q.begin(), q.begin() + m.n_tok * n_q * hd);
      std::vector<float> got(qm.size());
      EXPECT(run.attention(a, qm.data(), kp, vp, got.data()) == Launch::ok) << run.name << " " << m.name;
      const std::vector<double> want = attention_ref(a, qm, k, v);
      double worst = 0.0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
      EXPECT(worst <= 2e-6) << run.name << " " << m.name << " seed " << 950 + c << " keys " << keys
                            << (f16 ? " f16" : " f32") << " head_dim " << hd << " heads " << n_q << "/" << n_kv
                            << ": worst difference " << worst;
    }
  }
}

// Seeded rows and widths (a row longer than a block's stride, one shorter than a warp): the
// joined add + RMSNorm as add then rmsnorm, the residual written back; with a MoE layer's routed
// rows (and a shared expert's output, gated or not) combined in the same launch as combine (then
// sigmoid_mul and add) then add + RMSNorm; a bias added over all rows in one launch as one add per row.
void check_add_rmsnorm(bt::T& t, const bt::CudaDecoderOps& run) {
  for (int c = 0; c < 6; ++c) {
    bt::Rng r(970 + c);
    const int64_t rows = 1 + static_cast<int64_t>(r.below(4)), d = std::vector<int64_t>{2048, 1024, 300, 20}[c % 4];
    const std::vector<float> x0 = bt::random_vec(r, rows * d, 3.0), res = bt::random_vec(r, rows * d),
                             w = bt::random_vec(r, d);
    std::vector<float> xb = x0, xb2 = x0;
    EXPECT(run.add(w.data(), 1.0f, rows * d, xb.data(), d) == Launch::ok);
    for (int64_t i = 0; i < rows; ++i) EXPECT(run.add(w.data(), 1.0f, d, xb2.data() + i * d, 0) == Launch::ok);
    EXPECT(xb == xb2) << run.name << " seed " << 970 + c << " rows " << rows << " d " << d << ": bias over rows";
    std::vector<float> x = x0, y(x.size()), x2 = x0, y2(x.size());
    EXPECT(run.add_rmsnorm(x.data(), res.data(), w.data(), rows, d, 1e-6f, y.data()) == Launch::ok);
    EXPECT(run.add(res.data(), 1.0f, rows * d, x2.data(), 0) == Launch::ok);
    EXPECT(run.rmsnorm(x2.data(), w.data(), rows, d, 1e-6f, y2.data()) == Launch::ok);
    EXPECT(same_result(run, x, x2) && same_result(run, y, y2))
        << run.name << " seed " << 970 + c << " rows " << rows << " d " << d << ": worst "
        << std::max(worst_diff(x, x2), worst_diff(y, y2));
    // A MoE layer's routed rows combined inside the same launch (every other case with a shared
    // expert's output added to them): as combine (then add), then the above.
    const int k = 1 + static_cast<int>(r.below(8));
    const bool with_shared = c % 2 == 1, gated = with_shared && c >= 3;  // gated: sigmoid(gate[row]) first
    const std::vector<float> routed = bt::random_vec(r, rows * k * d), wts = bt::random_vec(r, rows * k),
                             shared = bt::random_vec(r, rows * d), gate = bt::random_vec(r, rows, 3.0);
    std::vector<float> x3 = x0, y3(x.size()), x4 = x0, y4(x.size()), sum(x.size());
    EXPECT(run.combine_add_rmsnorm(x3.data(), routed.data(), wts.data(), k, with_shared ? shared.data() : nullptr,
                                   gated ? gate.data() : nullptr, w.data(), rows, d, 1e-6f, y3.data()) == Launch::ok);
    EXPECT(run.combine(routed.data(), wts.data(), rows, k, d, sum.data()) == Launch::ok);
    std::vector<float> total = sum, scaled = shared;
    if (gated) EXPECT(run.gate(scaled.data(), gate.data(), rows * d, rows, d, 1, 0) == Launch::ok);
    if (with_shared) EXPECT(run.add(scaled.data(), 1.0f, rows * d, total.data(), 0) == Launch::ok);
    EXPECT(run.add_rmsnorm(x4.data(), total.data(), w.data(), rows, d, 1e-6f, y4.data()) == Launch::ok);
    EXPECT(same_result(run, x3, x4) && same_result(run, y3, y4))
        << run.name << " seed " << 970 + c << " rows " << rows << " k " << k << " d " << d
        << (with_shared ? " shared" : "") << (gated ? " gated" : "") << ": worst "
        << std::max(worst_diff(x3, x4), worst_diff(y3, y4));
    // And the combine itself against a double sum.
    double worst = 0.0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t e = 0; e < d; ++e) {
        double want = 0.0;
        for (int j = 0; j < k; ++j) want += static_cast<double>(wts[i * k + j]) * routed[(i * k + j) * d + e];
        worst = std::max(worst, std::fabs(sum[i * d + e] - want));
      }
    EXPECT(worst < 1e-5) << run.name << " seed " << 970 + c << " combine off a double sum by " << worst;
  }
}

// A prefill chunk's routed rows sorted by expert on the device (route_sort), over seeded shapes
// (more experts than rows, one expert taking every row, top-k 1 to 8): order a permutation of the
// rows grouped by expert, the tiles each expert's rows in runs of 8 then the rest, back to back;
// then the grouped product (each expert's codes read once per tile) against the per-row gathered
// one and, bit for bit where the runner is exact, against a plain product of each expert (the same
// per-token sums). The SiLU-gated x is refused in grouped mode (the decoder gates first).
void check_grouped_qmatmul(bt::T& t, const bt::CudaDecoderOps& run) {
  constexpr int kTile = 8;
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(990 + c);
    const int64_t E = std::vector<int64_t>{4, 128, 512, 3}[c % 4], k = 1 + r.below(8), tokens = 2 + r.below(30);
    const int64_t n = tokens * k, max_tiles = (n + kTile - 1) / kTile + std::min(n, E);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = c == 3 ? 1 : static_cast<int32_t>(r.below(E));
    const std::string desc = std::string(run.name) + " seed " + std::to_string(990 + c) + " experts " +
                             std::to_string(E) + " rows " + std::to_string(n) + " (top-k " + std::to_string(k) + ")";
    std::vector<int32_t> order(n, -1), tiles(2 * max_tiles, -1);
    int32_t count = -1;
    EXPECT(run.route_sort(ids.data(), n, E, kTile, order.data(), tiles.data(), &count) == Launch::ok) << desc;
    bt::expect_route_sort(t, ids, E, kTile, count, tiles.data(), order, desc);

    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(2);
    const int64_t rows = std::vector<int64_t>{96, 5}[(c / 2) % 2], cols = group * (1 + r.below(2));
    const bt::OwnedMatrix w = bt::random_affine(r, E, rows, cols, bits, group, bs::DType::BF16);
    const std::vector<float> x = bt::random_vec(r, n * cols);  // rows of work i read row i / k
    std::vector<float> got(n * rows), want(n * rows);
    EXPECT(run.qmatmul({&w, n, 0, ids.data(), x.data(), 0, nullptr, got.data(), static_cast<int>(k), true}) ==
           Launch::ok)
        << desc;
    EXPECT(run.qmatmul({&w, n, 0, ids.data(), x.data(), 0, nullptr, want.data(), static_cast<int>(k)}) == Launch::ok);
    EXPECT(worst_diff(got, want) <= 1e-5) << desc << ": against the gathered rows, worst " << worst_diff(got, want);
    // Plain products of the first experts used, over every token.
    for (int64_t p = 0, checked = 0; p < n && checked < 3; ++p) {
      const int32_t e = ids[order[p]];
      if (p > 0 && ids[order[p - 1]] == e) continue;
      ++checked;
      std::vector<float> plain(tokens * rows);
      EXPECT(run.qmatmul({&w, tokens, e, nullptr, x.data(), 0, nullptr, plain.data()}) == Launch::ok);
      for (int64_t i = 0; i < n; ++i) {
        if (ids[i] != e) continue;
        const std::vector<float> a(got.begin() + i * rows, got.begin() + (i + 1) * rows),
            b(plain.begin() + (i / k) * rows, plain.begin() + (i / k + 1) * rows);
        EXPECT(same_result(run, a, b)) << desc << " row " << i << " (expert " << e << "): not the plain product";
      }
    }
    std::vector<float> up(n * cols, 1.0f);
    EXPECT(run.qmatmul({&w, n, 0, ids.data(), x.data(), 0, up.data(), got.data(), static_cast<int>(k), true}) ==
           Launch::refused)
        << desc << ": the gate in grouped mode";
  }
}

// The down projection with the SiLU gate read through its x (QMatArgs::up) as silu_mul then the
// matmul: gathered over several experts (4 rows per lane group and 1) and plain for one token, 4
// and 8 bits, aligned and not (the word-per-lane path); refused for a prefill chunk's plain product.
void check_gated_qmatmul(bt::T& t, const bt::CudaDecoderOps& run) {
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(980 + c);
    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(3);
    const bool gather = c < 4 || c % 3 == 0, unaligned = c == 7;
    const int64_t E = 4, rows = std::vector<int64_t>{96, 5}[(c / 2) % 2], cols = group * (1 + r.below(3)),
                  m = gather ? 1 + static_cast<int64_t>(r.below(6)) : 1, off = unaligned ? 1 : 0;
    const bt::OwnedMatrix w = bt::random_affine(r, E, rows, cols, bits, group, bs::DType::F16);
    const std::vector<float> gate = bt::random_vec(r, m * cols + 1, 3.0), up = bt::random_vec(r, m * cols + 1);
    std::vector<int32_t> ids(m);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    const int32_t* id_ptr = gather ? ids.data() : nullptr;
    const int64_t mat = gather ? 0 : 1;
    std::vector<float> fused(m * rows), gated(m * cols + 1), want(m * rows);
    EXPECT(run.qmatmul({&w, m, mat, id_ptr, gate.data(), off, up.data(), fused.data()}) == Launch::ok);
    EXPECT(run.silu_mul(gate.data() + off, up.data(), m * cols, gated.data() + off) == Launch::ok);
    // the same path (word per lane) on both sides
    EXPECT(run.qmatmul({&w, m, mat, id_ptr, gated.data(), off, nullptr, want.data()}) == Launch::ok);
    if (!gather) {
      std::vector<float> y(3 * rows), xs(3 * cols, 1.0f), us(3 * cols, 1.0f);
      EXPECT(run.qmatmul({&w, 3, mat, nullptr, xs.data(), 0, us.data(), y.data()}) == Launch::refused)
          << run.name << " seed " << 980 + c;
    }
    EXPECT(same_result(run, fused, want))
        << run.name << " seed " << 980 + c << " bits " << bits << " group " << group << " [" << rows << ", " << cols
        << "] x " << m << (gather ? " gathered" : " plain") << (unaligned ? " unaligned" : "") << ": worst "
        << worst_diff(fused, want);
  }
}

// A linear's bias added inside the quantised product (q, k, v with biases as one set) against
// the product then the bias added over its rows (add with a period), over seeded shapes: one token
// (row groups where the grid allows) and chunks of up to 17 tokens, 4 and 8 bits; bit for bit.
void check_biased_qmatmul(bt::T& t, const bt::CudaDecoderOps& run) {
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(995 + c);
    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(3);
    const int64_t rows = std::vector<int64_t>{5, 96, 300, 4096}[r.below(4)], cols = group * (1 + r.below(3)),
                  n = c < 4 ? 1 : 1 + static_cast<int64_t>(r.below(17));
    const bt::OwnedMatrix w = bt::random_affine(r, 2, rows, cols, bits, group, bs::DType::BF16);
    const std::vector<float> x = bt::random_vec(r, n * cols), bias = bt::random_vec(r, rows);
    std::vector<float> fused(n * rows), want(n * rows);
    EXPECT(run.qmatmul({&w, n, 1, nullptr, x.data(), 0, nullptr, fused.data(), 1, false, bias.data()}) == Launch::ok);
    EXPECT(run.qmatmul({&w, n, 1, nullptr, x.data(), 0, nullptr, want.data()}) == Launch::ok);
    EXPECT(run.add(bias.data(), 1.0f, n * rows, want.data(), rows) == Launch::ok);
    EXPECT(same_result(run, fused, want)) << run.name << " seed " << 995 + c << " bits " << bits << " [" << rows << ", "
                                          << cols << "] x " << n << ": worst " << worst_diff(fused, want);
  }
}

// Three dense products of different shapes and element types in one launch (the LoRA A steps of
// q, k, v over one x; the B steps accumulating with a scale into their own outputs), several
// tokens: each as its own launch.
// y (+ y when accumulating) + alpha · W x in double, as the dense kernel's contract.
std::vector<double> dense_reference(const bt::DenseCall& c, const std::vector<float>& y0) {
  const bs::WeightMatrix& w = c.m->m;
  std::vector<double> y(static_cast<size_t>(c.n * w.rows));
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0.0;
      for (int64_t k = 0; k < w.cols; ++k)
        acc += static_cast<double>(bs::load_float(w.w, w.dtype, static_cast<size_t>(r * w.cols + k))) *
               c.x[i * w.cols + k];
      y[i * w.rows + r] = (c.accumulate ? y0[i * w.rows + r] : 0.0) + c.alpha * acc;
    }
  return y;
}

// Products a warp per row (short rows: a LoRA B step) and a block per row (rows of 256 columns
// or more: an A step, a router), with more tokens than one weight load serves: the set equals
// each product alone, and all equal the double reference within float rounding.
void check_dense_set(bt::T& t, const bt::CudaDecoderOps& run) {
  bt::Rng r(990);
  const int64_t n = 11;
  const bs::DType types[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
  const int64_t rows[3] = {16, 300, 40}, cols[3] = {1000, 160, 257};
  std::vector<bt::OwnedMatrix> w;
  std::vector<std::vector<float>> x, y_set, y_one;
  for (int i = 0; i < 3; ++i) {
    w.push_back(bt::random_dense(r, 1, rows[i], cols[i], types[i]));
    x.push_back(bt::random_vec(r, n * cols[i]));
    y_set.push_back(bt::random_vec(r, n * rows[i]));
    y_one.push_back(y_set.back());
  }
  std::vector<bt::DenseCall> set, one;
  for (int i = 0; i < 3; ++i) {
    set.push_back({&w[i], n, 0, i > 0, 0.5f + i, x[i].data(), y_set[i].data()});
    one.push_back({&w[i], n, 0, i > 0, 0.5f + i, x[i].data(), y_one[i].data()});
  }
  std::vector<std::vector<double>> want;
  for (int i = 0; i < 3; ++i) want.push_back(dense_reference(set[i], y_set[i]));
  EXPECT(run.dense(set, true) == Launch::ok) << run.name;
  EXPECT(run.dense(one, false) == Launch::ok) << run.name;
  for (int i = 0; i < 3; ++i) {
    EXPECT(same_result(run, y_set[i], y_one[i]))
        << run.name << " product " << i << ": worst " << worst_diff(y_set[i], y_one[i]);
    double worst = 0.0;  // relative to the row's scale: √cols of unit products
    for (size_t j = 0; j < want[i].size(); ++j)
      worst = std::max(worst, std::fabs(y_set[i][j] - want[i][j]) / std::sqrt(static_cast<double>(cols[i])));
    EXPECT(worst < 1e-5) << run.name << " product " << i << " (" << rows[i] << " x " << cols[i]
                         << "): off the double reference by " << worst;
  }
}

}  // namespace

TEST(cuda_emu_argmax_takes_the_first_largest_and_skips_nans) { check_argmax(t, bt::cuda_emu_decoder_ops()); }

TEST(cuda_emu_to_half_matches_the_reference_bit_for_bit) { check_to_half(t, bt::cuda_emu_decoder_ops()); }

TEST(cuda_emu_qk_norm_rope_matches_rmsnorm_then_rope_and_stores_f16_rows) {
  check_qk_norm_rope(t, bt::cuda_emu_decoder_ops());
}

TEST(cuda_emu_decode_attention_split_and_positioned_matches_double) { check_attention(t, bt::cuda_emu_decoder_ops()); }

TEST(cuda_emu_add_rmsnorm_and_combine_joined_are_the_separate_launches_bit_for_bit) {
  check_add_rmsnorm(t, bt::cuda_emu_decoder_ops());
}

TEST(cuda_emu_qmatmul_reading_silu_gate_is_silu_mul_then_qmatmul) {
  check_gated_qmatmul(t, bt::cuda_emu_decoder_ops());
}

TEST(cuda_emu_routed_rows_sorted_by_expert_and_grouped_product_match_the_gathered_one) {
  check_grouped_qmatmul(t, bt::cuda_emu_decoder_ops());
}

TEST(cuda_emu_qmatmul_with_a_bias_is_qmatmul_then_the_bias_bit_for_bit) {
  check_biased_qmatmul(t, bt::cuda_emu_decoder_ops());
}

TEST(cuda_emu_dense_matmul_matches_double_and_a_set_each_product_bit_for_bit) {
  check_dense_set(t, bt::cuda_emu_decoder_ops());
}

// The same checks on a CUDA device, through the same staging code.
TEST(cuda_device_decoder_kernels_match_the_reference) {
  bt::CudaDecoderOps run;
  if (!bt::cuda_device_ops(t, nullptr, &run)) return;
  check_argmax(t, run);
  check_to_half(t, run);
  check_qk_norm_rope(t, run);
  check_attention(t, run);
  check_add_rmsnorm(t, run);
  check_gated_qmatmul(t, run);
  check_grouped_qmatmul(t, run);
  check_biased_qmatmul(t, run);
  check_dense_set(t, run);
}
