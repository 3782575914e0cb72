// The Metal kernel set checked without a Mac: the embedded kernel sources run through
// msl-shim.h (one fiber per GPU thread, 32-lane simdgroups) under the real table
// (metal_backend()) and host code (MetalOps), op by op against the reference kernels on seeded
// random and edge shapes (accel-suite.h). What only Apple hardware can check is listed in
// docs/metal.md.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "accel-suite.h"
#include "common/backend.h"
#include "common/dtype.h"
#include "common/error.h"
#include "common/logits.h"
#include "fixtures.h"
#include "metal-shim.h"
#include "metal/metal-backend.h"
#include "metal/metal-ops.h"
#include "metal/params.h"

namespace {

using bs::metal_backend;

const bs::Kernels& metal() { return metal_backend().k; }
const bs::Kernels& ref() { return bs::reference_backend().k; }

}  // namespace

TEST(metal_sources_are_embedded_for_every_kernel) {
  const auto& src = bs::metal::embedded_sources();
  EXPECT(src.size() >= 3 && std::string(src[0].name) == "params.h" && std::string(src[1].name) == "prelude.metal");
  const std::string lib = bs::metal::library_source();
  for (const std::string& k : bt::shim_kernel_names()) {
    EXPECT(lib.find("kernel void " + k + "(") != std::string::npos) << k << " missing from the embedded sources";
  }
}

TEST(metal_shim_runs_simdgroups_in_lockstep_and_reports_divergence) {
  float sum = 0;
  EXPECT(bt::shim_lane_sum(sum).empty());
  EXPECT(sum == 496.0f) << "simd_sum of lane ids 0..31, got " << sum;
  const std::string diverged = bt::shim_divergent_simd();
  EXPECT(diverged.find("divergence") != std::string::npos) << diverged;
  const std::string returned = bt::shim_barrier_after_return();
  EXPECT(returned.find("returned") != std::string::npos) << returned;
  EXPECT(bt::shim_stale_reads(true) == 0);
  EXPECT(bt::shim_stale_reads(false) > 0) << "a missing barrier went unnoticed";
}

TEST(metal_qmatvec_and_qmatmul_match_the_reference) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  // (on the shim) every fourth case copies weights instead of wrapping them in place
  bt::check_qmatmul(t, metal_backend(), [&](int c) { use.shim.refuse_wraps = c % 4 == 3; });
}

TEST(metal_gather_matmul_matches_the_reference) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  bt::check_gather(
      t, metal_backend(),
      [&](const bs::WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y, const int32_t* slots,
          int64_t n_experts) { bs::metal::MetalOps(*use.dev).gather_matmul(w, ids, x, m, y, slots, n_experts); });
}

TEST(metal_dense_matmul_and_lora_match_the_reference) {
  bt::MetalTestDevice use;
  if (use.ready(t)) bt::check_dense_and_lora(t, metal_backend());
}

TEST(metal_embed_matches_the_reference) {
  bt::MetalTestDevice use;
  if (use.ready(t)) bt::check_embed(t, metal_backend());
}

TEST(metal_rmsnorm_rope_and_elementwise_match_the_reference) {
  bt::MetalTestDevice use;
  if (use.ready(t)) bt::check_norm_rope_elementwise(t, metal_backend());
}

TEST(metal_attention_matches_the_reference) {
  bt::MetalTestDevice use;
  if (use.ready(t)) bt::check_attention(t, metal_backend());
}

TEST(metal_routing_matches_the_reference) {
  bt::MetalTestDevice use;
  if (use.ready(t)) bt::check_routing(t, metal_backend());
}

// A MoE block in one command list (the ids never leave the GPU).
TEST(metal_moe_block_in_one_command_list_matches_the_reference) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  bs::metal::MetalOps ops(*use.dev);
  int dispatches = 0, commits = 0;
  bt::check_moe_block(
      t,
      [&](const bs::WeightMatrix& router, const bs::WeightMatrix& gate, const bs::WeightMatrix& up,
          const bs::WeightMatrix& down, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out) {
        dispatches = use.shim.dispatches;
        commits = use.shim.commits;
        ops.moe_block({&router, &gate, &up, &down}, rp, x, n, out);
      },
      [&](const std::string& desc) {
        if (use.on_gpu()) return;
        EXPECT(use.shim.dispatches - dispatches == 7 && use.shim.commits - commits == 1) << desc << ": one list";
      });
}

TEST(metal_prerouter_head_matches_the_reference) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  bs::metal::MetalOps ops(*use.dev);
  bt::check_prerouter(t, [&](const bs::WeightMatrix& lin, const bs::WeightMatrix* fc1, const bs::WeightMatrix* fc2,
                             const float* hidden, const int32_t* cur, const int32_t* prev, int k,
                             float* logits) { ops.prerouter(lin, fc1, fc2, hidden, cur, prev, k, logits); });
}

TEST(metal_table_limits_and_device_failure) {
  bt::Rng r(39500);
  auto w = bt::random_affine(r, 1, 4, 64, 4, 32, bs::DType::BF16);
  EXPECT(metal_backend().supports(bs::Op::QMatVec, &w.m));
  w.m.group = 16;  // not an MLX group size the kernels take
  EXPECT(!metal_backend().supports(bs::Op::QMatVec, &w.m));
  const auto d = bt::random_dense(r, 1, 4, 8, bs::DType::F16);
  EXPECT(!metal_backend().supports(bs::Op::QMatVec, &d.m) && metal_backend().supports(bs::Op::DenseMatMul, &d.m));
  for (int op = 0; op < static_cast<int>(bs::Op::Count); ++op) EXPECT(metal_backend().k.has(static_cast<bs::Op>(op)));
  // A device that fails: the call is finished by the reference and the set turns unusable.
  struct Failing : bt::ShimDevice {
    std::unique_ptr<bs::metal::CommandList> begin() override { bs::fail("command queue lost"); }
  } failing;
  bs::metal::use_device(&failing);
  const auto x = bt::random_vec(r, 64);
  w.m.group = 32;
  std::vector<float> got(4), want(4);
  metal().qmatvec(bs::ExecCtx{}, w.m, 0, x.data(), got.data());
  ref().qmatvec(bs::ExecCtx{}, w.m, 0, x.data(), want.data());
  EXPECT(got == want);
  EXPECT(!metal_backend().usable());
  EXPECT(bs::metal::describe().find("disabled after a device error") != std::string::npos) << bs::metal::describe();
  bs::metal::use_device(nullptr);
}

// The decoder's helpers: bs_argmax (greedy on the device) against the CPU's argmax (ties to the
// lower index, NaN never chosen), bs_to_f16 against the CPU's rounding and bs_copy, bit for bit.
TEST(metal_argmax_f16_rounding_and_copy_match_the_cpu) {
  bt::MetalTestDevice use;
  if (!use.ready(t)) return;
  bt::Rng r(5);
  for (const int64_t n : {1, 31, 257, 4099, 40000}) {
    std::vector<float> x = bt::random_vec(r, n);
    if (n > 40) x[n / 3] = x[n - 7] = 9.0f;  // a tie: the lower index wins
    if (n > 40) x[n / 5] = NAN;
    auto in = use.dev->alloc(n * 4), out = use.dev->alloc(4);
    std::memcpy(in->contents(), x.data(), n * 4);
    const bs::metal::ElementwiseParams p{static_cast<uint32_t>(n), 0.0f};
    auto c = use.dev->begin();
    c->dispatch("bs_argmax", {1}, BS_BLOCK, {{in.get(), 0}, {out.get(), 0}, {nullptr, 0, &p, sizeof p}});
    c->commit_and_wait();
    const int32_t got = *reinterpret_cast<const int32_t*>(out->contents());
    EXPECT(got == bs::argmax_f32(x.data(), n)) << "n " << n << ": got " << got;
  }
  std::vector<float> x = bt::random_vec(r, 1000, 70000.0);  // past half's range too
  for (const float v : {0.0f, -0.0f, 1e-8f, 6.1e-5f, 65504.0f, 65520.0f, 1.0f + 1.0f / 2048, INFINITY}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  auto in = use.dev->alloc(n * 4), out = use.dev->alloc(n * 2);
  std::memcpy(in->contents(), x.data(), n * 4);
  const bs::metal::ElementwiseParams p{static_cast<uint32_t>(n), 0.0f};
  auto c = use.dev->begin();
  c->dispatch("bs_to_f16", {static_cast<uint32_t>((n + BS_BLOCK - 1) / BS_BLOCK)}, BS_BLOCK,
              {{in.get(), 0}, {out.get(), 0}, {in.get(), 0}, {out.get(), 0}, {nullptr, 0, &p, sizeof p}});
  c->commit_and_wait();
  const auto* h = reinterpret_cast<const uint16_t*>(out->contents());
  for (int64_t i = 0; i < n; ++i) EXPECT(h[i] == bs::f32_to_f16(x[i])) << x[i] << " → " << h[i];
  auto copied = use.dev->alloc(n * 4);
  const bs::metal::ElementwiseParams pc{static_cast<uint32_t>(n - 3), 0.0f};
  auto cc = use.dev->begin();
  cc->dispatch("bs_copy", {static_cast<uint32_t>((n + BS_BLOCK - 1) / BS_BLOCK)}, BS_BLOCK,
               {{in.get(), 0}, {copied.get(), 0}, {nullptr, 0, &pc, sizeof pc}});
  cc->commit_and_wait();
  EXPECT(std::memcmp(copied->contents(), x.data(), (n - 3) * 4) == 0) << "bs_copy";
}
