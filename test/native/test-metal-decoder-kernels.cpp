// The kernels only the whole-token Metal decoder joins, dispatched as metal-decoder.cpp does on
// the shim (or the system GPU with BRAINSTEM_TEST_METAL=gpu): the residual add joined to RMSNorm
// (and a MoE layer's combine before it), Qwen3's q/k norms with RoPE and the f16 cache store, a
// bias over a chunk's rows, each against the separate dispatches it replaces (bit for bit on the
// shim; within a float's last bits on a GPU) and against the CPU reference kernels; and a prefill
// chunk's routed rows sorted by expert with the grouped product over them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "accel-suite.h"
#include "common/backend.h"
#include "common/dtype.h"
#include "fixtures.h"
#include "metal-shim.h"
#include "metal/metal-encode.h"
#include "metal/params.h"
#include "route-sort-check.h"

namespace {

namespace mt = bs::metal;

// Device buffers filled from host vectors, dispatched in one command list per run().
struct Bench {
  mt::Device& dev;
  std::vector<std::unique_ptr<mt::Buffer>> held;

  template <class T>
  mt::Arg put(const std::vector<T>& v) {
    held.push_back(dev.alloc(std::max<size_t>(v.size() * sizeof(T), 16)));
    std::memcpy(held.back()->contents(), v.data(), v.size() * sizeof(T));
    return {held.back().get(), 0};
  }
  template <class T>
  static std::vector<T> get(const mt::Arg& a, size_t n) {
    std::vector<T> v(n);
    std::memcpy(v.data(), a.buf->contents() + a.offset, n * sizeof(T));
    return v;
  }
  template <class P>
  static mt::Arg params(const P& p) {
    return {nullptr, 0, &p, sizeof p};
  }
  struct Call {
    const char* kernel;
    mt::Grid grid;
    uint32_t threads;
    std::vector<mt::Arg> args;
  };
  void run(const std::vector<Call>& calls) {
    auto c = dev.begin();
    for (const Call& k : calls) c->dispatch(k.kernel, k.grid, k.threads, k.args);
    c->commit_and_wait();
  }
};

// Bit for bit on the shim (the same float operations in the same order); a GPU compiler may
// contract them differently across kernels: within 1e-6 relative there.
void expect_same(bt::T& t, const std::vector<float>& got, const std::vector<float>& want, const std::string& desc) {
  if (!bt::MetalTestDevice::on_gpu()) {
    EXPECT(std::memcmp(got.data(), want.data(), got.size() * 4) == 0) << desc << ": not the separate dispatches' bits";
    return;
  }
  bt::expect_close(t, got, want, 1e-6, desc);
}

}  // namespace

// Seeded rows, widths around the threadgroup's (1, 255, 256, 257, 700, 2048) and routed k of 1-8:
// bs_rmsnorm with its residual (plain, or k routed rows combined, some with a shared expert's rows
// added, gated or not) against bs_add (after bs_moe_combine, the shared rows' bs_sigmoid_mul and
// bs_add) then bs_rmsnorm, and against the CPU
// reference; bs_add_rows (a bias over the rows) against one bs_add per row.
TEST(metal_add_rmsnorm_and_combine_joined_are_the_separate_dispatches) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  for (int c = 0; c < 12; ++c) {
    bt::Rng r(41000 + c);
    const uint32_t rows = 1 + r.below(4), d = std::vector<uint32_t>{1, 31, 255, 256, 257, 700, 2048}[r.below(7)];
    const uint32_t k = c % 2 ? 1 + r.below(8) : 0;  // 0: a plain residual
    const bool shared = k > 0 && c % 4 == 3;        // a shared expert's rows added to the routed ones
    const bool gated = shared && c % 8 == 7;        // … scaled by the sigmoid of their gate logit
    const float eps = 1e-6f;
    const auto x = bt::random_vec(r, rows * d, 3.0), w = bt::random_vec(r, d), sh = bt::random_vec(r, rows * d);
    const auto gate = bt::random_vec(r, rows, 3.0);
    const auto res = bt::random_vec(r, rows * std::max(k, 1u) * d), wts = bt::random_vec(r, rows * std::max(k, 1u));
    const std::string desc = "seed " + std::to_string(41000 + c) + " rows " + std::to_string(rows) + " d " +
                             std::to_string(d) + " k " + std::to_string(k) + (shared ? " shared" : "") +
                             (gated ? " gated" : "");
    Bench b{*use.dev, {}};
    const mt::Arg xj = b.put(x), yj = b.put(x), wv = b.put(w), rv = b.put(res), kv = b.put(wts), shv = b.put(sh);
    const mt::Arg gv = b.put(gate), shs = b.put(sh);
    const mt::RmsNormParams joined{rows, d, eps, 1, k, shared ? 1u : 0u, gated ? 1u : 0u};
    b.run({{"bs_rmsnorm", {rows}, BS_BLOCK, {xj, wv, yj, rv, kv, Bench::params(joined), shv, gv}}});

    const mt::Arg xs = b.put(x), ys = b.put(x), sum = b.put(std::vector<float>(rows * d));
    const mt::RmsNormParams plain{rows, d, eps, 0, 0, 0, 0};
    const mt::GateParams by_row{rows * d, d, 1, 0};
    const mt::ElementwiseParams add{rows * d, 1.0f};
    const mt::CombineParams comb{rows, std::max(k, 1u), d};
    std::vector<Bench::Call> separate;
    if (k > 0)
      separate.push_back(
          {"bs_moe_combine", {mt::ceil_div(d, BS_BLOCK), rows}, BS_BLOCK, {rv, kv, sum, Bench::params(comb)}});
    if (gated)
      separate.push_back(
          {"bs_sigmoid_mul", {mt::ceil_div(rows * d, BS_BLOCK)}, BS_BLOCK, {shs, gv, Bench::params(by_row)}});
    if (shared)
      separate.push_back({"bs_add", {mt::ceil_div(rows * d, BS_BLOCK)}, BS_BLOCK, {shs, sum, Bench::params(add)}});
    separate.push_back(
        {"bs_add", {mt::ceil_div(rows * d, BS_BLOCK)}, BS_BLOCK, {k > 0 ? sum : rv, xs, Bench::params(add)}});
    separate.push_back({"bs_rmsnorm", {rows}, BS_BLOCK, {xs, wv, ys, xs, xs, Bench::params(plain), xs, xs}});
    b.run(separate);
    const auto x_got = Bench::get<float>(xj, rows * d), y_got = Bench::get<float>(yj, rows * d);
    expect_same(t, x_got, Bench::get<float>(xs, rows * d), desc + " residual stream");
    expect_same(t, y_got, Bench::get<float>(ys, rows * d), desc + " norm");

    // The CPU reference: the residual in double, then its rmsnorm.
    std::vector<float> x_ref = x, y_ref(rows * d);
    for (uint32_t row = 0; row < rows; ++row)
      for (uint32_t i = 0; i < d; ++i) {
        double s = res[row * d + i];
        if (k > 0) {
          s = 0.0;
          for (uint32_t j = 0; j < k; ++j) s += static_cast<double>(wts[row * k + j]) * res[(row * k + j) * d + i];
          if (shared) s += sh[row * d + i] / (gated ? 1.0 + std::exp(-static_cast<double>(gate[row])) : 1.0);
        }
        x_ref[row * d + i] = static_cast<float>(x[row * d + i] + s);
      }
    bs::reference_backend().k.rmsnorm(bs::ExecCtx{}, x_ref.data(), w.data(), rows, d, eps, y_ref.data());
    bt::expect_close(t, x_got, x_ref, 1e-5, desc + " residual against double");
    bt::expect_close(t, y_got, y_ref, 2e-5, desc + " norm against the reference");

    const mt::Arg yb = b.put(x), yb2 = b.put(x);
    const mt::BiasParams bias{rows * d, d};
    const mt::ElementwiseParams row_add{d, 1.0f};
    b.run({{"bs_add_rows", {mt::ceil_div(rows * d, BS_BLOCK)}, BS_BLOCK, {wv, yb, Bench::params(bias)}}});
    std::vector<Bench::Call> per_row;
    for (uint32_t i = 0; i < rows; ++i)
      per_row.push_back(
          {"bs_add", {mt::ceil_div(d, BS_BLOCK)}, BS_BLOCK, {wv, {yb2.buf, i * d * 4}, Bench::params(row_add)}});
    b.run(per_row);
    EXPECT(Bench::get<float>(yb, rows * d) == Bench::get<float>(yb2, rows * d)) << desc << ": bias over rows";
  }
}

// Seeded shapes (head widths under, at and over a simdgroup, partial rotation, GQA, several
// tokens at scattered positions, a zero frequency: another axis's pair; every third case without
// the norms, RoPE alone): bs_qk_norm_rope against bs_rmsnorm then bs_rope on q and k, with the store against bs_to_f16
// of the final k rows and the v rows (one dispatch, grid.y 2) from cache row `row` on (rows before it untouched); and
// against the CPU reference.
TEST(metal_qk_norm_rope_is_rmsnorm_then_rope_and_stores_f16_rows) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  for (int c = 0; c < 12; ++c) {
    bt::Rng r(42000 + c);
    const uint32_t hd = std::vector<uint32_t>{16, 48, 64, 80, 128, 256}[r.below(6)];
    const uint32_t rot = std::vector<uint32_t>{hd, hd / 2, 16}[r.below(3)];
    const uint32_t n_q = 1 + r.below(9), n_kv = 1 + r.below(4), n_tok = 1 + r.below(3);
    const bool store = c % 2 == 1, norm = c % 3 != 2;
    const float eps = 1e-6f;
    const double theta = 1e6;
    const auto q = bt::random_vec(r, n_tok * n_q * hd, 2.0), k = bt::random_vec(r, n_tok * n_kv * hd, 2.0);
    const auto qw = bt::random_vec(r, hd), kw = bt::random_vec(r, hd), v_rows = bt::random_vec(r, n_tok * n_kv * hd);
    std::vector<int32_t> pos(n_tok);
    for (int32_t& p : pos) p = static_cast<int32_t>(r.below(400));
    std::vector<float> inv_freq(rot / 2);
    for (uint32_t i = 0; i < rot / 2; ++i) inv_freq[i] = static_cast<float>(std::pow(theta, -2.0 * i / rot));
    const bool skip = c == 4;  // a pair another axis rotates stays as normed
    if (skip) inv_freq[0] = 0.0f;
    const uint32_t row = r.below(4), kv = n_kv * hd, cache = (row + n_tok) * kv;
    const std::string desc = "seed " + std::to_string(42000 + c) + " head_dim " + std::to_string(hd) + " rot " +
                             std::to_string(rot) + " heads " + std::to_string(n_q) + "/" + std::to_string(n_kv) +
                             " tokens " + std::to_string(n_tok) + (store ? " store row " + std::to_string(row) : "") +
                             (norm ? "" : " no norm");
    Bench b{*use.dev, {}};
    const mt::Arg qj = b.put(q), kj = b.put(k), qwv = b.put(qw), kwv = b.put(kw), pv = b.put(pos), fv = b.put(inv_freq);
    const mt::Arg vv = b.put(v_rows), kc = b.put(std::vector<uint16_t>(cache, 0x3c01)),
                  vc = b.put(std::vector<uint16_t>(cache, 0x3c02));
    const mt::Arg kc_at{kc.buf, row * kv * 2}, vc_at{vc.buf, row * kv * 2};
    const mt::QkNormRopeParams p{n_tok, n_q, n_kv, hd, rot, store ? 1u : 0u, eps, norm ? 1u : 0u};
    const uint32_t heads = n_q + n_kv * (store ? 2 : 1);
    b.run({{"bs_qk_norm_rope",
            {mt::ceil_div(heads, BS_MM_SIMDGROUPS), n_tok},
            mt::kMatThreads,
            {qj, kj, qwv, kwv, pv, fv, vv, kc_at, vc_at, Bench::params(p)}}});

    const mt::Arg qs = b.put(q), ks = b.put(k), kc2 = b.put(std::vector<uint16_t>(cache, 0x3c01)),
                  vc2 = b.put(std::vector<uint16_t>(cache, 0x3c02));
    const mt::RmsNormParams nq{n_tok * n_q, hd, eps, 0, 0, 0, 0}, nk{n_tok * n_kv, hd, eps, 0, 0, 0, 0};
    const mt::RopeParams rq{n_tok, n_q, hd, rot}, rk{n_tok, n_kv, hd, rot};
    const mt::ElementwiseParams half{n_tok * kv, 0.0f};
    std::vector<Bench::Call> separate;
    if (norm) {
      separate.push_back({"bs_rmsnorm", {n_tok * n_q}, BS_BLOCK, {qs, qwv, qs, qs, qs, Bench::params(nq), qs, qs}});
      separate.push_back({"bs_rmsnorm", {n_tok * n_kv}, BS_BLOCK, {ks, kwv, ks, ks, ks, Bench::params(nk), ks, ks}});
    }
    separate.push_back(
        {"bs_rope", {mt::ceil_div(n_q * (rot / 2), BS_BLOCK), n_tok}, BS_BLOCK, {qs, pv, fv, Bench::params(rq)}});
    separate.push_back(
        {"bs_rope", {mt::ceil_div(n_kv * (rot / 2), BS_BLOCK), n_tok}, BS_BLOCK, {ks, pv, fv, Bench::params(rk)}});
    if (store) {  // both rows in one dispatch (grid.y 2), as the decoder's store_kv
      separate.push_back({"bs_to_f16",
                          {mt::ceil_div(n_tok * kv, BS_BLOCK), 2},
                          BS_BLOCK,
                          {ks, {kc2.buf, row * kv * 2}, vv, {vc2.buf, row * kv * 2}, Bench::params(half)}});
    }
    b.run(separate);
    const auto q_got = Bench::get<float>(qj, q.size()), k_got = Bench::get<float>(kj, k.size());
    expect_same(t, q_got, Bench::get<float>(qs, q.size()), desc + " q");
    expect_same(t, k_got, Bench::get<float>(ks, k.size()), desc + " k");
    const auto k_cache = Bench::get<uint16_t>(kc, cache), v_cache = Bench::get<uint16_t>(vc, cache);
    if (!bt::MetalTestDevice::on_gpu()) {
      EXPECT(k_cache == Bench::get<uint16_t>(kc2, cache) && v_cache == Bench::get<uint16_t>(vc2, cache))
          << desc << ": the joined f16 store differs";
    }
    bool kept = true;  // rows before `row` (and all rows without a store) as they were
    for (uint32_t i = 0; i < (store ? row * kv : cache); ++i) kept &= k_cache[i] == 0x3c01 && v_cache[i] == 0x3c02;
    EXPECT(kept) << desc << ": cache rows outside the chunk's were written";
    if (store) {
      for (uint32_t i = 0; i < n_tok * kv; ++i)
        EXPECT(k_cache[row * kv + i] == bs::f32_to_f16(k_got[i]) && v_cache[row * kv + i] == bs::f32_to_f16(v_rows[i]))
            << desc << " cache element " << i;
    }

    // The CPU reference: rmsnorm per head, then its RoPE (θ^(−2i/rot) in double).
    std::vector<float> q_ref = q, k_ref = k;
    const bs::Kernels& ref = bs::reference_backend().k;
    if (norm) {
      ref.rmsnorm(bs::ExecCtx{}, q.data(), qw.data(), n_tok * n_q, hd, eps, q_ref.data());
      ref.rmsnorm(bs::ExecCtx{}, k.data(), kw.data(), n_tok * n_kv, hd, eps, k_ref.data());
    }
    if (!skip) {
      ref.rope(bs::ExecCtx{}, q_ref.data(), pos.data(), n_tok, {int(n_q), int(hd), int(rot), theta});
      ref.rope(bs::ExecCtx{}, k_ref.data(), pos.data(), n_tok, {int(n_kv), int(hd), int(rot), theta});
      bt::expect_close(t, q_got, q_ref, 5e-5, desc + " q against the reference");
      bt::expect_close(t, k_got, k_ref, 5e-5, desc + " k against the reference");
    }
  }
}

// A prefill chunk's routed rows sorted by expert (bs_route_sort) over seeded shapes (more experts
// than rows, one expert taking every row, top-k 1 to 8): the order a permutation of the rows
// grouped by expert, the tiles each expert's rows in runs of BS_MM_TOKENS then the rest, back to
// back; then bs_qmatmul's grouped mode (each expert read once per tile) against its gathered
// mode row by row, bit for bit on the shim (a row's sums do not depend on its mode).
TEST(metal_routed_rows_sorted_by_expert_and_grouped_product_match_the_gathered_one) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  constexpr int64_t kTile = BS_MM_TOKENS;
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(43000 + c);
    const int64_t E = std::vector<int64_t>{4, 128, 512, 3}[c % 4], k = 1 + r.below(8), tokens = 2 + r.below(30);
    const int64_t n = tokens * k, tiles = mt::route_tiles_max(n, E);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = c == 3 ? 1 : static_cast<int32_t>(r.below(E));
    const std::string desc = "seed " + std::to_string(43000 + c) + " experts " + std::to_string(E) + " rows " +
                             std::to_string(n) + " (top-k " + std::to_string(k) + ")";
    Bench b{*use.dev, {}};
    const mt::Arg idv = b.put(ids), sorted = b.put(std::vector<int32_t>(1 + 2 * tiles + n, -1));
    const mt::RouteSortParams sp{uint32_t(n), uint32_t(E), uint32_t(tiles)};
    b.run({{"bs_route_sort", {1}, BS_BLOCK, {idv, sorted, Bench::params(sp)}}});
    const auto out = Bench::get<int32_t>(sorted, 1 + 2 * tiles + n);
    const std::vector<int32_t> order(out.begin() + 1 + 2 * tiles, out.end());
    bt::expect_route_sort(t, ids, E, kTile, out[0], out.data() + 1, order, desc);

    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(2);
    const int64_t rows = std::vector<int64_t>{9, 5}[(c / 2) % 2], cols = group * (1 + r.below(2));
    const bt::OwnedMatrix w = bt::random_affine(r, E, rows, cols, bits, group, bs::DType::BF16);
    const auto x = bt::random_vec(r, tokens * cols);  // row of work i reads token row i / k
    const mt::Arg codes = b.put(w.w), sc = b.put(w.scales), bi = b.put(w.biases), xv = b.put(x);
    const mt::Arg yg = b.put(std::vector<float>(n * rows)), yw = b.put(std::vector<float>(n * rows));
    mt::QMatParams p = mt::qparams(w.m, n);
    p.gather = 1, p.x_div = uint32_t(k);
    mt::QMatParams pg = p;
    pg.grouped = uint32_t(1 + 2 * tiles);
    const mt::Grid gg = mt::qmat_grid(pg, uint32_t(tiles)), gw = mt::qmat_grid(p, uint32_t(n));
    b.run({{"bs_qmatmul", gg, mt::kMatThreads, {codes, sc, bi, xv, yg, idv, idv, sorted, xv, Bench::params(pg)}},
           {"bs_qmatmul", gw, mt::kMatThreads, {codes, sc, bi, xv, yw, idv, idv, idv, xv, Bench::params(p)}}});
    expect_same(t, Bench::get<float>(yg, n * rows), Bench::get<float>(yw, n * rows), desc + " grouped product");
  }
}

// bs_qmatmul with BS_MM_ROW_GROUP rows per simdgroup (x read once for them) against one row per
// simdgroup, over seeded shapes (rows that do not fill a group or a threadgroup, 4 and 8 bits,
// groups 32-128): plain with 1-17 tokens, gathered, and grouped tiles; bit for bit on the shim (a
// row's sums are the same; also with codes that are not 8-byte aligned, and gated against
// bs_silu_mul then the product), and the grid choice (qmat_grid) keeping small grids at one row.
TEST(metal_qmatmul_row_groups_are_single_rows_bit_for_bit) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  for (int c = 0; c < 10; ++c) {
    bt::Rng r(44000 + c);
    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(3);
    const int64_t E = 3, rows = std::vector<int64_t>{1, 3, 5, 16, 17, 63, 300}[r.below(7)],
                  cols = group * (1 + r.below(3)), n = 1 + r.below(17);
    const bt::OwnedMatrix w = bt::random_affine(r, E, rows, cols, bits, group, bs::DType::F16);
    const auto x = bt::random_vec(r, n * cols);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    const int64_t tiles = mt::route_tiles_max(n, E);
    const std::string desc = "seed " + std::to_string(44000 + c) + " bits " + std::to_string(bits) + " group " +
                             std::to_string(group) + " [" + std::to_string(rows) + ", " + std::to_string(cols) +
                             "] x " + std::to_string(n);
    Bench b{*use.dev, {}};
    const mt::Arg codes = b.put(w.w), sc = b.put(w.scales), bi = b.put(w.biases), xv = b.put(x), idv = b.put(ids);
    const mt::Arg upv = b.put(bt::random_vec(r, n * cols));
    std::vector<uint8_t> shifted(4, 0);
    shifted.insert(shifted.end(), w.w.begin(), w.w.end());
    const mt::Arg codes4 = b.put(shifted), sorted = b.put(std::vector<int32_t>(1 + 2 * tiles + n));
    const mt::RouteSortParams sp{uint32_t(n), uint32_t(E), uint32_t(tiles)};
    b.run({{"bs_route_sort", {1}, BS_BLOCK, {idv, sorted, Bench::params(sp)}}});
    for (const char* mode : {"plain", "gathered", "grouped"}) {
      mt::QMatParams p = mt::qparams(w.m, n);
      p.mat = 1;
      const bool gather = mode[0] != 'p', grouped = mode[2] == 'o';
      p.gather = gather ? 1 : 0, p.grouped = grouped ? uint32_t(1 + 2 * tiles) : 0;
      const uint32_t tg_y = grouped ? uint32_t(tiles) : gather ? uint32_t(n) : mt::ceil_div(n, BS_MM_TOKENS);
      std::vector<float> got[3];
      for (int v = 0; v < 3; ++v) {
        // One row per simdgroup, then row groups; last the codes 4 bytes into their buffer (two
        // 4-byte loads per pair of words instead of one 8-byte load).
        p.row_group = v == 0 ? 1u : BS_MM_ROW_GROUP, p.w_off = v == 2 ? 4u : 0u;
        const mt::Arg y = b.put(std::vector<float>(n * rows, -7.0f));
        const mt::Grid g{mt::ceil_div(rows, BS_MM_SIMDGROUPS * p.row_group), tg_y};
        b.run({{"bs_qmatmul",
                g,
                mt::kMatThreads,
                {v == 2 ? codes4 : codes, sc, bi, xv, y, idv, idv, sorted, xv, Bench::params(p)}}});
        got[v] = Bench::get<float>(y, n * rows);
      }
      EXPECT(std::find(got[1].begin(), got[1].end(), -7.0f) == got[1].end())
          << desc << " " << mode << ": a row unwritten";
      expect_same(t, got[1], got[0], desc + " " + mode + ": row groups");
      expect_same(t, got[2], got[1], desc + " " + mode + ": codes not 8-byte aligned");
      // Gated (a MoE down projection): x read as SiLU(x)·up equals bs_silu_mul's rows fed to the
      // plain product.
      p.row_group = BS_MM_ROW_GROUP, p.w_off = 0;
      mt::QMatParams pg = p;
      pg.gated = 1;
      const mt::Arg gated = b.put(std::vector<float>(n * cols)), y_sep = b.put(std::vector<float>(n * rows, -7.0f)),
                    y_one = b.put(std::vector<float>(n * rows, -7.0f));
      const mt::ElementwiseParams ep{uint32_t(n * cols), 0.0f};
      const mt::Grid g{mt::ceil_div(rows, BS_MM_SIMDGROUPS * p.row_group), tg_y};
      b.run({{"bs_silu_mul", {mt::ceil_div(n * cols, BS_BLOCK)}, BS_BLOCK, {xv, upv, gated, Bench::params(ep)}},
             {"bs_qmatmul", g, mt::kMatThreads, {codes, sc, bi, gated, y_sep, idv, idv, sorted, xv, Bench::params(p)}},
             {"bs_qmatmul", g, mt::kMatThreads, {codes, sc, bi, xv, y_one, idv, idv, sorted, upv, Bench::params(pg)}}});
      expect_same(t, Bench::get<float>(y_one, n * rows), Bench::get<float>(y_sep, n * rows),
                  desc + " " + mode + ": gated");
    }
  }
  // The grid choice: row groups only where they leave BS_MM_ROW_GROUP_MIN_GROUPS threadgroups.
  bt::Rng r(44100);
  const bt::OwnedMatrix head = bt::random_affine(r, 1, 4096, 64, 4, 64, bs::DType::F16);
  mt::QMatParams big = mt::qparams(head.m, 1), small = mt::qparams(head.m, 1);
  small.rows = 512;
  EXPECT(mt::qmat_grid(big, 1).x == 4096 / (BS_MM_SIMDGROUPS * BS_MM_ROW_GROUP) && big.row_group == BS_MM_ROW_GROUP);
  EXPECT(mt::qmat_grid(small, 1).x == 512 / BS_MM_SIMDGROUPS && small.row_group == 1);
  EXPECT(mt::qmat_grid(small, 8).x == 512 / (BS_MM_SIMDGROUPS * BS_MM_ROW_GROUP) && small.row_group == BS_MM_ROW_GROUP)
      << "8 gathered rows of a 512-row expert matrix: 256 threadgroups";
}

// bs_qmatmul_set (q, k, v or gate, up in one dispatch) against one bs_qmatmul per matrix, over
// seeded shapes (2 or 3 matrices of different rows and bit widths over one x; plain with 1-17
// tokens, some with a bias added in the set against bs_add_rows after; gathered and grouped with
// a shared routing): bit for bit on the shim, every row written.
TEST(metal_qmatmul_set_matches_one_dispatch_per_matrix) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  for (int c = 0; c < 9; ++c) {
    bt::Rng r(45000 + c);
    const int count = 2 + c % 2, group = 32 << r.below(3);
    const int64_t E = 3, cols = group * (1 + r.below(3)), n = 1 + r.below(17), tiles = mt::route_tiles_max(n, E);
    const char* mode = std::vector<const char*>{"plain", "gathered", "grouped"}[c % 3];
    const bool gather = mode[0] != 'p', grouped = mode[2] == 'o';
    const std::string desc = "seed " + std::to_string(45000 + c) + " " + mode + " " + std::to_string(count) +
                             " matrices of " + std::to_string(cols) + " columns x " + std::to_string(n);
    Bench b{*use.dev, {}};
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    const mt::Arg xv = b.put(bt::random_vec(r, n * cols)), idv = b.put(ids);
    const mt::Arg sorted = b.put(std::vector<int32_t>(1 + 2 * tiles + n));
    const mt::RouteSortParams sp{uint32_t(n), uint32_t(E), uint32_t(tiles)};
    b.run({{"bs_route_sort", {1}, BS_BLOCK, {idv, sorted, Bench::params(sp)}}});
    mt::QMatSetParams s{};
    std::vector<bt::OwnedMatrix> w;
    std::vector<mt::Arg> set_args, ys, singles;
    std::vector<int64_t> rows;
    const uint32_t tg_y = grouped ? uint32_t(tiles) : gather ? uint32_t(n) : mt::ceil_div(n, BS_MM_TOKENS);
    std::vector<Bench::Call> calls;
    std::vector<mt::QMatParams> ps(count);
    std::deque<mt::BiasParams> biases;  // bound by address until the run
    for (int i = 0; i < count; ++i) {
      rows.push_back(std::vector<int64_t>{1, 5, 16, 17, 300, 1100}[r.below(6)]);
      w.push_back(bt::random_affine(r, E, rows[i], cols, r.below(2) ? 8 : 4, group, bs::DType::F16));
      mt::QMatParams p = mt::qparams(w[i].m, n);
      p.mat = 2, p.gather = gather ? 1 : 0, p.grouped = grouped ? uint32_t(1 + 2 * tiles) : 0;
      ps[i] = p;
      const bool biased = !gather && r.below(2);  // a plain linear's bias, added in the set
      s.p[i] = p, s.p[i].has_bias = biased ? 1 : 0;
      const mt::Arg codes = b.put(w[i].w), sc = b.put(w[i].scales), bi = b.put(w[i].biases);
      const mt::Arg bias = b.put(bt::random_vec(r, rows[i]));
      ys.push_back(b.put(std::vector<float>(n * rows[i], -7.0f)));
      singles.push_back(b.put(std::vector<float>(n * rows[i], -7.0f)));
      set_args.insert(set_args.end(), {codes, sc, bi, ys.back(), biased ? bias : xv});
      calls.push_back({"bs_qmatmul",
                       mt::qmat_grid(ps[i], tg_y),
                       mt::kMatThreads,
                       {codes, sc, bi, xv, singles.back(), idv, idv, sorted, xv, Bench::params(ps[i])}});
      if (biased) {
        biases.push_back({uint32_t(n * rows[i]), uint32_t(rows[i])});
        calls.push_back({"bs_add_rows",
                         {mt::ceil_div(n * rows[i], BS_BLOCK)},
                         BS_BLOCK,
                         {bias, singles.back(), Bench::params(biases.back())}});
      }
    }
    for (int i = count; i < int(BS_MM_SET); ++i) set_args.insert(set_args.end(), set_args.end() - 5, set_args.end());
    const mt::Grid g = mt::qmat_set_grid(s, count, tg_y);
    set_args.insert(set_args.end(), {xv, idv, idv, sorted, Bench::params(s)});
    calls.push_back({"bs_qmatmul_set", g, mt::kMatThreads, set_args});
    b.run(calls);
    uint32_t groups = 0;
    for (int i = 0; i < count; ++i) {
      EXPECT(s.start[i] == groups && s.p[i].row_group == ps[i].row_group) << desc << ": matrix " << i << "'s grid";
      groups += mt::qmat_grid(ps[i], tg_y).x;
      const auto got = Bench::get<float>(ys[i], n * rows[i]);
      EXPECT(std::find(got.begin(), got.end(), -7.0f) == got.end())
          << desc << ": matrix " << i << " has a row unwritten";
      expect_same(t, got, Bench::get<float>(singles[i], n * rows[i]), desc + ": matrix " + std::to_string(i));
    }
    EXPECT(g.x == groups && g.y == tg_y) << desc << ": the set's grid";
  }
}

// bs_dense_matmul_set (a LoRA step of q, k and v in one dispatch) against one bs_dense_matmul per
// matrix, over seeded shapes (1-3 matrices, each with its own x; rows shorter and longer than
// BS_DENSE_SPLIT_COLS, F32/F16/BF16, 1-17 tokens, accumulating with a scale or not): bit for bit
// on the shim, every row written.
TEST(metal_dense_matmul_set_matches_one_dispatch_per_matrix) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  const bs::DType types[3] = {bs::DType::F32, bs::DType::F16, bs::DType::BF16};
  for (int c = 0; c < 9; ++c) {
    bt::Rng r(46000 + c);
    const int count = 1 + c % 3;
    const int64_t n = 1 + r.below(17);
    const bool accumulate = c % 2 == 1;
    const std::string desc = "seed " + std::to_string(46000 + c) + " " + std::to_string(count) + " matrices x " +
                             std::to_string(n) + (accumulate ? " accumulating" : "");
    Bench b{*use.dev, {}};
    mt::DenseSetParams s{};
    std::vector<mt::DenseParams> ps(count);
    std::vector<mt::Arg> set_args, ys, singles;
    std::vector<int64_t> rows;
    std::vector<Bench::Call> calls;
    for (int i = 0; i < count; ++i) {
      rows.push_back(std::vector<int64_t>{1, 7, 16, 33}[r.below(4)]);
      const int64_t cols = std::vector<int64_t>{8, 40, 255, 256, 700}[r.below(5)];
      const bt::OwnedMatrix w = bt::random_dense(r, 1, rows[i], cols, types[r.below(3)]);
      const auto y0 = bt::random_vec(r, n * rows[i]);
      ps[i] = {uint32_t(rows[i]), uint32_t(cols),       mt::type_code(w.m.dtype),           0, 0,
               uint32_t(n),       accumulate ? 1u : 0u, accumulate ? 0.5f + float(i) : 1.0f};
      s.p[i] = ps[i];
      const mt::Arg wv = b.put(w.w), xv = b.put(bt::random_vec(r, n * cols));
      ys.push_back(b.put(y0));
      singles.push_back(b.put(y0));
      set_args.insert(set_args.end(), {wv, xv, ys.back()});
      calls.push_back({"bs_dense_matmul",
                       {mt::dense_groups(rows[i], cols), mt::ceil_div(n, BS_MM_TOKENS)},
                       mt::kMatThreads,
                       {wv, xv, singles.back(), Bench::params(ps[i])}});
    }
    for (int i = count; i < int(BS_MM_SET); ++i) set_args.insert(set_args.end(), set_args.end() - 3, set_args.end());
    const mt::Grid g = mt::dense_set_grid(s, count, n);
    set_args.push_back(Bench::params(s));
    calls.push_back({"bs_dense_matmul_set", g, mt::kMatThreads, set_args});
    b.run(calls);
    uint32_t groups = 0;
    for (int i = 0; i < count; ++i) {
      EXPECT(s.start[i] == groups) << desc << ": matrix " << i << "'s first threadgroup";
      groups += mt::dense_groups(ps[i].rows, ps[i].cols);
      expect_same(t, Bench::get<float>(ys[i], n * rows[i]), Bench::get<float>(singles[i], n * rows[i]),
                  desc + ": matrix " + std::to_string(i));
    }
    EXPECT(g.x == groups && g.y == mt::ceil_div(n, BS_MM_TOKENS)) << desc << ": the set's grid";
  }
}
