// The whole-token decoders' hybrid-model kernels, CUDA over its CPU emulation (and on a device
// when there is one, through the same staging code: cuda-op-runners.h) and Metal through msl-shim
// (the GPU with BRAINSTEM_TEST_METAL=gpu on a Mac), against the scalar reference: the
// causal conv + SiLU (output and advanced history, fewer tokens than taps included), the delta
// rule with its input preparation (q/k RMS scaling, β, decay) against the reference's
// token-by-token recurrence and its chunked prefill form, on odd shapes (Dv not a multiple of the
// rows a warp holds, several v heads per k head, Dk up to the 256 limit), and the sigmoid gates
// and head copies against hand loops. The decoders themselves: {cuda,metal}-decoder.test.ts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/lightning-attention.h"
#include "common/linear-attention.h"
#include "cuda-op-runners.h"
#include "harness.h"
#include "metal-shim.h"
#include "metal/params.h"

namespace {

std::vector<float> random(bt::Rng& r, int64_t n, double lo = -1.0, double hi = 1.0) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(r.uniform(lo, hi));
  return v;
}

// Largest difference over the largest magnitude of the reference.
double max_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 1e-12, worst = 0.0;
  for (float x : want) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
  return worst / scale;
}

// The block's preparation on the host (common/linear-attention.cpp): q, k at unit RMS scaled by
// 1/Dk and 1/√Dk; β = sigmoid(b); g = a_neg · softplus(a + dt_bias).
void prepare(const bs::LinearAttnConfig& c, int64_t n, std::vector<float>& qkv, std::vector<float>& b,
             std::vector<float>& a, const std::vector<float>& a_neg, const std::vector<float>& dt) {
  const int64_t C = c.conv_dim(), kd = c.key_dim();
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < 2 * kd; i += c.k_dim) {
      float* h = qkv.data() + t * C + i;
      float ss = 0.0f;
      for (int64_t j = 0; j < c.k_dim; ++j) ss += h[j] * h[j];
      const float scale = i < kd ? 1.0f / static_cast<float>(c.k_dim) : 1.0f / std::sqrt(static_cast<float>(c.k_dim));
      const float inv = scale / std::sqrt(ss / static_cast<float>(c.k_dim) + 1e-6f);
      for (int64_t j = 0; j < c.k_dim; ++j) h[j] *= inv;
    }
    for (int64_t h = 0; h < c.v_heads; ++h) {
      float& bb = b[t * c.v_heads + h];
      float& aa = a[t * c.v_heads + h];
      bb = 1.0f / (1.0f + std::exp(-bb));
      const float x = aa + dt[h];
      aa = a_neg[h] * (x > 20.0f ? x : std::log1p(std::exp(x)));
    }
  }
}

// The Metal kernels on `dev`: each operand copied into a buffer, one command list, results copied out.
bt::LinearOps metal_runner(bs::metal::Device* dev) {
  struct Call {
    bs::metal::Device* dev;
    std::vector<std::unique_ptr<bs::metal::Buffer>> bufs;
    std::vector<bs::metal::Arg> args;
    bs::metal::Arg in(const float* p, int64_t count) {
      bufs.push_back(dev->alloc(static_cast<size_t>(std::max<int64_t>(count, 1)) * 4));
      std::memcpy(bufs.back()->contents(), p, static_cast<size_t>(count) * 4);
      args.push_back({bufs.back().get(), 0});
      return args.back();
    }
    void out(size_t i, float* p, int64_t count) const { std::memcpy(p, bufs[i]->contents(), count * 4); }
    void run(const char* kernel, bs::metal::Grid g, uint32_t threads, const void* params, size_t len) {
      args.push_back({nullptr, 0, params, len});
      auto c = dev->begin();
      c->dispatch(kernel, g, threads, args);
      c->commit_and_wait();
    }
  };
  auto groups = [](int64_t n) { return static_cast<uint32_t>((n + BS_BLOCK - 1) / BS_BLOCK); };
  return {
      "metal",
      [dev, groups](const float* w, int64_t C, int64_t K, float* hist, const float* x, int64_t n, float* out) {
        Call call{dev, {}, {}};
        call.in(w, C * K), call.in(hist, (K - 1) * C), call.in(x, n * C), call.in(out, n * C);
        const bs::metal::ConvParams p{static_cast<uint32_t>(C), static_cast<uint32_t>(K), static_cast<uint32_t>(n)};
        call.run("bs_causal_conv", {groups(C)}, BS_BLOCK, &p, sizeof p);
        call.out(1, hist, (K - 1) * C), call.out(3, out, n * C);
        return bt::Launch::ok;
      },
      [dev](const bs::LinearAttnConfig& c, int64_t n, const std::vector<float>* in, float* state, float* y) {
        Call call{dev, {}, {}};
        for (int i = 0; i < 5; ++i) call.in(in[i].data(), static_cast<int64_t>(in[i].size()));
        const int64_t S = c.v_heads * c.v_dim * c.k_dim, Y = n * c.value_dim();
        call.in(state, S), call.in(y, Y);
        const bs::metal::DeltaParams p{static_cast<uint32_t>(n), static_cast<uint32_t>(c.k_heads),
                                       static_cast<uint32_t>(c.v_heads), static_cast<uint32_t>(c.k_dim),
                                       static_cast<uint32_t>(c.v_dim)};
        const auto rows = static_cast<uint32_t>((c.v_dim + BS_DELTA_ROWS - 1) / BS_DELTA_ROWS);
        call.run("bs_delta_rule", {rows, static_cast<uint32_t>(c.v_heads)}, 32, &p, sizeof p);
        call.out(5, state, S), call.out(6, y, Y);
        return bt::Launch::ok;
      },
      [dev](int64_t H, int64_t D, int64_t n, const std::vector<float>* in, float* state, float* y) {
        Call call{dev, {}, {}};
        for (int i = 0; i < 4; ++i) call.in(in[i].data(), static_cast<int64_t>(in[i].size()));
        call.in(state, H * D * D), call.in(y, n * H * D);
        const bs::metal::LightningParams p{static_cast<uint32_t>(n), static_cast<uint32_t>(H), static_cast<uint32_t>(D),
                                           1.0f / std::sqrt(static_cast<float>(D))};
        const auto cols = static_cast<uint32_t>((D + BS_DELTA_ROWS - 1) / BS_DELTA_ROWS);
        call.run("bs_lightning_rule", {cols, static_cast<uint32_t>(H)}, 32, &p, sizeof p);
        call.out(4, state, H * D * D), call.out(5, y, n * H * D);
        return bt::Launch::ok;
      },
      [dev, groups](float* x, const float* g, int64_t n, int64_t g_floats, int64_t period, int64_t stride,
                    int64_t step) {
        Call call{dev, {}, {}};
        call.in(x, n), call.in(g, g_floats);
        const bs::metal::GateParams p{static_cast<uint32_t>(n), static_cast<uint32_t>(period),
                                      static_cast<uint32_t>(stride), static_cast<uint32_t>(step)};
        call.run("bs_sigmoid_mul", {groups(n)}, BS_BLOCK, &p, sizeof p);
        call.out(0, x, n);
        return bt::Launch::ok;
      },
      [dev, groups](const float* src, int64_t src_floats, float* dst, int64_t dst_floats, const bt::HeadCopyShape& c) {
        Call call{dev, {}, {}};
        call.in(src, src_floats), call.in(dst, dst_floats);
        auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
        const bs::metal::HeadCopyParams p{u(c.src_token), u(c.src_head), u(c.dst_token), u(c.dst_head),
                                          u(c.n),         u(c.heads),    u(c.width)};
        call.run("bs_copy_heads", {groups(c.n * c.heads * c.width)}, BS_BLOCK, &p, sizeof p);
        call.out(1, dst, dst_floats);
        return bt::Launch::ok;
      }};
}

void check_conv(bt::T& t, const bt::LinearOps& run) {
  for (int c = 0; c < 8; ++c) {
    bt::Rng r(900 + c);
    const int64_t C = 1 + static_cast<int64_t>(r.below(600)), K = 2 + static_cast<int64_t>(r.below(3));
    const int64_t n = c % 3 == 0 ? 1 : 1 + static_cast<int64_t>(r.below(9));
    const std::vector<float> w = random(r, C * K), x = random(r, n * C, -3.0, 3.0);
    std::vector<float> hist = random(r, (K - 1) * C), hist_ref = hist, out(n * C), want(n * C);
    bs::causal_conv_silu(bs::ExecCtx{}, w.data(), C, K, hist_ref.data(), x.data(), n, want.data());
    EXPECT(run.conv(w.data(), C, K, hist.data(), x.data(), n, out.data()) == bt::Launch::ok) << run.name;
    EXPECT(max_rel(out, want) < 1e-6) << run.name << " seed " << 900 + c << " C " << C << " K " << K << " n " << n
                                      << ": " << max_rel(out, want);
    EXPECT(hist == hist_ref) << run.name << " seed " << 900 + c << " C " << C << " K " << K << " n " << n
                             << ": history";
  }
}

void check_delta(bt::T& t, const bt::LinearOps& run) {
  struct Shape {
    int64_t Hk, Hv, Dk, Dv, n;
  };
  const Shape shapes[] = {{2, 4, 32, 32, 1}, {1, 3, 64, 37, 7}, {2, 2, 256, 8, 3}, {2, 6, 32, 5, 70}};
  for (size_t s = 0; s < std::size(shapes); ++s) {
    const Shape& sh = shapes[s];
    bt::Rng r(950 + s);
    bs::LinearAttnConfig c;
    c.k_heads = sh.Hk, c.v_heads = sh.Hv, c.k_dim = sh.Dk, c.v_dim = sh.Dv, c.conv_kernel = 4;
    const int64_t n = sh.n, C = c.conv_dim(), S = c.v_heads * c.v_dim * c.k_dim;
    std::vector<float> in[5] = {random(r, n * C, -2.0, 2.0), random(r, n * c.v_heads, -3.0, 3.0),
                                random(r, n * c.v_heads, -3.0, 3.0), random(r, c.v_heads, -2.0, -0.1),
                                random(r, c.v_heads, -1.0, 1.0)};
    const std::vector<float> state = random(r, S, -0.5, 0.5);
    std::vector<float> y(n * c.value_dim()), dev_state = state;
    EXPECT(run.delta(c, n, in, dev_state.data(), y.data()) == bt::Launch::ok) << run.name;
    prepare(c, n, in[0], in[1], in[2], in[3], in[4]);
    bs::Scratch scratch;
    for (const int64_t chunk : {int64_t{0}, bs::kDeltaChunk}) {
      std::vector<float> want(n * c.value_dim()), ref_state = state;
      bs::gated_delta_rule(bs::ExecCtx{}, c, in[0].data(), in[2].data(), in[1].data(), n, chunk, ref_state.data(),
                           scratch, want.data());
      EXPECT(max_rel(y, want) < 2e-5) << run.name << " shape " << s << " chunk " << chunk << ": y " << max_rel(y, want);
      EXPECT(max_rel(dev_state, ref_state) < 2e-5)
          << run.name << " shape " << s << " chunk " << chunk << ": state " << max_rel(dev_state, ref_state);
    }
  }
}

void check_lightning(bt::T& t, const bt::LinearOps& run) {
  struct Shape {
    int64_t H, D, n;
  };
  const Shape shapes[] = {{4, 32, 1}, {3, 64, 9}, {2, 256, 2}, {5, 32, 70}};
  for (size_t s = 0; s < std::size(shapes); ++s) {
    const auto [H, D, n] = shapes[s];
    bt::Rng r(970 + s);
    std::vector<float> in[4] = {random(r, n * H * D), random(r, n * H * D), random(r, n * H * D),
                                std::vector<float>(H)};
    bs::lightning_log_decays(H, 1 + static_cast<int64_t>(s), 8, in[3].data());
    const std::vector<float> state = random(r, H * D * D, -0.5, 0.5);
    std::vector<float> y(n * H * D), dev_state = state;
    EXPECT(run.lightning(H, D, n, in, dev_state.data(), y.data()) == bt::Launch::ok) << run.name;
    std::vector<float> q = in[0];
    for (float& x : q) x *= 1.0f / std::sqrt(static_cast<float>(D));
    bs::Scratch scratch;
    for (const int64_t chunk : {int64_t{0}, bs::kLightningChunk}) {
      std::vector<float> want(n * H * D), ref_state = state;
      bs::lightning_rule(bs::ExecCtx{}, H, D, in[3].data(), q.data(), in[1].data(), in[2].data(), n, chunk,
                         ref_state.data(), scratch, want.data());
      EXPECT(max_rel(y, want) < 2e-5) << run.name << " shape " << s << " chunk " << chunk << ": y " << max_rel(y, want);
      EXPECT(max_rel(dev_state, ref_state) < 2e-5)
          << run.name << " shape " << s << " chunk " << chunk << ": state " << max_rel(dev_state, ref_state);
    }
  }
}

void check_gates_and_copies(bt::T& t, const bt::LinearOps& run) {
  bt::Rng r(990);
  const int64_t n = 3, heads = 5, hd = 12, H = 40;
  // q_proj's rows: per head [q | gate]; the gate scales the attention output element-wise.
  const std::vector<float> qg = random(r, n * heads * 2 * hd, -4.0, 4.0);
  std::vector<float> q(n * heads * hd, -1.0f), attn = random(r, n * heads * hd), want = attn;
  const bt::HeadCopyShape split{heads * 2 * hd, 2 * hd, heads * hd, hd, n, heads, hd};
  EXPECT(run.copy(qg.data(), static_cast<int64_t>(qg.size()), q.data(), static_cast<int64_t>(q.size()), split) ==
         bt::Launch::ok);
  EXPECT(run.gate(attn.data(), qg.data() + hd, n * heads * hd, static_cast<int64_t>(qg.size()) - hd, hd, 2 * hd, 1) ==
         bt::Launch::ok);
  bool copied = true;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t j = 0; j < hd; ++j) {
        const int64_t i = (t * heads + h) * hd + j, src = (t * heads + h) * 2 * hd + j;
        copied &= q[i] == qg[src];
        want[i] /= 1.0f + std::exp(-qg[src + hd]);
      }
    }
  }
  EXPECT(copied) << run.name << ": q copied out of [q | gate]";
  EXPECT(max_rel(attn, want) < 1e-6) << run.name << ": attention output gated by its own element";
  // The shared expert: one gate per token over its hidden row.
  const std::vector<float> g = random(r, n, -4.0, 4.0);
  std::vector<float> y = random(r, n * H), y_want = y;
  EXPECT(run.gate(y.data(), g.data(), n * H, n, H, 1, 0) == bt::Launch::ok);
  for (int64_t i = 0; i < n * H; ++i) y_want[i] /= 1.0f + std::exp(-g[i / H]);
  EXPECT(max_rel(y, y_want) < 1e-6) << run.name << ": one gate per token";
}

// The CUDA launchers' own shape checks: nothing runs.
void check_cuda_refusals(bt::T& t, const bt::LinearOps& run) {
  std::vector<float> one(1), w(9), h(8);  // one channel, 9 taps
  EXPECT(run.conv(w.data(), 1, 9, h.data(), one.data(), 1, one.data()) == bt::Launch::refused)
      << run.name << ": more taps than a thread holds";
  bs::LinearAttnConfig c;
  c.k_heads = 1, c.v_heads = 1, c.k_dim = 48, c.v_dim = 1;
  std::vector<float> in[5] = {std::vector<float>(c.conv_dim()), one, one, one, one}, state(48), y(1);
  EXPECT(run.delta(c, 1, in, state.data(), y.data()) == bt::Launch::refused) << run.name << ": Dk not a multiple of 32";
}

// One check over the CUDA emulation and the Metal shim.
void on_emulations(bt::T& t, void (*check)(bt::T&, const bt::LinearOps&)) {
  bt::MetalTestDevice metal;
  if (!metal.ready(t)) return;
  for (const bt::LinearOps& run : {bt::cuda_emu_linear_ops(), metal_runner(metal.dev)}) check(t, run);
}

}  // namespace

TEST(cuda_and_metal_causal_conv_silu_matches_the_reference_with_its_history) { on_emulations(t, check_conv); }

TEST(cuda_and_metal_delta_rule_matches_the_reference_recurrence_and_chunked_form) { on_emulations(t, check_delta); }

TEST(cuda_and_metal_lightning_rule_matches_the_reference_recurrence_and_chunked_form) {
  on_emulations(t, check_lightning);
}

TEST(cuda_and_metal_sigmoid_gates_and_head_copies_match_hand_loops) { on_emulations(t, check_gates_and_copies); }

TEST(cuda_emu_hybrid_kernels_refuse_shapes_they_cannot_run) { check_cuda_refusals(t, bt::cuda_emu_linear_ops()); }

// The same checks on a CUDA device, through the same staging code.
TEST(cuda_device_hybrid_kernels_match_the_reference) {
  bt::LinearOps run;
  if (!bt::cuda_device_ops(t, &run, nullptr)) return;
  check_conv(t, run);
  check_delta(t, run);
  check_lightning(t, run);
  check_gates_and_copies(t, run);
  check_cuda_refusals(t, run);
}
