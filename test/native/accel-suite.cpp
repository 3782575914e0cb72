#include "accel-suite.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/dtype.h"
#include "common/prerouter/heads.h"

namespace bt {

namespace {

const bs::Kernels& ref() { return bs::reference_backend().k; }

bs::DType random_float_type(Rng& r) {
  const bs::DType dts[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
  return dts[r.below(3)];
}

}  // namespace

void expect_close(T& t, const std::vector<float>& got, const std::vector<float>& want, double rel,
                  const std::string& what) {
  double scale = 1e-6;
  for (float v : want) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  const Diff d = compare(got.data(), want.data(), static_cast<int64_t>(want.size()), rel * scale, rel);
  EXPECT(d.worst <= 1.0) << what << ": element " << d.at << " got " << (d.at >= 0 ? got[d.at] : 0) << " want "
                         << (d.at >= 0 ? want[d.at] : 0) << " (" << d.worst << "× tolerance)";
}

std::string describe(const bs::WeightMatrix& w) {
  std::ostringstream os;
  os << (w.quantised() ? "affine " + std::to_string(w.bits) + "-bit g" + std::to_string(w.group) + " " : "dense ")
     << bs::dtype_name(w.dtype) << " [" << w.n_mats << ", " << w.rows << ", " << w.cols << "]";
  return os.str();
}

OwnedMatrix random_quantised(Rng& r, int64_t n_mats) {
  const int group = 32 << r.below(3);
  const int64_t rows = std::vector<int64_t>{1, 3, 4, 5, 33, 65}[r.below(6)];
  return random_affine(r, n_mats, rows, group * (1 + r.below(3)), r.below(2) ? 8 : 4, group, random_float_type(r));
}

void check_qmatmul(T& t, const bs::Backend& b, const CaseHook& hook) {
  // The last cases have model-width rows (bits, columns), which kernels split over more lanes.
  const std::vector<std::pair<int, int64_t>> wide{{4, 1024}, {8, 512}, {4, 2048}, {8, 2048}, {4, 1536}};
  for (int c = 0; c < 16 + static_cast<int>(wide.size()); ++c) {
    Rng r(31000 + c);
    if (hook) hook(c);
    const auto w = c < 16 ? random_quantised(r, 2)
                          : random_affine(r, 2, 1 + r.below(9), wide[c - 16].second, wide[c - 16].first,
                                          32 << r.below(3), random_float_type(r));
    const int64_t n = std::vector<int64_t>{1, 2, 7, 8, 9, 17}[r.below(6)], mat = r.below(2);
    const auto x = random_vec(r, n * w.m.cols);
    std::vector<float> got(n * w.m.rows), want(got.size());
    const std::string desc = "seed " + std::to_string(31000 + c) + " " + describe(w.m) + " n " + std::to_string(n);
    EXPECT(b.supports(bs::Op::QMatMul, &w.m)) << desc;
    b.k.qmatmul(bs::ExecCtx{}, w.m, mat, x.data(), n, got.data());
    ref().qmatmul(bs::ExecCtx{}, w.m, mat, x.data(), n, want.data());
    expect_close(t, got, want, 1e-5, std::string(b.name) + " qmatmul " + desc);
    std::vector<float> got1(w.m.rows), want1(w.m.rows);
    b.k.qmatvec(bs::ExecCtx{}, w.m, mat, x.data(), got1.data());
    ref().qmatvec(bs::ExecCtx{}, w.m, mat, x.data(), want1.data());
    expect_close(t, got1, want1, 1e-5, std::string(b.name) + " qmatvec " + desc);
  }
  EXPECT(b.usable()) << b.name << ": no call fell back to the reference";
}

void check_gather(T& t, const bs::Backend& b, const SlotGather& via_slots) {
  for (int c = 0; c < 12; ++c) {
    Rng r(32000 + c);
    const int64_t E = 1 + r.below(6), m = 1 + r.below(10);
    const auto w = random_quantised(r, E);
    std::vector<int32_t> ids(m);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    if (r.below(2)) std::sort(ids.begin(), ids.end());
    const auto x = random_vec(r, m * w.m.cols);
    std::vector<float> got(m * w.m.rows), want(got.size());
    b.k.gather_matmul(bs::ExecCtx{}, w.m, ids.data(), x.data(), m, got.data());
    ref().gather_matmul(bs::ExecCtx{}, w.m, ids.data(), x.data(), m, want.data());
    expect_close(t, got, want, 1e-5,
                 std::string(b.name) + " gather seed " + std::to_string(32000 + c) + " " + describe(w.m));
    // Through a slot table: expert e of 40 lives in slot slots[e] of the stack.
    std::vector<int32_t> slots(40), experts(m), in_slot(m);
    for (int32_t& s : slots) s = static_cast<int32_t>(r.below(E));
    for (int64_t i = 0; i < m; ++i) in_slot[i] = slots[experts[i] = static_cast<int32_t>(r.below(40))];
    via_slots(w.m, experts.data(), x.data(), m, got.data(), slots.data(), 40);
    ref().gather_matmul(bs::ExecCtx{}, w.m, in_slot.data(), x.data(), m, want.data());
    expect_close(t, got, want, 1e-5, std::string(b.name) + " gather via slots seed " + std::to_string(32000 + c));
  }
}

void check_dense_and_lora(T& t, const bs::Backend& b) {
  for (int c = 0; c < 12; ++c) {
    Rng r(33000 + c);
    const bs::DType dt = random_float_type(r);
    // Columns from 256 on split each row over a block (CUDA) or threadgroup (Metal).
    const int64_t rows = 1 + r.below(40), cols = std::vector<int64_t>{1, 7, 33, 100, 256, 777}[r.below(6)];
    const int64_t n = 1 + r.below(10);
    const auto w = random_dense(r, 1, rows, cols, dt);
    const auto x = random_vec(r, n * cols);
    std::vector<float> got(n * rows), want(got.size());
    b.k.dense_matmul(bs::ExecCtx{}, w.m, 0, x.data(), n, got.data());
    ref().dense_matmul(bs::ExecCtx{}, w.m, 0, x.data(), n, want.data());
    const std::string desc =
        std::string(b.name) + " seed " + std::to_string(33000 + c) + " " + describe(w.m) + " n " + std::to_string(n);
    expect_close(t, got, want, 1e-5, "dense " + desc);
    // LoRA: A [rank, cols], B [rows, rank] of one dtype, y0 + scale · B (A x).
    const int64_t rank = std::vector<int64_t>{1, 2, 8, 33}[r.below(4)];
    const auto a = random_dense(r, 1, rank, cols, dt), bm = random_dense(r, 1, rows, rank, dt);
    const bs::LoraWeights l{a.m, bm.m, static_cast<float>(r.uniform(-4, 4))};
    const auto y0 = random_vec(r, n * rows);
    std::vector<float> lg = y0, lw = y0;
    b.k.lora_delta(bs::ExecCtx{}, l, x.data(), n, lg.data());
    ref().lora_delta(bs::ExecCtx{}, l, x.data(), n, lw.data());
    expect_close(t, lg, lw, 1e-5, "lora rank " + std::to_string(rank) + " " + desc);
  }
}

void check_embed(T& t, const bs::Backend& b) {
  for (int c = 0; c < 10; ++c) {
    Rng r(34000 + c);
    const auto w =
        c % 2 ? random_quantised(r, 1) : random_dense(r, 1, 1 + r.below(20), 1 + r.below(300), random_float_type(r));
    const int64_t n = 1 + r.below(5);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(w.m.rows));
    std::vector<float> got(n * w.m.cols), want(got.size());
    b.k.embed(bs::ExecCtx{}, w.m, ids.data(), n, got.data());
    ref().embed(bs::ExecCtx{}, w.m, ids.data(), n, want.data());
    // Not bit-exact: a compiler may fuse scale·q + bias into one FMA (Metal's fast math, aarch64).
    expect_close(t, got, want, 1e-6,
                 std::string(b.name) + " embed seed " + std::to_string(34000 + c) + " " + describe(w.m));
  }
}

void check_norm_rope_elementwise(T& t, const bs::Backend& b) {
  for (int c = 0; c < 10; ++c) {
    Rng r(35000 + c);
    const int64_t rows = 1 + r.below(4), d = std::vector<int64_t>{1, 31, 255, 256, 257, 700}[r.below(6)];
    const float eps = static_cast<float>(std::pow(10.0, -r.uniform(1, 7)));
    const auto x = random_vec(r, rows * d, r.uniform(0.01, 100)), w = random_vec(r, d);
    std::vector<float> got = x, want(x.size());  // in place: y aliases x
    b.k.rmsnorm(bs::ExecCtx{}, got.data(), w.data(), rows, d, eps, got.data());
    ref().rmsnorm(bs::ExecCtx{}, x.data(), w.data(), rows, d, eps, want.data());
    const std::string desc = std::string(b.name) + " seed " + std::to_string(35000 + c);
    expect_close(t, got, want, 1e-5, "rmsnorm " + desc + " d " + std::to_string(d));

    const int heads = 1 + static_cast<int>(r.below(5)), hd = 2 * (1 + static_cast<int>(r.below(40)));
    const int rot = r.below(2) ? hd : 2 * (1 + static_cast<int>(r.below(hd / 2)));
    const bs::RopeParams p{heads, hd, rot, r.uniform(1e3, 1e6)};
    const int64_t n = 1 + r.below(4);
    std::vector<int32_t> pos(n);
    for (int32_t& v : pos) v = static_cast<int32_t>(r.below(400));
    auto rg = random_vec(r, n * heads * hd), rw = rg;
    b.k.rope(bs::ExecCtx{}, rg.data(), pos.data(), n, p);
    ref().rope(bs::ExecCtx{}, rw.data(), pos.data(), n, p);
    expect_close(t, rg, rw, 2e-5, "rope " + desc);

    const int64_t m = 1 + r.below(600);
    const auto g = random_vec(r, m, 4.0), u = random_vec(r, m), y0 = random_vec(r, m);
    std::vector<float> sg(m), sw(m), ag = y0, aw = y0;
    b.k.silu_mul(bs::ExecCtx{}, g.data(), u.data(), m, sg.data());
    ref().silu_mul(bs::ExecCtx{}, g.data(), u.data(), m, sw.data());
    expect_close(t, sg, sw, 1e-6, "silu_mul " + desc);
    b.k.add(bs::ExecCtx{}, u.data(), 0.75f, m, ag.data());
    ref().add(bs::ExecCtx{}, u.data(), 0.75f, m, aw.data());
    EXPECT(ag == aw) << "add " << desc;
  }
}

void check_attention(T& t, const bs::Backend& b) {
  for (int c = 0; c < 10; ++c) {
    Rng r(36000 + c);
    const int kv = 1 + static_cast<int>(r.below(2)), group = c % 3 == 2 ? 3 : 1 << r.below(3);
    const int hd = std::vector<int>{1, 24, 33, 64, 128, 256}[r.below(6)];
    const bool f16 = c % 2 == 1;
    const bs::AttentionParams p{kv * group, kv, hd, static_cast<float>(1 / std::sqrt(double(hd))), f16};
    const int64_t pos0 = c % 3 == 1 ? 40 + r.below(100) : r.below(6), n = r.below(2) ? 1 : 1 + r.below(4);
    const int64_t keys = pos0 + n;
    const auto q = random_vec(r, n * p.n_q_heads * hd, 2.0);
    const auto kc = random_vec(r, keys * kv * hd, 2.0), vc = random_vec(r, keys * kv * hd);
    std::vector<uint16_t> kh(kc.size()), vh(vc.size());
    for (size_t i = 0; i < kc.size(); ++i) kh[i] = bs::f32_to_f16(kc[i]);
    for (size_t i = 0; i < vc.size(); ++i) vh[i] = bs::f32_to_f16(vc[i]);
    const void* k = f16 ? static_cast<const void*>(kh.data()) : kc.data();
    const void* v = f16 ? static_cast<const void*>(vh.data()) : vc.data();
    std::vector<float> got(n * p.n_q_heads * hd), want(got.size());
    b.k.attention(bs::ExecCtx{}, q.data(), k, v, pos0, n, p, got.data());
    ref().attention(bs::ExecCtx{}, q.data(), k, v, pos0, n, p, want.data());
    std::ostringstream desc;
    desc << b.name << " attention seed " << 36000 + c << " q " << p.n_q_heads << " kv " << kv << " hd " << hd
         << " pos0 " << pos0 << " n " << n << (f16 ? " f16" : " f32");
    expect_close(t, got, want, 1e-5, desc.str());
  }
}

void check_routing(T& t, const bs::Backend& b) {
  for (int c = 0; c < 12; ++c) {
    Rng r(37000 + c);
    const int E = std::vector<int>{1, 5, 32, 33, 128, 512}[r.below(6)],
              k = 1 + static_cast<int>(r.below(std::min(E, 8)));
    const int64_t n = 1 + r.below(4);
    const auto logits = random_vec(r, n * E, 2.0);
    const bs::SoftmaxTopKParams p{E, k, r.below(2) == 1};
    std::vector<int32_t> ig(n * k), iw(n * k);
    std::vector<float> wg(n * k), ww(n * k);
    b.k.route_softmax_topk(bs::ExecCtx{}, logits.data(), n, p, ig.data(), wg.data());
    ref().route_softmax_topk(bs::ExecCtx{}, logits.data(), n, p, iw.data(), ww.data());
    const std::string desc = std::string(b.name) + " seed " + std::to_string(37000 + c) + " E " + std::to_string(E) +
                             " k " + std::to_string(k);
    EXPECT(ig == iw) << "softmax top-k ids " << desc;
    expect_close(t, wg, ww, 1e-5, "softmax top-k weights " + desc);
  }
  for (int c = 0; c < 12; ++c) {
    Rng r(38000 + c);
    const int n_group = 1 << r.below(4), per = 2 + static_cast<int>(r.below(12)), E = n_group * per;
    const int topk_group = 1 + static_cast<int>(r.below(n_group));
    const int k = 1 + static_cast<int>(r.below(std::min(topk_group * per, 8)));
    const int64_t n = 1 + r.below(3);
    const auto logits = random_vec(r, n * E, 2.0), bias = random_vec(r, E, 0.3);
    const bs::SigmoidGroupParams p{E,
                                   k,
                                   n_group,
                                   topk_group,
                                   r.below(2) == 1,
                                   static_cast<float>(r.uniform(0.5, 3)),
                                   c % 3 ? bias.data() : nullptr};
    std::vector<int32_t> ig(n * k), iw(n * k);
    std::vector<float> wg(n * k), ww(n * k);
    b.k.route_sigmoid_group(bs::ExecCtx{}, logits.data(), n, p, ig.data(), wg.data());
    ref().route_sigmoid_group(bs::ExecCtx{}, logits.data(), n, p, iw.data(), ww.data());
    std::ostringstream desc;
    desc << b.name << " seed " << 38000 + c << " E " << E << " groups " << n_group << " keep " << topk_group << " k "
         << k;
    EXPECT(ig == iw) << "sigmoid group ids " << desc.str();
    expect_close(t, wg, ww, 1e-5, "sigmoid group weights " + desc.str());
  }
}

// Router, routing, gathered gate/up, SiLU-gate, gathered down, weighted sum against the same
// steps on the reference kernels.
void check_moe_block(T& t, const MoeBlock& run, const std::function<void(const std::string&)>& after) {
  for (int c = 0; c < 6; ++c) {
    Rng r(39700 + c);
    const int group = 32 << r.below(2), bits = r.below(2) ? 8 : 4;
    const int64_t E = 4 + r.below(13), H = group * (1 + r.below(3)), I = group * (1 + r.below(2)), n = 1 + r.below(4);
    const int k = 1 + static_cast<int>(r.below(4));
    const auto router = random_affine(r, 1, E, H, bits, group, bs::DType::BF16);
    const auto gate = random_affine(r, E, I, H, bits, group, bs::DType::BF16),
               up = random_affine(r, E, I, H, bits, group, bs::DType::BF16),
               down = random_affine(r, E, H, I, bits, group, bs::DType::BF16);
    const auto x = random_vec(r, n * H);
    const bs::SoftmaxTopKParams rp{static_cast<int>(E), k, c % 2 == 0};
    std::vector<float> logits(n * E), w(n * k), xs(n * k * H), g(n * k * I), u(g.size()), d(n * k * H);
    std::vector<int32_t> ids(n * k);
    ref().qmatmul(bs::ExecCtx{}, router.m, 0, x.data(), n, logits.data());
    ref().route_softmax_topk(bs::ExecCtx{}, logits.data(), n, rp, ids.data(), w.data());
    for (int64_t i = 0; i < n * k; ++i) std::copy_n(x.begin() + (i / k) * H, H, xs.begin() + i * H);
    ref().gather_matmul(bs::ExecCtx{}, gate.m, ids.data(), xs.data(), n * k, g.data());
    ref().gather_matmul(bs::ExecCtx{}, up.m, ids.data(), xs.data(), n * k, u.data());
    ref().silu_mul(bs::ExecCtx{}, g.data(), u.data(), n * k * I, g.data());
    ref().gather_matmul(bs::ExecCtx{}, down.m, ids.data(), g.data(), n * k, d.data());
    std::vector<float> want(n * H, 0.0f), got(n * H);
    for (int64_t i = 0; i < n * k; ++i) ref().add(bs::ExecCtx{}, d.data() + i * H, w[i], H, want.data() + (i / k) * H);
    run(router.m, gate.m, up.m, down.m, rp, x.data(), n, got.data());
    std::ostringstream desc;
    desc << "moe seed " << 39700 + c << " E " << E << " k " << k << " H " << H << " I " << I << " n " << n;
    expect_close(t, got, want, 1e-5, desc.str());
    if (after) after(desc.str());
  }
}

// A prerouter head against the engine's formula on the reference kernels: linear·f +
// fc2·gelu_erf(fc1·f) with f = [hidden; onehot(cur); onehot(prev)] built on the CPU.
void check_prerouter(T& t, const PrerouterHead& run) {
  for (int c = 0; c < 6; ++c) {
    Rng r(39000 + c);
    const int64_t H = 1 + r.below(70), E = 2 + r.below(40), units = 1 + r.below(20), F = H + 2 * E;
    const int k = 1 + static_cast<int>(r.below(std::min<int64_t>(E, 4)));
    const bool mlp = c % 2 == 0, has_cur = c % 3 != 2, has_prev = c % 3 != 1;
    const auto lin = random_dense(r, 1, E, F, bs::DType::F16), fc1 = random_dense(r, 1, units, F, bs::DType::F16),
               fc2 = random_dense(r, 1, E, units, bs::DType::F16);
    const auto hidden = random_vec(r, H);
    std::vector<int32_t> ids(E);
    for (int64_t e = 0; e < E; ++e) ids[e] = static_cast<int32_t>(e);
    for (int64_t i = E; i > 1; --i) std::swap(ids[i - 1], ids[r.below(i)]);
    const int32_t* cur = has_cur ? ids.data() : nullptr;
    const int32_t* prev = has_prev ? ids.data() + E - k : nullptr;
    std::vector<float> f(F, 0.0f), want(E), h(units), y(E), got(E);
    std::copy(hidden.begin(), hidden.end(), f.begin());
    for (int j = 0; j < k; ++j) {
      if (cur) f[H + cur[j]] = 1.0f;
      if (prev) f[H + E + prev[j]] = 1.0f;
    }
    ref().dense_matmul(bs::ExecCtx{}, lin.m, 0, f.data(), 1, want.data());
    if (mlp) {
      ref().dense_matmul(bs::ExecCtx{}, fc1.m, 0, f.data(), 1, h.data());
      for (float& v : h) v = bs::gelu_erf(v);
      ref().dense_matmul(bs::ExecCtx{}, fc2.m, 0, h.data(), 1, y.data());
      ref().add(bs::ExecCtx{}, y.data(), 1.0f, E, want.data());
    }
    run(lin.m, mlp ? &fc1.m : nullptr, mlp ? &fc2.m : nullptr, hidden.data(), cur, prev, k, got.data());
    expect_close(t, got, want, 1e-5, "prerouter seed " + std::to_string(39000 + c));
  }
}

}  // namespace bt
