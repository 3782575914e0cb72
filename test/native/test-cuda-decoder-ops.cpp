// The kernels only the whole-token CUDA decoder uses, over the CPU emulation: argmax (greedy
// sampling on the device: the first largest wins as std::max_element, NaNs never), the f16
// conversion of KV rows (bit-exact with the reference's f32_to_f16), the fused q/k norm and
// RoPE (as the separate rmsnorm and rope kernels), the residual add joined to RMSNorm and the
// SiLU gate read by the down projection and the LoRA steps of several linears in one launch
// (bit-exact with the separate launches), and decode attention split over key ranges. The decoder itself is
// checked against the CPU engine by cuda-decoder.test.ts.
#define BS_CUDA_EMULATION 1
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "cuda/add.cuh"
#include "cuda/argmax.cuh"
#include "cuda/attention.cuh"
#include "cuda/cuda-api.h"
#include "cuda/dense-matmul.cuh"
#include "cuda/op-args.cuh"
#include "cuda/qk-norm-rope.cuh"
#include "cuda/qmatmul.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/rope.cuh"
#include "cuda/silu-mul.cuh"
#include "cuda/to-half.cuh"
#include "fixtures.h"
#include "harness.h"

namespace {

// -2 when the launch fails.
int32_t device_argmax(const std::vector<float>& x) {
  int32_t out = -1;
  if (bs::cuda_emu::launch_argmax(x.data(), static_cast<int64_t>(x.size()), &out, nullptr) != bs::cuda_emu::cudaSuccess)
    return -2;
  return out;
}

}  // namespace

TEST(cuda_emu_argmax_takes_the_first_largest_and_skips_nans) {
  bt::Rng rng(5);
  std::vector<float> x(1000);
  for (float& v : x) v = static_cast<float>(rng.uniform(-4.0, 4.0));
  x[700] = x[300] = 9.0f;  // a tie across threads: the lower index
  EXPECT(device_argmax(x) == 300) << device_argmax(x);
  x[10] = std::numeric_limits<float>::quiet_NaN();
  EXPECT(device_argmax(x) == 300) << "a NaN never wins";
  std::vector<float> small = {1.0f, 3.0f, 3.0f};
  EXPECT(device_argmax(small) == 1);
  std::vector<float> nans(40, std::numeric_limits<float>::quiet_NaN());
  EXPECT(device_argmax(nans) == 0) << "nothing compares: 0";
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
    EXPECT(bs::cuda_emu::launch_argmax(buf.data() + off, static_cast<int64_t>(n), &got, nullptr) ==
           bs::cuda_emu::cudaSuccess);
    EXPECT(got == want) << "seed " << 500 + c << " n " << n << " offset " << off << ": got " << got << " want " << want;
  }
}

TEST(cuda_emu_to_half_matches_the_reference_bit_for_bit) {
  bt::Rng rng(6);
  std::vector<float> x(777);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(rng.uniform(-1.0, 1.0)) * std::ldexp(1.0f, static_cast<int>(i % 40) - 24);
  x[0] = 65504.0f, x[1] = 1e6f, x[2] = -0.0f, x[3] = std::numeric_limits<float>::infinity();
  std::vector<uint16_t> out(x.size());
  EXPECT(bs::cuda_emu::launch_to_half(x.data(), static_cast<int64_t>(x.size()), out.data(), nullptr) ==
         bs::cuda_emu::cudaSuccess);
  for (size_t i = 0; i < x.size(); ++i) EXPECT(out[i] == bs::f32_to_f16(x[i])) << "element " << i << ": " << x[i];
  // The pair form (K and V rows in one launch): each half as the single form.
  std::vector<float> y(x.rbegin(), x.rend());
  std::vector<uint16_t> o0(x.size()), o1(x.size());
  EXPECT(bs::cuda_emu::launch_to_half_pair(x.data(), o0.data(), y.data(), o1.data(), static_cast<int64_t>(x.size()),
                                           nullptr) == bs::cuda_emu::cudaSuccess);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT(o0[i] == bs::f32_to_f16(x[i]) && o1[i] == bs::f32_to_f16(y[i])) << "pair element " << i;
}

// Seeded shapes (head widths that are and are not multiples of a warp, partial rotation, GQA,
// several tokens at scattered positions): the fused kernel against rmsnorm then rope.
TEST(cuda_emu_qk_norm_rope_matches_rmsnorm_then_rope) {
  namespace ce = bs::cuda_emu;
  for (int c = 0; c < 10; ++c) {
    bt::Rng r(900 + c);
    const int hd = std::vector<int>{64, 128, 256, 80, 96}[r.below(5)];
    const int rot = std::vector<int>{hd, hd / 2, 32}[r.below(3)];
    const int n_q = 1 + static_cast<int>(r.below(9)), n_kv = 1 + static_cast<int>(r.below(4));
    const int64_t n_tok = 1 + static_cast<int64_t>(r.below(3));
    const float eps = 1e-6f;
    std::vector<float> q(n_tok * n_q * hd), k(n_tok * n_kv * hd), qw(hd), kw(hd);
    for (std::vector<float>* v : {&q, &k, &qw, &kw})
      for (float& e : *v) e = static_cast<float>(r.uniform(-2.0, 2.0));
    std::vector<int32_t> pos(n_tok);
    for (int32_t& p : pos) p = static_cast<int32_t>(r.below(5000));
    std::vector<double> inv_freq(rot / 2);
    for (int i = 0; i < rot / 2; ++i) inv_freq[i] = std::pow(1e6, -2.0 * i / rot);
    std::vector<float> q2 = q, k2 = k;
    const std::string desc = "seed " + std::to_string(900 + c) + " head_dim " + std::to_string(hd) + " rot " +
                             std::to_string(rot) + " heads " + std::to_string(n_q) + "/" + std::to_string(n_kv) +
                             " tokens " + std::to_string(n_tok);
    const ce::QkNormRopeArgs a{n_tok, n_q, n_kv, hd, rot, eps};
    EXPECT(ce::launch_qk_norm_rope(a, q.data(), k.data(), qw.data(), kw.data(), pos.data(), inv_freq.data(), nullptr) ==
           ce::cudaSuccess)
        << desc;
    EXPECT(ce::launch_rmsnorm(q2.data(), qw.data(), n_tok * n_q, hd, eps, q2.data(), nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_rmsnorm(k2.data(), kw.data(), n_tok * n_kv, hd, eps, k2.data(), nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_rope(q2.data(), pos.data(), inv_freq.data(), n_tok, n_q, hd, rot, nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_rope(k2.data(), pos.data(), inv_freq.data(), n_tok, n_kv, hd, rot, nullptr) == ce::cudaSuccess);
    double worst = 0.0;  // squares summed in another order: a float's last bit at most
    for (size_t i = 0; i < q.size(); ++i) worst = std::max(worst, std::fabs(q[i] - q2[i]) / (1.0 + std::fabs(q2[i])));
    for (size_t i = 0; i < k.size(); ++i) worst = std::max(worst, std::fabs(k[i] - k2[i]) / (1.0 + std::fabs(k2[i])));
    EXPECT(worst <= 1e-6) << desc << ": worst difference " << worst;
  }
}

// Decode attention over caches of seeded lengths (one key; one range; ranges of uneven size; more
// keys than kAttnSplits ranges hold at kAttnSplitKeys), f32 and f16, GQA: split and unsplit
// against softmax attention in double.
TEST(cuda_emu_decode_attention_split_over_key_ranges_matches_double) {
  namespace ce = bs::cuda_emu;
  const std::vector<int64_t> lengths{1, 5, 33, 64, 65, 200, 1100};
  for (int c = 0; c < static_cast<int>(lengths.size()) * 2; ++c) {
    bt::Rng r(950 + c);
    const int64_t keys = lengths[c / 2];
    const bool f16 = c % 2 == 1;
    const int hd = std::vector<int>{64, 128, 80}[r.below(3)], n_kv = 1 + static_cast<int>(r.below(2)), n_q = 2 * n_kv;
    std::vector<float> q(n_q * hd), k(keys * n_kv * hd), v(k.size());
    for (std::vector<float>* x : {&q, &k, &v})
      for (float& e : *x) e = static_cast<float>(r.uniform(-1.5, 1.5));
    std::vector<uint16_t> kh(k.size()), vh(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      kh[i] = bs::f32_to_f16(k[i]), vh[i] = bs::f32_to_f16(v[i]);
      if (f16) k[i] = bs::f16_to_f32(kh[i]), v[i] = bs::f16_to_f32(vh[i]);  // the reference reads what is stored
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<float> partial(ce::attention_partial_floats(n_q, hd)), split(q.size()), whole(q.size());
    ce::AttentionArgs a{n_q, n_kv, hd, keys - 1, 1, f16, scale, partial.data()};
    const void* kp = f16 ? static_cast<const void*>(kh.data()) : k.data();
    const void* vp = f16 ? static_cast<const void*>(vh.data()) : v.data();
    EXPECT(ce::launch_attention(a, q.data(), kp, vp, split.data(), nullptr) == ce::cudaSuccess);
    a.partial = nullptr;
    EXPECT(ce::launch_attention(a, q.data(), kp, vp, whole.data(), nullptr) == ce::cudaSuccess);
    double worst = 0.0;
    for (int h = 0; h < n_q; ++h) {
      const int g = h / (n_q / n_kv);
      std::vector<double> sc(keys);
      double big = -1e300, sum = 0.0;
      for (int64_t j = 0; j < keys; ++j) {
        double d = 0.0;
        for (int e = 0; e < hd; ++e) d += static_cast<double>(q[h * hd + e]) * k[(j * n_kv + g) * hd + e];
        sc[j] = d * scale, big = std::max(big, sc[j]);
      }
      for (double& x : sc) x = std::exp(x - big), sum += x;
      for (int e = 0; e < hd; ++e) {
        double want = 0.0;
        for (int64_t j = 0; j < keys; ++j) want += sc[j] * v[(j * n_kv + g) * hd + e];
        want /= sum;
        for (const std::vector<float>* got : {&split, &whole})
          worst = std::max(worst, std::fabs((*got)[h * hd + e] - want) / (1.0 + std::fabs(want)));
      }
    }
    EXPECT(worst <= 2e-6) << "seed " << 950 + c << " keys " << keys << (f16 ? " f16" : " f32") << " head_dim " << hd
                          << " heads " << n_q << "/" << n_kv << ": worst difference " << worst;
  }
}

// Seeded rows and widths (a row longer than a block's stride, one shorter than a warp): the
// joined add + RMSNorm bit-exact with add then rmsnorm, the residual written back.
TEST(cuda_emu_add_rmsnorm_is_add_then_rmsnorm_bit_for_bit) {
  namespace ce = bs::cuda_emu;
  for (int c = 0; c < 6; ++c) {
    bt::Rng r(970 + c);
    const int64_t rows = 1 + static_cast<int64_t>(r.below(4)), d = std::vector<int64_t>{2048, 1024, 300, 20}[c % 4];
    const std::vector<float> x0 = bt::random_vec(r, rows * d, 3.0), res = bt::random_vec(r, rows * d),
                             w = bt::random_vec(r, d);
    std::vector<float> x = x0, y(x.size()), x2 = x0, y2(x.size());
    EXPECT(ce::launch_add_rmsnorm(x.data(), res.data(), w.data(), rows, d, 1e-6f, y.data(), nullptr) ==
           ce::cudaSuccess);
    EXPECT(ce::launch_add(res.data(), 1.0f, rows * d, x2.data(), nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_rmsnorm(x2.data(), w.data(), rows, d, 1e-6f, y2.data(), nullptr) == ce::cudaSuccess);
    EXPECT(std::memcmp(x.data(), x2.data(), x.size() * 4) == 0 && std::memcmp(y.data(), y2.data(), y.size() * 4) == 0)
        << "seed " << 970 + c << " rows " << rows << " d " << d;
  }
}

// The down projection with the SiLU gate read through its x (QMatArgs::up) bit-exact with
// silu_mul then the matmul: gathered over several experts (4 rows per lane group and 1) and
// plain for one token, 4 and 8 bits, aligned and not (the word-per-lane path); refused for a
// prefill chunk's plain product.
TEST(cuda_emu_qmatmul_reading_silu_gate_is_silu_mul_then_qmatmul) {
  namespace ce = bs::cuda_emu;
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(980 + c);
    const int bits = c % 2 ? 8 : 4, group = 32 << r.below(3);
    const bool gather = c < 4 || c % 3 == 0, unaligned = c == 7;
    const int64_t E = 4, rows = std::vector<int64_t>{96, 5}[(c / 2) % 2], cols = group * (1 + r.below(3)),
                  m = gather ? 1 + static_cast<int64_t>(r.below(6)) : 1;
    const bt::OwnedMatrix w = bt::random_affine(r, E, rows, cols, bits, group, bs::DType::F16);
    std::vector<float> gate = bt::random_vec(r, m * cols + 1, 3.0), up = bt::random_vec(r, m * cols + 1);
    float* g = gate.data() + (unaligned ? 1 : 0);
    std::vector<int32_t> ids(m);
    for (int32_t& id : ids) id = static_cast<int32_t>(r.below(E));
    ce::QMatArgs a = ce::shape_args(w.m, m);
    a.codes = w.m.w, a.scales = w.m.scales, a.biases = w.m.biases, a.mat = gather ? 0 : 1;
    if (gather) a.ids = ids.data();
    std::vector<float> fused(m * rows), gated(m * cols + 1), want(m * rows);
    float* gd = gated.data() + (unaligned ? 1 : 0);  // the same path (word per lane) on both sides
    ce::QMatArgs b = a;
    a.up = up.data();
    EXPECT(ce::launch_qmatmul(a, g, fused.data(), nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_silu_mul(g, up.data(), m * cols, gd, nullptr) == ce::cudaSuccess);
    EXPECT(ce::launch_qmatmul(b, gd, want.data(), nullptr) == ce::cudaSuccess);
    if (!gather) {
      ce::QMatArgs chunk = a;
      chunk.n = 3;
      std::vector<float> y(3 * rows), xs(3 * cols, 1.0f), us(3 * cols, 1.0f);
      chunk.up = us.data();
      EXPECT(ce::launch_qmatmul(chunk, xs.data(), y.data(), nullptr) == ce::cudaErrorInvalidValue)
          << "seed " << 980 + c;
    }
    EXPECT(std::memcmp(fused.data(), want.data(), want.size() * 4) == 0)
        << "seed " << 980 + c << " bits " << bits << " group " << group << " [" << rows << ", " << cols << "] x " << m
        << (gather ? " gathered" : " plain") << (unaligned ? " unaligned" : "");
  }
}

// Three dense products of different shapes and element types in one launch (the LoRA A steps of
// q, k, v over one x; the B steps accumulating with a scale into their own outputs), several
// tokens: each bit-exact with its own launch.
TEST(cuda_emu_dense_matmul_set_is_each_product_bit_for_bit) {
  namespace ce = bs::cuda_emu;
  bt::Rng r(990);
  const int64_t n = 3;
  const bs::DType types[3] = {bs::DType::BF16, bs::DType::F16, bs::DType::F32};
  const int64_t rows[3] = {16, 8, 40}, cols[3] = {96, 160, 64};
  std::vector<bt::OwnedMatrix> w;
  std::vector<std::vector<float>> x, y_set, y_one;
  ce::DenseSet set{};
  for (int i = 0; i < 3; ++i) {
    w.push_back(bt::random_dense(r, 1, rows[i], cols[i], types[i]));
    x.push_back(bt::random_vec(r, n * cols[i]));
    y_set.push_back(bt::random_vec(r, n * rows[i]));
    y_one.push_back(y_set.back());
  }
  for (int i = 0; i < 3; ++i) {
    set.a[i] = ce::DenseArgs{w[i].m.w, ce::type_code(types[i]), rows[i], cols[i], 0, n, i > 0, 0.5f + i};
    set.x[i] = x[i].data(), set.y[i] = y_set[i].data();
  }
  set.count = 3;
  EXPECT(ce::launch_dense_matmul_set(set, nullptr) == ce::cudaSuccess);
  for (int i = 0; i < 3; ++i) {
    EXPECT(ce::launch_dense_matmul(set.a[i], x[i].data(), y_one[i].data(), nullptr) == ce::cudaSuccess);
    EXPECT(std::memcmp(y_set[i].data(), y_one[i].data(), y_one[i].size() * 4) == 0) << "product " << i;
  }
}
