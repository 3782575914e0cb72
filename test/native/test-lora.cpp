// The LoRA delta op: a hand-computed case, and every usable kernel set's LoRA kernel against the
// reference on random shapes (large ones too), threaded and not.
#include <cmath>
#include <sstream>

#include "common/backend.h"
#include "cpu/thread-pool.h"
#include "fixtures.h"

TEST(lora_delta_hand_computed) {
  // A = [[1, 2]], B = [[1], [-1], [0.5]], scale 2, x = [3, 4]: A x = 11, y += 2·[11, -11, 5.5].
  for (bs::DType dt : {bs::DType::F32, bs::DType::BF16, bs::DType::F16}) {
    bt::Rng r(1);
    bt::OwnedMatrix a = bt::random_dense(r, 1, 1, 2, dt), b = bt::random_dense(r, 1, 3, 1, dt);
    const float av[] = {1, 2}, bv[] = {1, -1, 0.5f};
    for (int i = 0; i < 2; ++i) bt::store_float(a.w.data(), dt, i, av[i]);
    for (int i = 0; i < 3; ++i) bt::store_float(b.w.data(), dt, i, bv[i]);
    const float x[] = {3, 4};
    const float want[] = {1 + 22, 2 - 22, 3 + 11};
    float y[] = {1, 2, 3};
    bs::reference_backend().k.lora_delta(bs::ExecCtx{}, bs::LoraWeights{a.m, b.m, 2.0f}, x, 1, y);
    for (int i = 0; i < 3; ++i) EXPECT(y[i] == want[i]) << bs::dtype_name(dt) << " y[" << i << "] = " << y[i];
  }
}

namespace {

using FastKernel = void (*)(const bs::ExecCtx&, const bs::LoraWeights&, const float*, int64_t, float*);

// A fast kernel against the reference on random shapes (large ones too, so the pool path with
// ≥ 2^18 multiply-adds runs), with and without threads.
void check_fast(bt::T& t, const char* name, FastKernel fast) {
  bs::ThreadPool pool(3);
  for (int c = 0; c < 48; ++c) {
    bt::Rng r(12000 + c);
    const bs::DType dts[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
    const bs::DType dt = dts[r.below(3)];
    const int64_t rank = std::vector<int64_t>{1, 3, 8, 16, 17, 64}[r.below(6)];
    const int64_t in = c % 8 == 7 ? 2048 : 1 + r.below(300), out = c % 8 == 7 ? 4096 : 1 + r.below(100);
    const int64_t n = c % 5 == 4 ? 32 : 1 + r.below(3);
    const auto a = bt::random_dense(r, 1, rank, in, dt), b = bt::random_dense(r, 1, out, rank, dt);
    const bs::LoraWeights l{a.m, b.m, static_cast<float>(r.uniform(-4, 4))};
    const auto x = bt::random_vec(r, n * in), y0 = bt::random_vec(r, n * out);
    std::vector<float> ref = y0, got = y0;
    bs::reference_backend().k.lora_delta(bs::ExecCtx{}, l, x.data(), n, ref.data());
    fast(bs::ExecCtx{c % 2 ? &pool : nullptr}, l, x.data(), n, got.data());
    // Error scale per output: |y0| + |s|·Σ_k |B[o,k]|·Σ_c |A[k,c] x[c]|; float32 sums of ≤ 2048
    // terms stay within ~1e-5 of it (random-walk rounding ~√n·6e-8).
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> tb(rank);
      for (int64_t k = 0; k < rank; ++k) {
        for (int64_t cc = 0; cc < in; ++cc) tb[k] += std::fabs(bs::dequant(a.m, 0, k, cc) * x[i * in + cc]);
      }
      for (int64_t o = 0; o < out; ++o) {
        double bnd = std::fabs(y0[i * out + o]);
        for (int64_t k = 0; k < rank; ++k) bnd += std::fabs(l.scale * bs::dequant(b.m, 0, o, k)) * tb[k];
        const double e = std::fabs(got[i * out + o] - ref[i * out + o]) / (1e-5 * bnd + 1e-30);
        if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e, at = i * out + o;
      }
    }
    EXPECT(worst <= 1.0) << name << " seed " << 12000 + c << " " << bs::dtype_name(dt) << " rank " << rank << " in "
                         << in << " out " << out << " n " << n << ": element " << at << " got " << got[at] << " want "
                         << ref[at] << " (" << worst << "× tolerance)";
  }
}

}  // namespace

TEST(lora_delta_fast_kernels_match_reference) {
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (b == &bs::reference_backend() || !b->usable() || !b->k.has(bs::Op::LoraDelta)) continue;
    check_fast(t, b->name, b->k.lora_delta);
  }
}
