// The CUDA kernel set checked without a GPU: every native/cuda/*.cu file is compiled a second
// time as C++ over the CPU emulation (cuda/cuda-emu.h: one fiber per thread, 32-lane warps in
// lockstep, __syncthreads as a barrier, shuffles from exited lanes and divergence reported) and
// its table, host code and kernels run op by op against the reference (accel-suite.h). The
// same checks run on the real set when a usable CUDA device is present, and report themselves
// skipped with the reason otherwise.
#define BS_CUDA_EMULATION 1
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "accel-suite.h"
#include "common/backend.h"
#include "common/mmap-file.h"
#include "cuda/cuda-api.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-ops.cuh"
#include "cuda/device-context.cuh"

#ifdef BRAINSTEM_WITH_CUDA
namespace bs::cuda {
std::string describe();  // the real set's (cuda-backend.h names the emulated one in this file)
}
#endif

namespace bs::cuda_emu {

namespace {

// Rule breakers for the emulation's self-checks.
__global__ void lane_sum_kernel(float* out) {
  float v = static_cast<float>(threadIdx.x & 31);
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (threadIdx.x == 5) *out = v;
}

__global__ void divergent_kernel(float* out) {
  if (threadIdx.x < 16) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  } else {
    __syncthreads();
  }
}

__global__ void early_return_kernel(float* out) {
  if (threadIdx.x == 3) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void exited_lane_kernel(float* out) {
  if (threadIdx.x == 7) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}

__global__ void overrun_kernel(float* out, int n) { out[n + threadIdx.x] = 1.0f; }

// Reads another warp's shared slot, after __syncthreads or (a race) without it.
__global__ void neighbour_kernel(uint32_t* stale, bool sync) {
  __shared__ float slot[32];
  const uint32_t warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  if ((threadIdx.x & 31) == 0) slot[warp] = static_cast<float>(blockIdx.x * 32 + warp);
  if (sync) __syncthreads();
  const uint32_t other = (warp + 1) % n_warps;
  if (slot[other] != static_cast<float>(blockIdx.x * 32 + other)) *stale += 1;  // fibers share one OS thread
}

// Launches on the default stream and returns the launch's error message ("" when it ran).
template <class L, class... A>
std::string run(L launch, A... args) {
  launch(args...);
  cudaGetLastError();  // clears the launch's error; its message is kept below
  std::string msg = emu::device().last_launch_error;
  emu::device().last_launch_error.clear();
  return msg;
}

}  // namespace

}  // namespace bs::cuda_emu

namespace {

namespace emu = bs::cuda_emu::emu;
using bs::cuda_emu::dim3;

// The emulated device for one test: fresh state, the given capability and memory model.
struct EmuDevice {
  explicit EmuDevice(int major = 9, int minor = 0, bool present = true, bool integrated = false) {
    emu::Device& d = emu::device();
    d.present = present;
    d.major = major;
    d.minor = minor;
    d.integrated = integrated;
    d.fail_after = -1;
    bs::cuda_emu::reset();
  }
  ~EmuDevice() {
    emu::device() = emu::Device{};
    bs::cuda_emu::reset();
  }
};

const bs::Backend& emulated() { return bs::cuda_emu::backend(); }

// The real set when this build has it and a usable device answers; else skips t with why.
const bs::Backend* real_device(bt::T& t) {
  const bs::Backend* b = bs::find_backend("cuda");
  if (!b) {
    t.skip("the CUDA set is not compiled into this build (no nvcc)");
    return nullptr;
  }
#ifdef BRAINSTEM_WITH_CUDA
  if (!b->usable()) {
    t.skip(bs::cuda::describe());
    return nullptr;
  }
#endif
  return b;
}

}  // namespace

TEST(cuda_emulation_runs_warps_in_lockstep_and_reports_races) {
  using namespace bs::cuda_emu;
  EmuDevice dev;
  float out[64] = {};
  std::string err = run(BS_LAUNCH(lane_sum_kernel, 1, 32, nullptr), out);
  EXPECT(err.empty() && out[0] == 496.0f) << "shuffle sum of lane ids 0..31: got " << out[0] << " " << err;
  err = run(BS_LAUNCH(divergent_kernel, 1, 32, nullptr), out);
  EXPECT(err.find("divergence") != std::string::npos) << err;
  err = run(BS_LAUNCH(early_return_kernel, 1, 64, nullptr), out);
  EXPECT(err.find("returned") != std::string::npos) << err;
  err = run(BS_LAUNCH(exited_lane_kernel, 1, 32, nullptr), out);
  EXPECT(err.find("exited") != std::string::npos) << err;
  uint32_t stale = 0;
  err = run(BS_LAUNCH(neighbour_kernel, 8, 128, nullptr), &stale, true);
  EXPECT(err.empty() && stale == 0) << err;
  err = run(BS_LAUNCH(neighbour_kernel, 8, 128, nullptr), &stale, false);
  EXPECT(stale > 0) << "a missing __syncthreads went unnoticed";
  void* buf = nullptr;
  EXPECT(cudaMalloc(&buf, 16 * sizeof(float)) == cudaSuccess);
  EXPECT(cudaStreamSynchronize(nullptr) == cudaSuccess);
  run(BS_LAUNCH(overrun_kernel, 1, 32, nullptr), static_cast<float*>(buf), 16);
  EXPECT(cudaStreamSynchronize(nullptr) != cudaSuccess) << "a write past the end of a buffer went unnoticed";
  cudaFree(buf);
}

TEST(cuda_emu_qmatvec_and_qmatmul_match_the_reference) {
  EmuDevice dev;
  bt::check_qmatmul(t, emulated());
}

TEST(cuda_emu_gather_matmul_matches_the_reference) {
  EmuDevice dev;
  bs::cuda_emu::Context ctx;
  bs::cuda_emu::Ops ops(ctx);
  bt::check_gather(
      t, emulated(),
      [&](const bs::WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y, const int32_t* slots,
          int64_t n_experts) { ops.gather_matmul(w, ids, x, m, y, slots, n_experts); });
}

TEST(cuda_emu_dense_lora_embed_norm_rope_elementwise_match_the_reference) {
  EmuDevice dev;
  bt::check_dense_and_lora(t, emulated());
  bt::check_embed(t, emulated());
  bt::check_norm_rope_elementwise(t, emulated());
}

TEST(cuda_emu_attention_and_routing_match_the_reference) {
  EmuDevice dev;
  bt::check_attention(t, emulated());
  bt::check_routing(t, emulated());
}

// The MoE block and the prerouter head chain kernels with the routing ids on the device: one
// host synchronisation per call.
TEST(cuda_emu_moe_block_and_prerouter_sync_once) {
  EmuDevice dev;
  bs::cuda_emu::Context ctx;
  bs::cuda_emu::Ops ops(ctx);
  int syncs = 0;
  bt::check_moe_block(
      t,
      [&](const bs::WeightMatrix& router, const bs::WeightMatrix& gate, const bs::WeightMatrix& up,
          const bs::WeightMatrix& down, const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out) {
        syncs = emu::device().syncs;
        ops.moe_block({&router, &gate, &up, &down}, rp, x, n, out);
      },
      [&](const std::string& desc) { EXPECT(emu::device().syncs - syncs == 1) << desc << ": one host sync"; });
  bt::check_prerouter(t, [&](const bs::WeightMatrix& lin, const bs::WeightMatrix* fc1, const bs::WeightMatrix* fc2,
                             const float* hidden, const int32_t* cur, const int32_t* prev, int k,
                             float* logits) { ops.prerouter(lin, fc1, fc2, hidden, cur, prev, k, logits); });
}

// Weights inside a mapped file go to the device once and stay; over the budget the least
// recently used go first; an integrated device reads the mapped pages in place.
TEST(cuda_emu_mapped_weights_are_uploaded_once) {
  bt::Rng r(40100);
  const auto w = bt::random_affine(r, 1, 64, 256, 4, 64, bs::DType::BF16);
  char path[] = "/tmp/bs-cuda-weights-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT(fd >= 0);
  if (fd < 0) return;
  close(fd);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.w.data()), static_cast<std::streamsize>(w.w.size()));
    f.write(reinterpret_cast<const char*>(w.scales.data()), static_cast<std::streamsize>(w.scales.size()));
    f.write(reinterpret_cast<const char*>(w.biases.data()), static_cast<std::streamsize>(w.biases.size()));
  }
  auto file = bs::MappedFile::open(path);
  std::remove(path);
  bs::WeightMatrix m = w.m;
  m.w = file->data();
  m.scales = m.w + w.w.size();
  m.biases = m.scales + w.scales.size();
  const auto x = bt::random_vec(r, 256);
  std::vector<float> got(64), want(64);
  bs::reference_backend().k.qmatvec(bs::ExecCtx{}, w.m, 0, x.data(), want.data());
  const uint64_t weight_bytes = w.w.size() + w.scales.size() + w.biases.size(), act_bytes = 256 * 4;
  for (bool integrated : {false, true}) {
    EmuDevice dev(9, 0, true, integrated);
    bs::cuda_emu::Context ctx;
    bs::cuda_emu::Ops ops(ctx);
    for (int call = 0; call < 3; ++call) {
      const uint64_t before = emu::device().h2d_bytes;
      ops.qmatmul(m, 0, x.data(), 1, got.data());
      const uint64_t moved = emu::device().h2d_bytes - before;
      const uint64_t expected = act_bytes + (call == 0 && !integrated ? weight_bytes : 0);
      EXPECT(moved == expected) << (integrated ? "integrated" : "discrete") << " call " << call << ": " << moved
                                << " bytes to the device, want " << expected;
      bt::expect_close(t, got, want, 1e-5, "qmatvec from mapped weights");
    }
    EXPECT(ctx.stats().per_call_copies == 0) << ctx.stats().per_call_copies;
  }
  // A budget below one matrix: every call copies the weights again (and stays correct).
  EmuDevice dev;
  bs::cuda_emu::Context ctx;
  bs::cuda_emu::Ops ops(ctx);
  ctx.set_budget(1024);
  ops.qmatmul(m, 0, x.data(), 1, got.data());
  ops.qmatmul(m, 0, x.data(), 1, got.data());
  bt::expect_close(t, got, want, 1e-5, "qmatvec over budget");
  EXPECT(ctx.stats().resident_bytes <= 1024 && ctx.stats().per_call_copies >= 2) << ctx.stats().per_call_copies;
}

TEST(cuda_emu_device_failure_finishes_on_the_reference) {
  EmuDevice dev;
  bt::Rng r(40200);
  const auto w = bt::random_affine(r, 1, 8, 64, 4, 32, bs::DType::BF16);
  const auto x = bt::random_vec(r, 64);
  std::vector<float> got(8), want(8);
  emu::device().fail_after = 2;
  emulated().k.qmatvec(bs::ExecCtx{}, w.m, 0, x.data(), got.data());
  bs::reference_backend().k.qmatvec(bs::ExecCtx{}, w.m, 0, x.data(), want.data());
  EXPECT(got == want);
  EXPECT(!emulated().usable());
  EXPECT(bs::cuda_emu::describe().find("disabled after a device error") != std::string::npos)
      << bs::cuda_emu::describe();
}

TEST(cuda_emu_auto_needs_capability_7_2_and_a_passing_smoke_test) {
  std::string why;
  {
    EmuDevice dev;
    EXPECT(bs::cuda_emu::auto_ready(&why)) << why;
    EXPECT(bs::cuda_emu::describe().find("sm_90") != std::string::npos) << bs::cuda_emu::describe();
    // The emulated device has 512 MiB free: 85% of it for expert slots.
    EXPECT(bs::cuda_emu::describe().find("expert-slot budget 0.4 GiB") != std::string::npos)
        << bs::cuda_emu::describe();
  }
  {
    EmuDevice dev(7, 0);
    EXPECT(!bs::cuda_emu::auto_ready(&why) && why.find("below the 7.2") != std::string::npos) << why;
    EXPECT(!emulated().usable());
  }
  {
    EmuDevice dev(9, 0, false);
    EXPECT(!bs::cuda_emu::auto_ready(&why) && why.find("no usable CUDA") != std::string::npos) << why;
    EXPECT(bs::cuda_emu::describe().find("unavailable") != std::string::npos &&
           bs::cuda_emu::describe().find("no expert-slot budget") != std::string::npos)
        << bs::cuda_emu::describe();
  }
  {
    EmuDevice dev;
    emu::device().fail_after = 5;  // the device dies during the smoke test
    EXPECT(!bs::cuda_emu::auto_ready(&why) && why.find("failed") != std::string::npos) << why;
  }
}

TEST(cuda_device_ops_match_the_reference) {
  const bs::Backend* b = real_device(t);
  if (!b) return;
  bt::check_qmatmul(t, *b);
  bt::check_dense_and_lora(t, *b);
  bt::check_embed(t, *b);
  bt::check_norm_rope_elementwise(t, *b);
  bt::check_attention(t, *b);
  bt::check_routing(t, *b);
}
