// The op test: every op of every compiled kernel set against the reference kernels on
// seeded random shapes (odd ones included), and the reference itself against a float64
// oracle written from the spec (dequant(), plain double loops, brute-force routing).
// Tolerances are per op and relative to the natural error scale of the result, e.g.
// Σ|w·x| for a dot product. Each failure prints op, backend, seed and shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>

#include "common/backend.h"
#include "cpu/thread-pool.h"
#include "fixtures.h"

namespace {

using bs::Kernels;
using bs::Op;

constexpr int kCases = 24;

// |got - value| ≤ rel · bound elementwise.
struct Oracle {
  std::vector<double> value, bound;
};

using Runner = std::function<void(const Kernels&, const bs::ExecCtx&, float* out)>;

// Fills the stack below the caller with all-ones bytes (NaN as a float), so a kernel that
// reads an uninitialised stack slot sees NaN there rather than whatever an earlier call left.
__attribute__((noinline)) void poison_stack() {
  unsigned char buf[256 * 1024];
  std::memset(buf, 0xff, sizeof buf);
  asm volatile("" : : "r"(buf) : "memory");
}

// `activation_bits`: ExecCtx::activation_bits of the fast kernels' calls (the reference ignores it).
void check_op(bt::T& t, Op op, const bs::WeightMatrix* w, const std::string& desc, const Oracle& o, double rel,
              const Runner& run, int activation_bits = 24) {
  const size_t n = o.value.size();
  std::vector<float> ref(n), threaded(n), got(n);
  run(bs::reference_backend().k, bs::ExecCtx{}, ref.data());
  bs::ThreadPool pool(3);
  run(bs::reference_backend().k, bs::ExecCtx{&pool}, threaded.data());
  EXPECT(std::equal(ref.begin(), ref.end(), threaded.begin()))
      << bs::op_name(op) << " cpu-ref differs with 3 threads, " << desc;
  auto worst = [&](const std::vector<float>& a, const std::vector<double>& b) {
    std::pair<double, size_t> wst{0.0, 0};
    for (size_t i = 0; i < n; ++i) {
      const double e = std::fabs(a[i] - b[i]) / (rel * o.bound[i] + 1e-30);
      if (!(e <= wst.first)) wst = {std::isnan(e) ? INFINITY : e, i};
    }
    return wst;
  };
  const auto [e_ref, i_ref] = worst(ref, o.value);
  EXPECT(e_ref <= 1.0) << bs::op_name(op) << " cpu-ref vs float64 oracle, " << desc << ": element " << i_ref << " got "
                       << ref[i_ref] << " want " << o.value[i_ref] << " (" << e_ref << "× tolerance)";
  const std::vector<double> ref_d(ref.begin(), ref.end());
  std::vector<float> one(n);
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (b == &bs::reference_backend() || !b->usable() || !b->supports(op, w)) continue;
    poison_stack();
    run(b->k, bs::ExecCtx{&pool, activation_bits}, got.data());
    const auto [e, i] = worst(got, ref_d);
    EXPECT(e <= 1.0) << bs::op_name(op) << " " << b->name << " (" << activation_bits << "-bit activations) vs cpu-ref, "
                     << desc << ": element " << i << " got " << got[i] << " want " << ref[i] << " (" << e
                     << "× tolerance)";
    // Thread-count invariance: every output element is computed by one call, whichever
    // thread runs it, so 1 and 3 threads give the same bits.
    poison_stack();
    run(b->k, bs::ExecCtx{nullptr, activation_bits}, one.data());
    EXPECT(std::equal(one.begin(), one.end(), got.begin()))
        << bs::op_name(op) << " " << b->name << " differs between 1 and 3 threads, " << desc;
  }
}

std::string describe(const bs::WeightMatrix& w) {
  std::ostringstream os;
  os << (w.quantised() ? "affine " + std::to_string(w.bits) + "-bit g" + std::to_string(w.group) + " "
                       : std::string("dense "))
     << bs::dtype_name(w.dtype) << " [" << w.n_mats << ", " << w.rows << ", " << w.cols << "]";
  return os.str();
}

bt::OwnedMatrix random_weight(bt::Rng& r, int64_t n_mats, bool quantised, bool odd_cols = true) {
  const bs::DType dts[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
  const bs::DType dt = dts[r.below(3)];
  const int64_t rows_opts[] = {1, 3, 7, 16, 33, 65};
  const int64_t rows = rows_opts[r.below(6)];
  if (quantised) {
    const int group = 32 << r.below(3);
    return bt::random_affine(r, n_mats, rows, group * (1 + r.below(3)), r.below(2) ? 8 : 4, group, dt);
  }
  const int64_t cols_opts[] = {1, 7, 64, 100};
  return bt::random_dense(r, n_mats, rows, odd_cols ? cols_opts[r.below(4)] : 64, dt);
}

// y[i, r] = Σ_c W[mats[i]][r, c] x[i, c] in double, bound Σ|w x|.
Oracle matmul_oracle(const bs::WeightMatrix& w, const std::vector<int32_t>& mats, const std::vector<float>& x) {
  Oracle o;
  for (size_t i = 0; i < mats.size(); ++i) {
    for (int64_t r = 0; r < w.rows; ++r) {
      double v = 0, b = 0;
      for (int64_t c = 0; c < w.cols; ++c) {
        const double p = static_cast<double>(bs::dequant(w, mats[i], r, c)) * x[i * w.cols + c];
        v += p;
        b += std::fabs(p);
      }
      o.value.push_back(v);
      o.bound.push_back(b + 1e-6);
    }
  }
  return o;
}

// A prefill chunk's experts: E matrices of `code_bits` codes (1-40 rows, 1 to max_groups groups
// of 32, 64 or 128 per row) and sorted ids giving expert e a run of min_run..max_run tokens.
struct ExpertRuns {
  bt::OwnedMatrix w;
  std::vector<int32_t> ids;
  std::vector<int64_t> starts{0};  // run e is ids[starts[e], starts[e + 1])
};
ExpertRuns random_expert_runs(bt::Rng& r, int32_t experts, int code_bits, int max_groups, int min_run, int max_run) {
  const int group = 32 << r.below(3);
  const int64_t rows = 1 + r.below(40), cols = group * (1 + r.below(max_groups));
  ExpertRuns e{bt::random_affine(r, experts, rows, cols, code_bits, group, bs::DType::BF16), {}, {0}};
  for (int32_t id = 0; id < experts; ++id) {
    e.ids.insert(e.ids.end(), min_run + r.below(max_run - min_run + 1), id);
    e.starts.push_back(static_cast<int64_t>(e.ids.size()));
  }
  return e;
}

}  // namespace

TEST(op_qmatvec_and_qmatmul) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1000 + c);
    const auto w = random_weight(r, 2, true);
    const int64_t n = std::vector<int64_t>{1, 2, 3, 5, 8}[r.below(5)];
    const int64_t mat = r.below(2);
    const auto x = bt::random_vec(r, n * w.m.cols);
    const std::string desc = "seed " + std::to_string(1000 + c) + " " + describe(w.m) + " n " + std::to_string(n);
    const Oracle o = matmul_oracle(w.m, std::vector<int32_t>(n, static_cast<int32_t>(mat)), x);
    check_op(t, Op::QMatMul, &w.m, desc, o, 1e-4,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatmul(ctx, w.m, mat, x.data(), n, y); });
    const Oracle o1 = matmul_oracle(w.m, {static_cast<int32_t>(mat)}, x);
    for (int activation_bits : {24, 16}) {  // both within the op tolerance
      check_op(
          t, Op::QMatVec, &w.m, desc, o1, 1e-4,
          [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatvec(ctx, w.m, mat, x.data(), y); },
          activation_bits);
    }
  }
}

// The decode kernels take rows in fours (one horizontal reduction for the four where the set
// has it) and a matrix's last rows one by one: a row must give the same bits either way
// (4- and 8-bit codes, case by case).
// W' is W's 5 rows rotated by one, so W's row 4 (alone) is W''s row 0 (in a four), and W's
// rows 0-3 (a four) are W''s rows 1-4 (three in a four, one alone).
TEST(op_qmatvec_row_bits_do_not_depend_on_grouping) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1400 + c);
    const int group = 32 << r.below(3), code_bits = c % 2 ? 8 : 4;
    const auto w = bt::random_affine(r, 1, 5, group * (1 + r.below(8)), code_bits, group, bs::DType::BF16);
    bt::OwnedMatrix rot = bt::random_affine(r, 1, 5, w.m.cols, code_bits, group, bs::DType::BF16);
    const size_t rb = w.m.row_bytes(), sb = w.scales.size() / 5;
    for (int64_t i = 0; i < 5; ++i) {
      const int64_t from = (i + 4) % 5;
      std::copy_n(w.w.begin() + from * rb, rb, rot.w.begin() + i * rb);
      std::copy_n(w.scales.begin() + from * sb, sb, rot.scales.begin() + i * sb);
      std::copy_n(w.biases.begin() + from * sb, sb, rot.biases.begin() + i * sb);
    }
    const auto x = bt::random_vec(r, w.m.cols);
    for (const bs::Backend* b : bs::compiled_backends()) {
      if (!b->usable() || !b->supports(Op::QMatVec, &w.m)) continue;
      for (int bits : {16, 24}) {
        std::vector<float> y(5), yr(5);
        b->k.qmatvec(bs::ExecCtx{nullptr, bits}, w.m, 0, x.data(), y.data());
        b->k.qmatvec(bs::ExecCtx{nullptr, bits}, rot.m, 0, x.data(), yr.data());
        for (int64_t i = 0; i < 5; ++i) {
          EXPECT(std::memcmp(&y[(i + 4) % 5], &yr[i], sizeof(float)) == 0)
              << b->name << " " << bits << "-bit activations, seed " << 1400 + c << " cols " << w.m.cols << " row "
              << (i + 4) % 5 << ": " << y[(i + 4) % 5] << " alone/in a four vs " << yr[i];
        }
      }
    }
  }
}

// Runs shorter than the integer GEMM's minimum take the decode path in blocks of up to four
// tokens sharing each row's unpacked codes: each token's row must give the bits the same set's
// qmatvec gives that token alone (4- and 8-bit codes, partial chunks, rows alone and in fours,
// one-, two- and three-byte activations, every set with an integer decode path). Each
// expert's run is 1-7 tokens.
TEST(op_gather_matmul_token_blocks_match_single_tokens) {
  const std::vector<std::string> int8_sets{"cpu-avx2", "cpu-avx512", "cpu-neon-dotprod", "cpu-neon-i8mm"};
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1450 + c);
    const int code_bits = c % 2 ? 8 : 4;
    auto [w, ids, starts] = random_expert_runs(r, 3, code_bits, 6, 0, 7);
    if (ids.empty()) ids.push_back(1);
    const auto n = static_cast<int64_t>(ids.size());
    const auto x = bt::random_vec(r, n * w.m.cols);
    for (const bs::Backend* b : bs::compiled_backends()) {
      const bool int8 = std::find(int8_sets.begin(), int8_sets.end(), b->name) != int8_sets.end();
      if (!int8 || !b->usable() || !b->supports(Op::GatherMatMul, &w.m)) continue;
      for (int bits : {8, 16, 24}) {
        // 8-bit codes take the integer paths up to two bytes, on cpu-avx2 one (use_ints).
        if (code_bits == 8 && (bits == 24 || (bits == 16 && std::string(b->name) == "cpu-avx2"))) continue;
        const bs::ExecCtx ctx{nullptr, bits};
        std::vector<float> y(n * w.m.rows), one(w.m.rows);
        b->k.gather_matmul(ctx, w.m, ids.data(), x.data(), n, y.data());
        for (int64_t tok = 0; tok < n; ++tok) {
          b->k.qmatvec(ctx, w.m, ids[tok], x.data() + tok * w.m.cols, one.data());
          for (int64_t i = 0; i < w.m.rows; ++i) {
            EXPECT(std::memcmp(&y[tok * w.m.rows + i], &one[i], sizeof(float)) == 0)
                << b->name << " " << bits << "-bit activations, seed " << 1450 + c << " " << describe(w.m) << " n " << n
                << " token " << tok << " row " << i << ": " << std::setprecision(9) << y[tok * w.m.rows + i]
                << " in a run vs " << one[i];
          }
        }
      }
    }
  }
}

// A run's path (integers or floats, decode path or GEMM) follows from its own length, not from
// the runs sharing its call (the exact path gathers a whole layer, the staged path waves of
// experts): each run of a call mixing runs of 1-20 tokens gives the bits of a call of its own,
// on every set, at one-, two- and three-byte activations, with 1 and 3 threads.
TEST(op_gather_matmul_run_bits_do_not_depend_on_other_runs) {
  bs::ThreadPool pool(3);
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1480 + c);
    const auto [w, ids, starts] = random_expert_runs(r, 4, c % 3 ? 4 : 8, 4, 1, 20);
    const auto n = static_cast<int64_t>(ids.size());
    const auto x = bt::random_vec(r, n * w.m.cols);
    for (const bs::Backend* b : bs::compiled_backends()) {
      if (!b->usable() || !b->supports(Op::GatherMatMul, &w.m)) continue;
      for (int bits : {8, 16, 24}) {
        for (bs::ThreadPool* p : {static_cast<bs::ThreadPool*>(nullptr), &pool}) {
          const bs::ExecCtx ctx{p, bits};
          std::vector<float> y(n * w.m.rows);
          b->k.gather_matmul(ctx, w.m, ids.data(), x.data(), n, y.data());
          for (size_t e = 0; e + 1 < starts.size(); ++e) {
            const int64_t t0 = starts[e], nt = starts[e + 1] - t0;
            std::vector<float> alone(nt * w.m.rows);
            b->k.gather_matmul(ctx, w.m, ids.data() + t0, x.data() + t0 * w.m.cols, nt, alone.data());
            EXPECT(std::memcmp(alone.data(), y.data() + t0 * w.m.rows, alone.size() * sizeof(float)) == 0)
                << b->name << " " << bits << "-bit activations, " << (p ? 3 : 1) << " threads, seed " << 1480 + c << " "
                << describe(w.m) << ": the run of expert " << e << " (" << nt
                << " tokens) differs from a call of its own";
          }
        }
      }
    }
  }
}

// The integer decode path scales activations per block of 32 (d = max|x| / (2^20 - 1)): an
// activation 1000× the rest of its row (LLM activations have such outliers) must leave the
// other terms within 1e-4 of their own Σ|w·x| (the outlier's term is left out of the bound).
// One d for the whole row would not (2.5× over at 256 columns, measured). 4- and 8-bit codes.
TEST(op_qmatvec_activation_outlier) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1500 + c);
    const int group = 32 << r.below(3), code_bits = c % 4 < 2 ? 4 : 8;  // both with one outlier and two
    // Widths with a partial last chunk too (split_outliers also runs on the tail's blocks).
    const auto w =
        bt::random_affine(r, 3, 16 + r.below(40), group * (2 + r.below(15)), code_bits, group, bs::DType::BF16);
    auto x = bt::random_vec(r, w.m.cols);
    const int64_t at = r.below(static_cast<uint64_t>(w.m.cols));
    x[at] *= 1000.0f;
    // Every other case a second one (×500) in the same block of 32.
    const int64_t at2 = std::min<int64_t>(w.m.cols - 1, (at & ~int64_t{31}) + ((at + 1 + r.below(31)) & 31));
    const bool two = c % 2 == 1 && at2 != at;
    if (two) x[at2] *= 500.0f;
    // The token alone against matrix 0, and three copies of it gathered over matrices 0, 1, 2
    // (decode's MoE rows: the copies share one quantisation, outliers included).
    std::vector<float> x3;
    for (int i = 0; i < 3; ++i) x3.insert(x3.end(), x.begin(), x.end());
    const std::vector<int32_t> ids{0, 1, 2};
    Oracle o1 = matmul_oracle(w.m, {0}, x), o3 = matmul_oracle(w.m, ids, x3);
    for (int i = 0; i < 3; ++i) {
      for (int64_t row = 0; row < w.m.rows; ++row) {
        const double p = std::fabs(static_cast<double>(bs::dequant(w.m, i, row, at)) * x[at]) +
                         (two ? std::fabs(static_cast<double>(bs::dequant(w.m, i, row, at2)) * x[at2]) : 0.0);
        if (i == 0) o1.bound[row] -= p;
        o3.bound[i * w.m.rows + row] -= p;
      }
    }
    const std::string desc = "seed " + std::to_string(1500 + c) + " " + describe(w.m) + " outlier at " +
                             std::to_string(at) + (two ? " and " + std::to_string(at2) : "");
    // Two bytes (the default) hold it only with the outliers split off their block
    // (split_outliers; up to ~19× the bound without).
    for (int activation_bits : {24, 16}) {
      check_op(
          t, Op::QMatVec, &w.m, desc, o1, 1e-4,
          [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatvec(ctx, w.m, 0, x.data(), y); },
          activation_bits);
      check_op(
          t, Op::GatherMatMul, &w.m, desc + " gathered", o3, 1e-4,
          [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
            k.gather_matmul(ctx, w.m, ids.data(), x3.data(), 3, y);
          },
          activation_bits);
    }
  }
}

// One-byte activations (activation_bits 8, a Q8 dot product): each activation is off by at
// most half a step of its block of 32, d = max|x| / 127, so a row is within
// 0.5/127 · Σ_c |scale·code_c| · max|x| over c's block of the exact value (the bound checked,
// with 5% slack for float rounding); plain and gathered, decode shapes and odd widths, and
// runs of 4-9 tokens per matrix (the integer prefill GEMM where a set has one); 4- and 8-bit codes.
TEST(op_qmatvec_8bit_activations) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1800 + c);
    const int group = 32 << r.below(3), code_bits = c % 2 ? 8 : 4;
    const auto w =
        bt::random_affine(r, 3, 1 + r.below(70), group * (1 + r.below(12)), code_bits, group, bs::DType::BF16);
    auto x = bt::random_vec(r, w.m.cols);
    if (c % 3 == 0) x[r.below(static_cast<uint64_t>(w.m.cols))] *= 100.0f;  // an outlier: only its block loses bits
    std::vector<float> x3;
    for (int i = 0; i < 3; ++i) x3.insert(x3.end(), x.begin(), x.end());
    const std::vector<int32_t> ids{0, 1, 2};
    // Token i (x + i·cols) against W[mats[i]].
    auto step_bound = [&](Oracle o, const std::vector<int32_t>& mats, const std::vector<float>& xs) {
      for (size_t i = 0; i < mats.size(); ++i) {
        const float* xi = xs.data() + i * w.m.cols;
        for (int64_t row = 0; row < w.m.rows; ++row) {
          double b = 0;
          for (int64_t col = 0; col < w.m.cols; ++col) {
            float m = 0;
            for (int64_t e = col / 32 * 32; e < std::min<int64_t>(w.m.cols, col / 32 * 32 + 32); ++e) {
              m = std::max(m, std::fabs(xi[e]));
            }
            // The step multiplies scale·code = w - bias, and random_affine's |bias| ≤ 0.1.
            b += (std::fabs(static_cast<double>(bs::dequant(w.m, mats[i], row, col))) + 0.1) * m;
          }
          o.bound[i * w.m.rows + row] = b * 1.05 / 254.0 / 1e-4 + 1e-6;  // rel 1e-4 below: the bound is the step
        }
      }
      return o;
    };
    auto bounded = [&](const std::vector<int32_t>& mats, const std::vector<float>& xs) {
      return step_bound(matmul_oracle(w.m, mats, xs), mats, xs);
    };
    const std::string desc = "seed " + std::to_string(1800 + c) + " " + describe(w.m) + " 8-bit activations";
    check_op(
        t, Op::QMatVec, &w.m, desc, bounded({1}, x), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatvec(ctx, w.m, 1, x.data(), y); }, 8);
    check_op(
        t, Op::GatherMatMul, &w.m, desc + " gathered", bounded(ids, x3), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
          k.gather_matmul(ctx, w.m, ids.data(), x3.data(), 3, y);
        },
        8);
    // Runs: n tokens of their own against W[2], then gathered as runs of 4-6 per matrix.
    const int64_t n = 4 + r.below(6);
    const auto xn = bt::random_vec(r, n * w.m.cols);
    check_op(
        t, Op::QMatMul, &w.m, desc + " " + std::to_string(n) + " tokens",
        bounded(std::vector<int32_t>(static_cast<size_t>(n), 2), xn), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatmul(ctx, w.m, 2, xn.data(), n, y); }, 8);
    std::vector<int32_t> runs;
    for (int32_t e : {2, 0, 1}) runs.insert(runs.end(), static_cast<size_t>(4 + r.below(3)), e);
    const auto xr = bt::random_vec(r, static_cast<int64_t>(runs.size()) * w.m.cols);
    check_op(
        t, Op::GatherMatMul, &w.m, desc + " runs", bounded(runs, xr), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
          k.gather_matmul(ctx, w.m, runs.data(), xr.data(), static_cast<int64_t>(runs.size()), y);
        },
        8);
  }
}

// Every activation at its block's largest magnitude (±m, m spread over 2^-20..2^20): the
// integer path scales m to qmax, and float rounding must not carry Q to 2^23 (or 2^15), where
// the signed top byte would wrap to -128 and flip the block's sum (or, for 8-bit codes' signed
// digits, carry Q past 127·257).
TEST(op_qmatvec_block_maxima) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1600 + c);
    const int code_bits = c % 2 ? 8 : 4;
    const auto w =
        bt::random_affine(r, 1, 8 + r.below(24), 256 << r.below(3), code_bits, 32 << r.below(3), bs::DType::BF16);
    std::vector<float> x(static_cast<size_t>(w.m.cols));
    for (size_t b = 0; b < x.size(); b += 32) {
      const float m =
          std::ldexp(1.0f + static_cast<float>(r.below(1 << 20)) / float(1 << 20), static_cast<int>(r.below(41)) - 20);
      for (size_t i = b; i < b + 32 && i < x.size(); ++i) x[i] = r.below(2) ? m : -m;
    }
    const Oracle o = matmul_oracle(w.m, {0}, x);
    const std::string desc = "seed " + std::to_string(1600 + c) + " " + describe(w.m) + " block maxima";
    for (int activation_bits : {24, 16}) {
      check_op(
          t, Op::QMatVec, &w.m, desc, o, 1e-4,
          [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatvec(ctx, w.m, 0, x.data(), y); },
          activation_bits);
    }
  }
}

// The prefill's integer GEMM (fast-int-gemm.h: two-byte activations here, one-byte ones in
// op_qmatvec_8bit_activations; runs of ≥ 8 tokens, 4- and 8-bit codes, L rows per tile; cpu-avx512
// and cpu-neon-dotprod, while cpu-avx2 runs these cases on its float GEMM): random shapes
// with partial row tiles, tail chunks, every group, runs long and short in one gather, and
// an activation 1000× its block in some tokens (split off and added back per row; its term
// is left out of the bound). Sets this CPU cannot run are reported as skipped by main, by
// name and reason.
TEST(op_qmatmul_integer_gemm) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1700 + c);
    const int group = 32 << r.below(3), code_bits = c % 2 ? 8 : 4;
    const int64_t rows = std::vector<int64_t>{1, 7, 8, 9, 17, 33, 65}[r.below(7)];
    const auto w = bt::random_affine(r, 3, rows, group * (1 + r.below(5)), code_bits, group, bs::DType::BF16);
    const int64_t n = 4 + r.below(18);
    auto x = bt::random_vec(r, n * w.m.cols);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(3));
    std::sort(ids.begin(), ids.end());
    std::vector<int64_t> outliers;
    for (int64_t t = 0; t < n; t += 1 + r.below(5)) {
      outliers.push_back(t * w.m.cols + r.below(static_cast<uint64_t>(w.m.cols)));
      x[outliers.back()] *= 1000.0f;
    }
    std::ostringstream desc;
    desc << "seed " << 1700 + c << " " << describe(w.m) << " n " << n << " ids";
    for (int32_t id : ids) desc << " " << id;
    desc << " outliers at";
    for (int64_t e : outliers) desc << " " << e;
    auto oracle = [&](const std::vector<int32_t>& mats) {
      Oracle o = matmul_oracle(w.m, mats, x);
      for (int64_t e : outliers) {
        const int64_t t = e / w.m.cols;
        for (int64_t row = 0; row < w.m.rows; ++row) {
          o.bound[t * w.m.rows + row] -= std::fabs(double(bs::dequant(w.m, mats[t], row, e % w.m.cols)) * x[e]);
        }
      }
      return o;
    };
    check_op(
        t, Op::QMatMul, &w.m, desc.str(), oracle(std::vector<int32_t>(n, 1)), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatmul(ctx, w.m, 1, x.data(), n, y); }, 16);
    check_op(
        t, Op::GatherMatMul, &w.m, desc.str() + " gathered", oracle(ids), 1e-4,
        [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
          k.gather_matmul(ctx, w.m, ids.data(), x.data(), n, y);
        },
        16);
  }
}

// Rows equal to earlier, non-adjacent ones (the MoE block's copies of a token after the sort
// by expert) are laid out once and copied: each must still meet its own token's oracle, on
// every path (float GEMM at 24 bits, the integer GEMM at 16 and 8, decode-sized runs).
TEST(op_gather_matmul_repeated_rows) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(1900 + c);
    const int group = 32 << r.below(3), code_bits = c % 2 ? 8 : 4;
    const auto w =
        bt::random_affine(r, 3, 1 + r.below(40), group * (1 + r.below(6)), code_bits, group, bs::DType::BF16);
    const int64_t tokens = 2 + r.below(4), n = 6 + r.below(20);
    const auto distinct = bt::random_vec(r, tokens * w.m.cols);
    std::vector<float> x;
    std::vector<int32_t> ids(static_cast<size_t>(n));
    std::ostringstream desc;
    desc << "seed " << 1900 + c << " " << describe(w.m) << " rows of tokens";
    for (int64_t i = 0; i < n; ++i) {
      const int64_t tok = r.below(static_cast<uint64_t>(tokens));
      x.insert(x.end(), distinct.begin() + tok * w.m.cols, distinct.begin() + (tok + 1) * w.m.cols);
      ids[static_cast<size_t>(i)] = static_cast<int32_t>(i * 3 / n);  // three runs, sorted
      desc << " " << tok;
    }
    const Oracle o = matmul_oracle(w.m, ids, x);
    for (int activation_bits : {24, 16}) {
      check_op(
          t, Op::GatherMatMul, &w.m, desc.str(), o, 1e-4,
          [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
            k.gather_matmul(ctx, w.m, ids.data(), x.data(), n, y);
          },
          activation_bits);
    }
  }
}

namespace {

// n tokens, token t all t + 1, against W[0] with every usable set and two- and one-byte
// activations: each row of token t must be per_token·(t + 1) (the by-hand cases below). A
// token's equal activations are its block maximum: Q = qmax exactly with two bytes or one.
void check_by_hand(bt::T& t, const bs::WeightMatrix& w, int64_t n, float per_token) {
  std::vector<float> x(n * w.cols);
  for (int64_t i = 0; i < n * w.cols; ++i) x[i] = static_cast<float>(i / w.cols + 1);
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (!b->usable()) continue;
    for (int bits : {16, 8}) {
      std::vector<float> y(n * w.rows);
      b->k.qmatmul(bs::ExecCtx{nullptr, bits}, w, 0, x.data(), n, y.data());
      for (int64_t i = 0; i < n * w.rows; ++i) {
        const float want = per_token * static_cast<float>(i / w.rows + 1);
        EXPECT(std::fabs(y[i] - want) <= 1e-5f * want)
            << b->name << " " << bits << "-bit activations, " << n << " tokens: token " << i / w.rows << " row "
            << i % w.rows << " got " << y[i];
      }
    }
  }
}

}  // namespace

// By hand: code (r + c) mod 16, scale 1, bias 1/2, 64 columns and token t all t + 1, so row r
// of token t is (t + 1)·(4·(0 + … + 15) + 64/2) = 512·(t + 1) for every row; with two-byte
// and one-byte activations.
TEST(op_qmatmul_integer_gemm_by_hand) {
  bt::Rng r(1);
  auto w = bt::random_affine(r, 1, 9, 64, 4, 64, bs::DType::BF16);
  for (int64_t row = 0; row < 9; ++row) {
    for (int64_t c = 0; c < 64; c += 2) {
      w.w[row * 32 + c / 2] = static_cast<uint8_t>(((row + c) % 16) | (((row + c + 1) % 16) << 4));
    }
    bt::store_float(w.scales.data(), bs::DType::BF16, row, 1.0f);
    bt::store_float(w.biases.data(), bs::DType::BF16, row, 0.5f);
  }
  check_by_hand(t, w.m, 6, 512.0f);
}

// By hand, 8-bit codes: code 2·((r + c) mod 96) + 63 (both nibbles vary), scale 1, bias 1/2,
// 96 columns (three groups of 32: a partial last chunk for 16 lanes), 17 rows (a partial tile)
// and token t all t + 1, so row r of token t is (t + 1)·(2·(0 + … + 95) + 96·63 + 96/2) =
// 15216·(t + 1) for every row; six tokens (the integer GEMM) and one (decode), two-byte and
// one-byte activations.
TEST(op_qmatmul_8bit_codes_by_hand) {
  bt::Rng r(2);
  auto w = bt::random_affine(r, 1, 17, 96, 8, 32, bs::DType::BF16);
  for (int64_t row = 0; row < 17; ++row) {
    for (int64_t c = 0; c < 96; ++c) w.w[row * 96 + c] = static_cast<uint8_t>(2 * ((row + c) % 96) + 63);
    for (int64_t g = 0; g < 3; ++g) {
      bt::store_float(w.scales.data(), bs::DType::BF16, row * 3 + g, 1.0f);
      bt::store_float(w.biases.data(), bs::DType::BF16, row * 3 + g, 0.5f);
    }
  }
  for (const int64_t n : {6, 1}) check_by_hand(t, w.m, n, 15216.0f);
}

TEST(op_dense_matmul) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(2000 + c);
    const auto w = random_weight(r, 1, false);
    const int64_t n = 1 + r.below(6);
    const auto x = bt::random_vec(r, n * w.m.cols);
    const Oracle o = matmul_oracle(w.m, std::vector<int32_t>(n, 0), x);
    check_op(t, Op::DenseMatMul, &w.m, "seed " + std::to_string(2000 + c) + " " + describe(w.m), o, 1e-4,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.dense_matmul(ctx, w.m, 0, x.data(), n, y); });
  }
}

TEST(op_gather_matmul) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(3000 + c);
    const int64_t E = 1 + r.below(9);
    const auto w = random_weight(r, E, r.below(4) != 0);
    const int64_t m = 1 + r.below(12);
    std::vector<int32_t> ids(m);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    if (r.below(2)) std::sort(ids.begin(), ids.end());  // grouped, as the MoE block passes them
    const auto x = bt::random_vec(r, m * w.m.cols);
    const Oracle o = matmul_oracle(w.m, ids, x);
    check_op(t, Op::GatherMatMul, &w.m,
             "seed " + std::to_string(3000 + c) + " " + describe(w.m) + " m " + std::to_string(m), o, 1e-4,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
               k.gather_matmul(ctx, w.m, ids.data(), x.data(), m, y);
             });
  }
}

// gather_matmul_multi, the fused gate/up and q/k/v call: against the reference within the
// gather's tolerance, and bit for bit what separate gather_matmul calls of the same kernel set
// give (with 1 and 3 threads). Matrices alike (one layout of the activations) or of up to four
// (bits, group) layouts (a third is split off), 1 to 6 of them (past kMaxMulti: split), decode
// (one token per expert) and runs of tokens.
TEST(op_gather_matmul_multi) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(3500 + c);
    const int64_t E = 1 + r.below(6), m = c % 2 ? 1 + r.below(10) : 1 + r.below(3);
    const int count = 1 + static_cast<int>(r.below(6));
    const bool alike = r.below(3) != 0;
    const int group = 32 << r.below(3), bits = r.below(4) ? 4 : 8;
    const int64_t cols = group * (1 + r.below(4));
    std::vector<bt::OwnedMatrix> ws;
    for (int j = 0; j < count; ++j) {
      const int64_t rows = std::vector<int64_t>{1, 7, 16, 33, 130}[r.below(5)];
      int g = group, b = bits;
      if (!alike && j > 0) {
        do g = 32 << r.below(3);
        while (cols % g != 0);
        b = r.below(2) ? 8 : 4;
      }
      ws.push_back(bt::random_affine(r, E, rows, cols, b, g, j % 2 ? bs::DType::F16 : bs::DType::BF16));
    }
    std::vector<int32_t> ids(m);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    std::sort(ids.begin(), ids.end());
    const auto x = bt::random_vec(r, m * cols);
    std::vector<const bs::WeightMatrix*> wp;
    size_t total = 0;
    std::vector<size_t> at;
    for (const auto& w : ws) {
      wp.push_back(&w.m);
      at.push_back(total);
      total += static_cast<size_t>(m * w.m.rows);
    }
    std::ostringstream desc;
    desc << "seed " << 3500 + c << " " << count << " matrices" << (alike ? " alike" : "") << ", first "
         << describe(ws[0].m) << ", m " << m;
    auto multi = [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
      std::vector<float*> ys;
      for (size_t j = 0; j < ws.size(); ++j) ys.push_back(y + at[j]);
      // A set without the fused call (cuda, metal) runs one gather per matrix, as linear.cpp does.
      if (!k.gather_matmul_multi) {
        for (size_t j = 0; j < ws.size(); ++j) k.gather_matmul(ctx, ws[j].m, ids.data(), x.data(), m, ys[j]);
        return;
      }
      k.gather_matmul_multi(ctx, wp.data(), count, ids.data(), x.data(), m, ys.data());
    };
    Oracle o;
    for (const auto& w : ws) {
      const Oracle oj = matmul_oracle(w.m, ids, x);
      o.value.insert(o.value.end(), oj.value.begin(), oj.value.end());
      o.bound.insert(o.bound.end(), oj.bound.begin(), oj.bound.end());
    }
    bool all = true;
    for (const auto& w : ws) all = all && bs::reference_backend().supports(Op::GatherMatMul, &w.m);
    EXPECT(all) << desc.str();
    std::vector<float> fused(total), separate(total);
    bs::ThreadPool pool(3);
    for (const bs::Backend* b : bs::compiled_backends()) {
      if (!b->usable() || !b->k.gather_matmul_multi) continue;
      bool supported = true;
      for (const auto& w : ws) supported = supported && b->supports(Op::GatherMatMul, &w.m);
      if (!supported) continue;
      for (bs::ThreadPool* p : {static_cast<bs::ThreadPool*>(nullptr), &pool}) {
        const bs::ExecCtx ctx{p, 16};
        multi(b->k, ctx, fused.data());
        for (size_t j = 0; j < ws.size(); ++j) {
          b->k.gather_matmul(ctx, ws[j].m, ids.data(), x.data(), m, separate.data() + at[j]);
        }
        EXPECT(std::memcmp(fused.data(), separate.data(), total * 4) == 0)
            << b->name << " fused differs from separate gathers, " << desc.str() << (p ? ", 3 threads" : "");
      }
    }
    check_op(t, Op::GatherMatMul, wp[0], desc.str(), o, 1e-4, multi, 16);
  }
}

// Decode- and prefill-sized shapes: many rows split over threads, rows long enough for the
// prefetch and several chunks, a tail chunk (cols % 64 == 32), every group and both widths;
// gathers with one token per expert (the integer decode path) and with runs of tokens.
TEST(op_matmul_large_shapes) {
  int c = 0;
  for (int bits : {4, 8}) {
    for (int group : {32, 64, 128}) {
      bt::Rng r(11000 + c++);
      const int64_t cols = group == 32 ? 1056 : 1024, rows = 300 + r.below(40);
      const auto w = bt::random_affine(r, 6, rows, cols, bits, group, bs::DType::BF16);
      for (int64_t n : {1, 5}) {
        const auto x = bt::random_vec(r, n * cols);
        const std::string desc =
            "seed " + std::to_string(11000 + c - 1) + " " + describe(w.m) + " n " + std::to_string(n);
        check_op(t, Op::QMatMul, &w.m, desc, matmul_oracle(w.m, std::vector<int32_t>(n, 3), x), 1e-4,
                 [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.qmatmul(ctx, w.m, 3, x.data(), n, y); });
      }
      for (const std::vector<int32_t>& ids :
           {std::vector<int32_t>{0, 2, 3, 5}, std::vector<int32_t>{1, 1, 1, 4, 4, 5, 5, 5, 5}}) {
        const auto x = bt::random_vec(r, static_cast<int64_t>(ids.size()) * cols);
        const std::string desc =
            "seed " + std::to_string(11000 + c - 1) + " " + describe(w.m) + " gather of " + std::to_string(ids.size());
        const Oracle o = matmul_oracle(w.m, ids, x);
        for (int activation_bits : {24, 16}) {
          check_op(
              t, Op::GatherMatMul, &w.m, desc, o, 1e-4,
              [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
                k.gather_matmul(ctx, w.m, ids.data(), x.data(), static_cast<int64_t>(ids.size()), y);
              },
              activation_bits);
        }
      }
    }
  }
}

TEST(op_embed) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(4000 + c);
    const auto w = random_weight(r, 1, r.below(3) != 0);
    const int64_t n = 1 + r.below(5);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(w.m.rows));
    Oracle o;
    for (int32_t id : ids) {
      for (int64_t col = 0; col < w.m.cols; ++col) {
        o.value.push_back(bs::dequant(w.m, 0, id, col));
        o.bound.push_back(std::fabs(o.value.back()) + 1e-6);
      }
    }
    check_op(t, Op::Embed, &w.m, "seed " + std::to_string(4000 + c) + " " + describe(w.m), o, 1e-6,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.embed(ctx, w.m, ids.data(), n, y); });
  }
}

TEST(op_rmsnorm) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(5000 + c);
    const int64_t rows = 1 + r.below(6), d = 1 + r.below(200);
    const float eps = static_cast<float>(std::pow(10.0, -r.uniform(1, 7)));
    const auto x = bt::random_vec(r, rows * d, r.uniform(0.01, 100)), w = bt::random_vec(r, d);
    Oracle o;
    for (int64_t i = 0; i < rows; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < d; ++j) ss += static_cast<double>(x[i * d + j]) * x[i * d + j];
      const double inv = 1 / std::sqrt(ss / d + eps);
      for (int64_t j = 0; j < d; ++j) {
        o.value.push_back(x[i * d + j] * inv * w[j]);
        o.bound.push_back(std::fabs(o.value.back()) + 1e-6);
      }
    }
    check_op(t, Op::RmsNorm, nullptr,
             "seed " + std::to_string(5000 + c) + " rows " + std::to_string(rows) + " d " + std::to_string(d), o, 1e-5,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
               k.rmsnorm(ctx, x.data(), w.data(), rows, d, eps, y);
             });
  }
}

TEST(op_rope) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(6000 + c);
    const int heads = 1 + static_cast<int>(r.below(5)), hd = 2 * (1 + static_cast<int>(r.below(40)));
    const int rot = r.below(2) ? hd : 2 * (1 + static_cast<int>(r.below(hd / 2)));
    const bs::RopeParams p{heads, hd, rot, r.uniform(1e3, 1e6)};
    const int64_t n = 1 + r.below(6);
    std::vector<int32_t> pos(n);
    for (int32_t& q : pos) q = static_cast<int32_t>(r.below(40000));
    const auto x = bt::random_vec(r, n * heads * hd);
    Oracle o;
    o.value.assign(x.begin(), x.end());
    o.bound.assign(x.size(), 0.0);
    for (int64_t t2 = 0; t2 < n; ++t2) {
      for (int h = 0; h < heads; ++h) {
        const int64_t base = (t2 * heads + h) * hd;
        for (int i = 0; i < hd; ++i) o.bound[base + i] = std::fabs(x[base + i]) + 1e-6;
        for (int i = 0; i < rot / 2; ++i) {
          const double a = pos[t2] * std::pow(p.theta, -2.0 * i / rot);
          const double x1 = x[base + i], x2 = x[base + i + rot / 2];
          o.value[base + i] = x1 * std::cos(a) - x2 * std::sin(a);
          o.value[base + i + rot / 2] = x2 * std::cos(a) + x1 * std::sin(a);
          o.bound[base + i] = o.bound[base + i + rot / 2] = std::hypot(x1, x2) + 1e-6;
        }
      }
    }
    std::ostringstream desc;
    desc << "seed " << 6000 + c << " heads " << heads << " head_dim " << hd << " rot " << rot << " n " << n;
    check_op(t, Op::Rope, nullptr, desc.str(), o, 1e-5, [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
      std::copy(x.begin(), x.end(), y);
      k.rope(ctx, y, pos.data(), n, p);
    });
  }
}

TEST(op_attention_decode_and_prefill) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(7000 + c);
    const int kv = 1 + static_cast<int>(r.below(3)), group = c % 4 == 3 ? 3 : 1 << r.below(4);
    // Half the cases at head dims that are whole vectors (the register-tiled value pass), half odd.
    const int hd = c % 4 < 2 ? 16 * (1 + static_cast<int>(r.below(8))) : 1 + static_cast<int>(r.below(70));
    const bs::AttentionParams p{kv * group, kv, hd, static_cast<float>(1 / std::sqrt(double(hd))), c % 2 == 1};
    // Some contexts run past one block of 128 keys (the fast kernels' online softmax).
    const int64_t pos0 = c % 3 == 2 ? 120 + r.below(200) : r.below(40), n = r.below(2) ? 1 : 1 + r.below(9);
    const int64_t keys = pos0 + n;
    const auto q = bt::random_vec(r, n * p.n_q_heads * hd, 2.0);
    auto kc = bt::random_vec(r, keys * kv * hd, 2.0), vc = bt::random_vec(r, keys * kv * hd);
    // Every other case keeps the caches in half precision: the oracle sees the rounded values.
    const bool f16 = c % 2 == 1;
    std::vector<uint16_t> kh(kc.size()), vh(vc.size());
    if (f16) {
      for (size_t i = 0; i < kc.size(); ++i) kc[i] = bs::f16_to_f32(kh[i] = bs::f32_to_f16(kc[i]));
      for (size_t i = 0; i < vc.size(); ++i) vc[i] = bs::f16_to_f32(vh[i] = bs::f32_to_f16(vc[i]));
    }
    Oracle o;
    for (int64_t t2 = 0; t2 < n; ++t2) {
      for (int h = 0; h < p.n_q_heads; ++h) {
        const int g = h / group;
        std::vector<double> s(pos0 + t2 + 1);
        double mx = -INFINITY, sum = 0, vmax = 0;
        for (size_t j = 0; j < s.size(); ++j) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += double(q[(t2 * p.n_q_heads + h) * hd + i]) * kc[(j * kv + g) * hd + i];
          s[j] = d * p.scale;
          mx = std::max(mx, s[j]);
        }
        for (double& v : s) sum += (v = std::exp(v - mx));
        for (int i = 0; i < hd; ++i) {
          double acc = 0;
          for (size_t j = 0; j < s.size(); ++j) {
            acc += s[j] / sum * vc[(j * kv + g) * hd + i];
            vmax = std::max(vmax, std::fabs(double(vc[(j * kv + g) * hd + i])));
          }
          o.value.push_back(acc);
        }
        for (int i = 0; i < hd; ++i) o.bound.push_back(vmax + 1e-6);
      }
    }
    std::ostringstream desc;
    desc << "seed " << 7000 + c << " q_heads " << p.n_q_heads << " kv_heads " << kv << " head_dim " << hd << " pos0 "
         << pos0 << " n " << n << (f16 ? " f16 cache" : " f32 cache");
    check_op(t, Op::Attention, nullptr, desc.str(), o, 1e-5, [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
      if (f16) {
        k.attention(ctx, q.data(), kh.data(), vh.data(), pos0, n, p, y);
      } else {
        k.attention(ctx, q.data(), kc.data(), vc.data(), pos0, n, p, y);
      }
    });
  }
}

// A prefill call attends its tokens in tiles (several tokens share each K/V row): every token's
// output must be bit for bit what a call with that token alone gives, whatever the tile.
TEST(op_attention_prefill_tiles_equal_tokens_alone) {
  bs::ThreadPool pool(2);
  for (int c = 0; c < 6; ++c) {
    bt::Rng r(7100 + c);
    const int kv = 1 + static_cast<int>(r.below(2)), group = c % 3 == 2 ? 3 : 1 << r.below(3);
    const int hd = c % 2 == 0 ? 64 : 8 * (1 + static_cast<int>(r.below(6))) + (c == 5 ? 3 : 0);
    const bs::AttentionParams p{kv * group, kv, hd, 0.125f, c % 2 == 1};
    // Tiles that cross the fast kernels' 128-key blocks.
    const int64_t pos0 = 90 + r.below(60), n = 20 + r.below(40), keys = pos0 + n;
    const auto q = bt::random_vec(r, n * p.n_q_heads * hd, 2.0);
    const auto kc = bt::random_vec(r, keys * kv * hd, 2.0), vc = bt::random_vec(r, keys * kv * hd);
    std::vector<uint16_t> kh(kc.size()), vh(vc.size());
    for (size_t i = 0; i < kc.size(); ++i) kh[i] = bs::f32_to_f16(kc[i]);
    for (size_t i = 0; i < vc.size(); ++i) vh[i] = bs::f32_to_f16(vc[i]);
    const void* k = p.kv_f16 ? static_cast<const void*>(kh.data()) : kc.data();
    const void* v = p.kv_f16 ? static_cast<const void*>(vh.data()) : vc.data();
    const int64_t row = int64_t(p.n_q_heads) * hd;
    for (const bs::Backend* b : bs::compiled_backends()) {
      if (b == &bs::reference_backend() || !b->usable() || !b->supports(Op::Attention, nullptr)) continue;
      for (const bs::ExecCtx ctx : {bs::ExecCtx{}, bs::ExecCtx{&pool}}) {
        std::vector<float> all(n * row), alone(n * row);
        b->k.attention(ctx, q.data(), k, v, pos0, n, p, all.data());
        for (int64_t t2 = 0; t2 < n; ++t2) {
          b->k.attention(ctx, q.data() + t2 * row, k, v, pos0 + t2, 1, p, alone.data() + t2 * row);
        }
        for (int64_t i = 0; i < n * row; ++i) {
          if (all[i] == alone[i]) continue;
          EXPECT(false) << b->name << " token " << i / row << " element " << i % row << ": " << all[i]
                        << " in one call, " << alone[i] << " alone; seed " << 7100 + c << " q_heads " << p.n_q_heads
                        << " kv " << kv << " head_dim " << hd << " pos0 " << pos0 << " n " << n
                        << (p.kv_f16 ? " f16" : " f32") << (ctx.pool ? " 2 threads" : " 1 thread");
          break;
        }
      }
    }
  }
}

namespace {

// Brute-force top-k: repeatedly take the first maximum among the unchosen.
std::vector<int32_t> brute_top_k(const std::vector<double>& s, int k) {
  std::vector<int32_t> out;
  std::vector<bool> used(s.size());
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (size_t e = 0; e < s.size(); ++e) {
      if (!used[e] && (best < 0 || s[e] > s[best])) best = static_cast<int>(e);
    }
    used[best] = true;
    out.push_back(best);
  }
  return out;
}

void check_routing(bt::T& t, Op op, const std::string& desc, const std::vector<int32_t>& want_ids,
                   const std::vector<double>& want_w,
                   const std::function<void(const Kernels&, int32_t*, float*)>& run) {
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (!b->usable() || !b->supports(op, nullptr)) continue;
    std::vector<int32_t> ids(want_ids.size());
    std::vector<float> w(want_ids.size());
    run(b->k, ids.data(), w.data());
    EXPECT(ids == want_ids) << bs::op_name(op) << " " << b->name << " picks other experts, " << desc;
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT(std::fabs(w[i] - want_w[i]) <= 1e-6 * (1 + std::fabs(want_w[i])))
          << bs::op_name(op) << " " << b->name << " weight " << i << " got " << w[i] << " want " << want_w[i] << ", "
          << desc;
    }
  }
}

}  // namespace

TEST(op_route_softmax_topk) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(8000 + c);
    const int E = 1 + static_cast<int>(r.below(70)), k = 1 + static_cast<int>(r.below(std::min(E, 9)));
    const bool norm = r.below(2);
    const int64_t n = 1 + r.below(4);
    const auto logits = bt::random_vec(r, n * E, 3.0);
    std::vector<int32_t> ids;
    std::vector<double> ws;
    for (int64_t t2 = 0; t2 < n; ++t2) {
      std::vector<double> p(E);
      double sum = 0;
      for (int e = 0; e < E; ++e) sum += (p[e] = std::exp(double(logits[t2 * E + e])));
      for (double& v : p) v /= sum;
      const auto sel = brute_top_k(p, k);
      double s = 0;
      for (int32_t e : sel) s += p[e];
      for (int32_t e : sel) {
        ids.push_back(e);
        ws.push_back(norm ? p[e] / s : p[e]);
      }
    }
    const bs::SoftmaxTopKParams p{E, k, norm};
    check_routing(t, Op::RouteSoftmaxTopK, "seed " + std::to_string(8000 + c), ids, ws,
                  [&](const Kernels& kk, int32_t* i, float* w) {
                    kk.route_softmax_topk(bs::ExecCtx{}, logits.data(), n, p, i, w);
                  });
  }
}

TEST(op_route_sigmoid_group) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(9000 + c);
    const int n_group = 1 << r.below(3), per = 2 + static_cast<int>(r.below(6)), E = n_group * per;
    const int topk_group = 1 + static_cast<int>(r.below(n_group));
    const int k = 1 + static_cast<int>(r.below(std::min(topk_group * per, 8)));
    const bool norm = r.below(2);
    const float scaling = static_cast<float>(r.uniform(0.5, 3));
    const int64_t n = 1 + r.below(4);
    const auto logits = bt::random_vec(r, n * E, 2.0), bias = bt::random_vec(r, E, 0.3);
    std::vector<int32_t> ids;
    std::vector<double> ws;
    for (int64_t t2 = 0; t2 < n; ++t2) {
      std::vector<double> s(E), sel(E), gs(n_group);
      for (int e = 0; e < E; ++e) {
        s[e] = 1 / (1 + std::exp(-double(logits[t2 * E + e])));
        sel[e] = s[e] + bias[e];
      }
      for (int g = 0; g < n_group; ++g) {
        std::vector<double> m(sel.begin() + g * per, sel.begin() + (g + 1) * per);
        const auto top = brute_top_k(m, 2);
        gs[g] = m[top[0]] + m[top[1]];
      }
      // A group is kept when fewer than topk_group groups beat it (ties: lower index wins).
      for (int g = 0; g < n_group && n_group > 1; ++g) {
        int better = 0;
        for (int h = 0; h < n_group; ++h) better += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
        if (better >= topk_group) std::fill(sel.begin() + g * per, sel.begin() + (g + 1) * per, 0.0);
      }
      const auto chosen = brute_top_k(sel, k);
      double sum = 0;
      for (int32_t e : chosen) sum += s[e];
      for (int32_t e : chosen) {
        ids.push_back(e);
        ws.push_back((norm && k > 1 ? s[e] / sum : s[e]) * scaling);
      }
    }
    const bs::SigmoidGroupParams p{E, k, n_group, topk_group, norm, scaling, bias.data()};
    std::ostringstream desc;
    desc << "seed " << 9000 + c << " E " << E << " groups " << n_group << " keep " << topk_group << " k " << k;
    check_routing(t, Op::RouteSigmoidGroup, desc.str(), ids, ws, [&](const Kernels& kk, int32_t* i, float* w) {
      kk.route_sigmoid_group(bs::ExecCtx{}, logits.data(), n, p, i, w);
    });
  }
}

TEST(op_silu_mul_and_add) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(10000 + c);
    const int64_t n = 1 + r.below(300);
    const auto g = bt::random_vec(r, n, 4.0), u = bt::random_vec(r, n), y0 = bt::random_vec(r, n);
    const float s = static_cast<float>(r.uniform(-2, 2));
    Oracle silu, add;
    for (int64_t i = 0; i < n; ++i) {
      silu.value.push_back(g[i] / (1 + std::exp(-double(g[i]))) * u[i]);
      silu.bound.push_back(std::fabs(silu.value.back()) + 1e-7);
      add.value.push_back(y0[i] + double(s) * u[i]);
      add.bound.push_back(std::fabs(y0[i]) + std::fabs(s * u[i]) + 1e-7);
    }
    const std::string desc = "seed " + std::to_string(10000 + c) + " n " + std::to_string(n);
    check_op(t, Op::SiluMul, nullptr, desc, silu, 1e-6,
             [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) { k.silu_mul(ctx, g.data(), u.data(), n, y); });
    check_op(t, Op::Add, nullptr, desc, add, 1e-6, [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
      std::copy(y0.begin(), y0.end(), y);
      k.add(ctx, u.data(), s, n, y);
    });
  }
}

// Random LoRA A [rank, in], B [out, rank] of one float dtype, and its float64 oracle
// y0 + scale · B (A x) per token with bound |y0| + |scale|·Σ_k |B[o,k]|·Σ_c |A[k,c] x[c]|.
TEST(op_lora_delta) {
  for (int c = 0; c < kCases; ++c) {
    bt::Rng r(11000 + c);
    const bs::DType dts[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
    const bs::DType dt = dts[r.below(3)];
    const int64_t rank = std::vector<int64_t>{1, 2, 7, 8, 16, 33}[r.below(6)];
    const int64_t in = 1 + r.below(300), out = 1 + r.below(100);
    const int64_t n = c % 6 == 5 ? 33 : 1 + r.below(4);
    const auto a = bt::random_dense(r, 1, rank, in, dt), b = bt::random_dense(r, 1, out, rank, dt);
    const float scale = static_cast<float>(r.uniform(-4, 4));
    const bs::LoraWeights l{a.m, b.m, scale};
    const auto x = bt::random_vec(r, n * in), y0 = bt::random_vec(r, n * out);
    Oracle o;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> tv(rank), tb(rank);
      for (int64_t k = 0; k < rank; ++k) {
        for (int64_t cc = 0; cc < in; ++cc) {
          const double p = double(bs::dequant(a.m, 0, k, cc)) * x[i * in + cc];
          tv[k] += p;
          tb[k] += std::fabs(p);
        }
      }
      for (int64_t oo = 0; oo < out; ++oo) {
        double v = 0, bnd = 0;
        for (int64_t k = 0; k < rank; ++k) {
          v += double(bs::dequant(b.m, 0, oo, k)) * tv[k];
          bnd += std::fabs(double(bs::dequant(b.m, 0, oo, k))) * tb[k];
        }
        o.value.push_back(y0[i * out + oo] + double(scale) * v);
        o.bound.push_back(std::fabs(y0[i * out + oo]) + std::fabs(scale) * bnd + 1e-7);
      }
    }
    std::ostringstream desc;
    desc << "seed " << 11000 + c << " " << bs::dtype_name(dt) << " rank " << rank << " in " << in << " out " << out
         << " n " << n;
    // Fast kernels accumulate ≤ 333 products in float32: ≤ ~2e-5 of the bound in the worst case.
    check_op(t, Op::LoraDelta, &a.m, desc.str(), o, 2e-5, [&](const Kernels& k, const bs::ExecCtx& ctx, float* y) {
      std::copy(y0.begin(), y0.end(), y);
      k.lora_delta(ctx, l, x.data(), n, y);
    });
  }
}

// The op tests above run only the sets this CPU can use; this checks every compiled table
// (cpu-avx512, the NEON sets and cuda included where built): an op it supports, on any weight,
// has a kernel in it, and the reference has them all.
TEST(every_supported_op_has_a_kernel) {
  bt::Rng r(11900);
  std::vector<bt::OwnedMatrix> ws;
  for (const bs::DType dt : {bs::DType::BF16, bs::DType::F16, bs::DType::F32}) {
    ws.push_back(bt::random_dense(r, 1, 4, 64, dt));
  }
  for (int bits : {4, 8}) ws.push_back(bt::random_affine(r, 2, 8, 64, bits, 64, bs::DType::BF16));
  std::vector<const bs::WeightMatrix*> weights{nullptr};
  for (const auto& w : ws) weights.push_back(&w.m);
  for (const bs::Backend* b : bs::compiled_backends()) {
    for (int i = 0; i < static_cast<int>(Op::Count); ++i) {
      const Op op = static_cast<Op>(i);
      EXPECT(b != &bs::reference_backend() || b->k.has(op)) << "cpu-ref has no " << bs::op_name(op);
      for (const bs::WeightMatrix* w : weights) {
        EXPECT(!b->supports(op, w) || b->k.has(op))
            << b->name << " supports " << bs::op_name(op) << " without a kernel";
      }
    }
  }
}

// Kernels::has names each op's own entry: a table with only that entry has that op and no other.
TEST(kernel_table_has_maps_each_op) {
  const bs::Kernels& all = bs::reference_backend().k;
  const bs::Kernels one[] = {
      {.qmatvec = all.qmatvec},
      {.qmatmul = all.qmatmul},
      {.dense_matmul = all.dense_matmul},
      {.gather_matmul = all.gather_matmul},
      {.embed = all.embed},
      {.rmsnorm = all.rmsnorm},
      {.rope = all.rope},
      {.attention = all.attention},
      {.route_softmax_topk = all.route_softmax_topk},
      {.route_sigmoid_group = all.route_sigmoid_group},
      {.silu_mul = all.silu_mul},
      {.add = all.add},
      {.lora_delta = all.lora_delta},
  };
  static_assert(sizeof(one) / sizeof(one[0]) == static_cast<size_t>(Op::Count));
  for (int i = 0; i < static_cast<int>(Op::Count); ++i) {
    for (int j = 0; j < static_cast<int>(Op::Count); ++j) {
      const Op a = static_cast<Op>(i), b = static_cast<Op>(j);
      EXPECT(one[i].has(b) == (i == j)) << "a table with only " << bs::op_name(a) << " reports has(" << bs::op_name(b)
                                        << ") = " << one[i].has(b);
    }
  }
}
