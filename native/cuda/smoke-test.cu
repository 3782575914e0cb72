#include "cuda/smoke-test.cuh"

#include <cmath>
#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "common/prng.h"

namespace bs::BS_CUDA_NS {

namespace {

std::vector<float> random(SplitMix& r, size_t n, double scale = 1.0) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((2 * r.uniform() - 1) * scale);
  return v;
}

// "" or the first element off by more than rel · max|want|.
std::string compare(const char* op, const std::vector<float>& got, const std::vector<float>& want, double rel) {
  double scale = 1e-6;
  for (float w : want) scale = std::fmax(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= rel * scale)) {
      return std::string(op) + " element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
    }
  }
  return "";
}

}  // namespace

std::string run_smoke_test(const Kernels& dev, const Kernels& ref) {
  SplitMix r(72);
  const ExecCtx ctx{};
  std::string err;
  // 4-bit affine, group 64, bf16 scales: 8 rows of 128.
  const int64_t rows = 8, cols = 128;
  std::vector<uint32_t> codes(rows * cols / 8);
  for (uint32_t& c : codes) c = static_cast<uint32_t>(r.next());
  std::vector<uint16_t> scales(rows * 2), biases(rows * 2);
  for (uint16_t& s : scales) s = f32_to_bf16(static_cast<float>(r.uniform() * 0.1 - 0.05));
  for (uint16_t& b : biases) b = f32_to_bf16(static_cast<float>(r.uniform() * 0.1 - 0.05));
  WeightMatrix w;
  w.format = WFormat::Affine;
  w.dtype = DType::BF16;
  w.bits = 4;
  w.group = 64;
  w.rows = rows;
  w.cols = cols;
  w.w = reinterpret_cast<const uint8_t*>(codes.data());
  w.scales = reinterpret_cast<const uint8_t*>(scales.data());
  w.biases = reinterpret_cast<const uint8_t*>(biases.data());
  const auto x = random(r, cols);
  std::vector<float> got(rows), want(rows);
  dev.qmatvec(ctx, w, 0, x.data(), got.data());
  ref.qmatvec(ctx, w, 0, x.data(), want.data());
  if (!(err = compare("qmatvec", got, want, 1e-4)).empty()) return err;

  const auto nw = random(r, cols);
  got.assign(cols, 0);
  want.assign(cols, 0);
  dev.rmsnorm(ctx, x.data(), nw.data(), 1, cols, 1e-6f, got.data());
  ref.rmsnorm(ctx, x.data(), nw.data(), 1, cols, 1e-6f, want.data());
  if (!(err = compare("rmsnorm", got, want, 1e-4)).empty()) return err;

  const RopeParams rp{2, 64, 64, 10000.0};
  const int32_t pos[1] = {37};
  got = x;
  want = x;
  dev.rope(ctx, got.data(), pos, 1, rp);
  ref.rope(ctx, want.data(), pos, 1, rp);
  if (!(err = compare("rope", got, want, 1e-4)).empty()) return err;

  // Attention: 4 query heads over 2 kv heads of 64, 9 cached positions in f16, 2 new tokens.
  const AttentionParams ap{4, 2, 64, 0.125f, true};
  const auto q = random(r, 2 * 4 * 64), kf = random(r, 11 * 2 * 64), vf = random(r, 11 * 2 * 64);
  std::vector<uint16_t> k(kf.size()), v(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) k[i] = f32_to_f16(kf[i]);
  for (size_t i = 0; i < vf.size(); ++i) v[i] = f32_to_f16(vf[i]);
  got.assign(q.size(), 0);
  want.assign(q.size(), 0);
  dev.attention(ctx, q.data(), k.data(), v.data(), 9, 2, ap, got.data());
  ref.attention(ctx, q.data(), k.data(), v.data(), 9, 2, ap, want.data());
  if (!(err = compare("attention", got, want, 1e-4)).empty()) return err;

  const SoftmaxTopKParams sp{40, 4, true};
  const auto logits = random(r, 40, 3.0);
  int32_t ids_got[4], ids_want[4];
  std::vector<float> wg(4), ww(4);
  dev.route_softmax_topk(ctx, logits.data(), 1, sp, ids_got, wg.data());
  ref.route_softmax_topk(ctx, logits.data(), 1, sp, ids_want, ww.data());
  if (std::memcmp(ids_got, ids_want, sizeof ids_got) != 0) return "route_softmax_topk: different experts";
  if (!(err = compare("route_softmax_topk", wg, ww, 1e-4)).empty()) return err;

  const auto up = random(r, cols);
  got.assign(cols, 0);
  want.assign(cols, 0);
  dev.silu_mul(ctx, x.data(), up.data(), cols, got.data());
  ref.silu_mul(ctx, x.data(), up.data(), cols, want.data());
  if (!(err = compare("silu_mul", got, want, 1e-5)).empty()) return err;
  dev.add(ctx, x.data(), 0.5f, cols, got.data());
  ref.add(ctx, x.data(), 0.5f, cols, want.data());
  return compare("add", got, want, 1e-5);
}

}  // namespace bs::BS_CUDA_NS
