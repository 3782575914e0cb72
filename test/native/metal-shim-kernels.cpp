// The Metal kernels compiled as C++ through msl-shim.h, and the shim device that dispatches
// them by name with the bound buffers. Everything here sees MSL's keywords as macros, so the
// standard headers come first.
#include <unistd.h>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

#include "common/error.h"
#include "metal-shim.h"
#include "metal/params.h"

// Last: it defines MSL's keywords as macros.
#include "metal/msl-shim.h"

namespace msl_shim {
using namespace bs::metal;
// The prelude first, as in the library the host compiles; then the kernels.
#include "metal/prelude.metal"

#include "metal/argmax.metal"
#include "metal/attention.metal"
#include "metal/dense-matmul.metal"
#include "metal/elementwise.metal"
#include "metal/embed.metal"
#include "metal/linear-attention.metal"
#include "metal/moe-combine.metal"
#include "metal/prerouter.metal"
#include "metal/qk-norm-rope.metal"
#include "metal/qmatmul.metal"
#include "metal/rmsnorm.metal"
#include "metal/rope.metal"
#include "metal/route-sigmoid-group.metal"
#include "metal/route-softmax-topk.metal"
#include "metal/route-sort.metal"

// Rule breakers for the self-checks.
kernel void shim_divergent(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane < 16) {
    out[lane] = simd_sum(1.0f);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// Reads another simdgroup's threadgroup slot, after a barrier or (a race) without one.
kernel void shim_neighbour(device uint* stale [[buffer(0)]], constant uint& barrier [[buffer(1)]],
                           uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]], uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float slot[32];
  if (lane == 0) slot[sg] = float(tg.x * 32u + sg);
  if (barrier) threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint other = (sg + 1u) % n_sg;
  if (slot[other] != float(tg.x * 32u + other)) stale[0] += 1u;  // fibers share one OS thread
}

kernel void shim_early_return(device float* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 3) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = 1.0f;
}
}  // namespace msl_shim

#undef kernel
#undef device
#undef constant
#undef threadgroup
#undef thread

namespace bt {

namespace {

using msl_shim::Thread;
using Bound = std::vector<uint8_t*>;  // [[buffer(i)]] → its address

template <class T>
T at(const Bound& b, size_t i) {
  return reinterpret_cast<T>(b[i]);
}

struct KernelEntry {
  size_t n_args;
  std::function<void(const Bound&, const Thread&)> run;
};

const std::map<std::string, KernelEntry>& kernels() {
  using namespace msl_shim;
  using U = const uint8_t*;
  using F = const float*;
  using I = const int32_t*;
  static const std::map<std::string, KernelEntry> k = {
      {"bs_qmatmul",
       {10,
        [](const Bound& b, const Thread& t) {
          bs_qmatmul(at<U>(b, 0), at<U>(b, 1), at<U>(b, 2), at<F>(b, 3), at<float*>(b, 4), at<I>(b, 5), at<I>(b, 6),
                     at<I>(b, 7), at<F>(b, 8), *at<const QMatParams*>(b, 9), t.tgid, t.sg, t.lane);
        }}},
      {"bs_qmatmul_set",
       {20,
        [](const Bound& b, const Thread& t) {
          bs_qmatmul_set(at<U>(b, 0), at<U>(b, 1), at<U>(b, 2), at<float*>(b, 3), at<F>(b, 4), at<U>(b, 5), at<U>(b, 6),
                         at<U>(b, 7), at<float*>(b, 8), at<F>(b, 9), at<U>(b, 10), at<U>(b, 11), at<U>(b, 12),
                         at<float*>(b, 13), at<F>(b, 14), at<F>(b, 15), at<I>(b, 16), at<I>(b, 17), at<I>(b, 18),
                         *at<const QMatSetParams*>(b, 19), t.tgid, t.sg, t.lane);
        }}},
      {"bs_route_sort",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_route_sort(at<I>(b, 0), at<int32_t*>(b, 1), *at<const RouteSortParams*>(b, 2), t.tid);
        }}},
      {"bs_dense_matmul",
       {4,
        [](const Bound& b, const Thread& t) {
          bs_dense_matmul(at<U>(b, 0), at<F>(b, 1), at<float*>(b, 2), *at<const DenseParams*>(b, 3), t.tgid, t.tid,
                          t.sg, t.lane);
        }}},
      {"bs_dense_matmul_set",
       {10,
        [](const Bound& b, const Thread& t) {
          bs_dense_matmul_set(at<U>(b, 0), at<F>(b, 1), at<float*>(b, 2), at<U>(b, 3), at<F>(b, 4), at<float*>(b, 5),
                              at<U>(b, 6), at<F>(b, 7), at<float*>(b, 8), *at<const DenseSetParams*>(b, 9), t.tgid,
                              t.tid, t.sg, t.lane);
        }}},
      {"bs_embed",
       {6,
        [](const Bound& b, const Thread& t) {
          bs_embed(at<U>(b, 0), at<U>(b, 1), at<U>(b, 2), at<I>(b, 3), at<float*>(b, 4), *at<const EmbedParams*>(b, 5),
                   t.tgid, t.tid);
        }}},
      {"bs_rmsnorm",
       {8,
        [](const Bound& b, const Thread& t) {
          bs_rmsnorm(at<float*>(b, 0), at<F>(b, 1), at<float*>(b, 2), at<F>(b, 3), at<F>(b, 4),
                     *at<const RmsNormParams*>(b, 5), at<F>(b, 6), at<F>(b, 7), t.tgid, t.tid, t.sg, t.lane, t.n_sg);
        }}},
      {"bs_qk_norm_rope",
       {10,
        [](const Bound& b, const Thread& t) {
          bs_qk_norm_rope(at<float*>(b, 0), at<float*>(b, 1), at<F>(b, 2), at<F>(b, 3), at<I>(b, 4), at<F>(b, 5),
                          at<F>(b, 6), at<uint16_t*>(b, 7), at<uint16_t*>(b, 8), *at<const QkNormRopeParams*>(b, 9),
                          t.tgid, t.sg, t.lane);
        }}},
      {"bs_rope",
       {4,
        [](const Bound& b, const Thread& t) {
          bs_rope(at<float*>(b, 0), at<I>(b, 1), at<F>(b, 2), *at<const RopeParams*>(b, 3), t.tgid, t.tid);
        }}},
      {"bs_attention",
       {5,
        [](const Bound& b, const Thread& t) {
          bs_attention(at<F>(b, 0), at<U>(b, 1), at<U>(b, 2), at<float*>(b, 3), *at<const AttentionParams*>(b, 4),
                       t.tgid, t.tid, t.sg, t.lane, t.n_sg);
        }}},
      {"bs_route_softmax_topk",
       {4,
        [](const Bound& b, const Thread& t) {
          bs_route_softmax_topk(at<F>(b, 0), at<int32_t*>(b, 1), at<float*>(b, 2), *at<const SoftmaxTopKParams*>(b, 3),
                                t.tgid, t.lane);
        }}},
      {"bs_route_sigmoid_group",
       {5,
        [](const Bound& b, const Thread& t) {
          bs_route_sigmoid_group(at<F>(b, 0), at<F>(b, 1), at<int32_t*>(b, 2), at<float*>(b, 3),
                                 *at<const SigmoidGroupParams*>(b, 4), t.tgid, t.lane);
        }}},
      {"bs_silu_mul",
       {4,
        [](const Bound& b, const Thread& t) {
          bs_silu_mul(at<F>(b, 0), at<F>(b, 1), at<float*>(b, 2), *at<const ElementwiseParams*>(b, 3), t.tgid, t.tid);
        }}},
      {"bs_add",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_add(at<F>(b, 0), at<float*>(b, 1), *at<const ElementwiseParams*>(b, 2), t.tgid, t.tid);
        }}},
      {"bs_add_rows",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_add_rows(at<F>(b, 0), at<float*>(b, 1), *at<const BiasParams*>(b, 2), t.tgid, t.tid);
        }}},
      {"bs_to_f16",
       {5,
        [](const Bound& b, const Thread& t) {
          bs_to_f16(at<F>(b, 0), at<uint16_t*>(b, 1), at<F>(b, 2), at<uint16_t*>(b, 3),
                    *at<const ElementwiseParams*>(b, 4), t.tgid, t.tid);
        }}},
      {"bs_copy",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_copy(at<const uint32_t*>(b, 0), at<uint32_t*>(b, 1), *at<const ElementwiseParams*>(b, 2), t.tgid, t.tid);
        }}},
      {"bs_sigmoid_mul",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_sigmoid_mul(at<float*>(b, 0), at<F>(b, 1), *at<const GateParams*>(b, 2), t.tgid, t.tid);
        }}},
      {"bs_copy_heads",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_copy_heads(at<F>(b, 0), at<float*>(b, 1), *at<const HeadCopyParams*>(b, 2), t.tgid, t.tid);
        }}},
      {"bs_causal_conv",
       {5,
        [](const Bound& b, const Thread& t) {
          bs_causal_conv(at<F>(b, 0), at<float*>(b, 1), at<F>(b, 2), at<float*>(b, 3), *at<const ConvParams*>(b, 4),
                         t.tgid, t.tid);
        }}},
      {"bs_delta_rule",
       {8,
        [](const Bound& b, const Thread& t) {
          bs_delta_rule(at<F>(b, 0), at<F>(b, 1), at<F>(b, 2), at<F>(b, 3), at<F>(b, 4), at<float*>(b, 5),
                        at<float*>(b, 6), *at<const DeltaParams*>(b, 7), t.tgid, t.lane);
        }}},
      {"bs_lightning_rule",
       {7,
        [](const Bound& b, const Thread& t) {
          bs_lightning_rule(at<F>(b, 0), at<F>(b, 1), at<F>(b, 2), at<F>(b, 3), at<float*>(b, 4), at<float*>(b, 5),
                            *at<const LightningParams*>(b, 6), t.tgid, t.lane);
        }}},
      {"bs_argmax",
       {3,
        [](const Bound& b, const Thread& t) {
          bs_argmax(at<F>(b, 0), at<int32_t*>(b, 1), *at<const ElementwiseParams*>(b, 2), t.tid, t.sg, t.lane, t.n_sg);
        }}},
      {"bs_moe_combine",
       {4,
        [](const Bound& b, const Thread& t) {
          bs_moe_combine(at<F>(b, 0), at<F>(b, 1), at<float*>(b, 2), *at<const CombineParams*>(b, 3), t.tgid, t.tid);
        }}},
      {"bs_prerouter_linear",
       {6,
        [](const Bound& b, const Thread& t) {
          bs_prerouter_linear(at<U>(b, 0), at<F>(b, 1), at<I>(b, 2), at<I>(b, 3), at<float*>(b, 4),
                              *at<const PrerouterParams*>(b, 5), t.tgid, t.sg, t.lane);
        }}},
  };
  return k;
}

// Shared memory with a guard band after it, checked after every command list: a kernel that
// writes past its buffer fails the run.
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

class ShimBuffer : public bs::metal::Buffer {
 public:
  ShimBuffer(uint8_t* p, size_t n) : p_(p), n_(n) {}
  explicit ShimBuffer(size_t n) : own_(n + kGuard, 0xff), p_(own_.data()), n_(n) {
    std::memset(p_ + n, kGuardByte, kGuard);
  }
  uint8_t* contents() override { return p_; }
  size_t size() const override { return n_; }
  bool guard_intact() const {
    for (size_t i = 0; i < (own_.empty() ? 0 : kGuard); ++i) {
      if (p_[n_ + i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  std::vector<uint8_t> own_;
  uint8_t* p_;
  size_t n_;
};

class ShimList : public bs::metal::CommandList {
 public:
  explicit ShimList(ShimDevice& d) : d_(d) {}
  void dispatch(const char* kernel, bs::metal::Grid g, uint32_t threads,
                const std::vector<bs::metal::Arg>& args) override {
    Recorded r{kernel, g, threads, {}, {}};
    for (const bs::metal::Arg& a : args) {
      // Metal's setBytes takes at most 4 KB; bigger argument blocks need a buffer.
      if (a.bytes && a.len > 4096)
        bs::fail("msl shim: ", kernel, " argument ", r.args.size(), " of ", a.len,
                 " bytes: setBytes takes at most 4096");
      std::vector<uint8_t> bytes;
      if (a.bytes) bytes.assign(static_cast<const uint8_t*>(a.bytes), static_cast<const uint8_t*>(a.bytes) + a.len);
      r.args.push_back(a);
      r.bytes.push_back(std::move(bytes));
    }
    recorded_.push_back(std::move(r));
  }
  void commit_and_wait() override {
    for (Recorded& r : recorded_) {
      auto it = kernels().find(r.kernel);
      if (it == kernels().end()) bs::fail("msl shim: no kernel named ", r.kernel);
      if (r.args.size() != it->second.n_args) {
        bs::fail("msl shim: ", r.kernel, " takes ", it->second.n_args, " buffers, got ", r.args.size());
      }
      Bound bound;
      for (size_t i = 0; i < r.args.size(); ++i) {
        const bs::metal::Arg& a = r.args[i];
        bound.push_back(a.buf ? a.buf->contents() + a.offset : r.bytes[i].data());
        if (a.buf) buffers_.push_back(static_cast<ShimBuffer*>(a.buf));
      }
      try {
        msl_shim::dispatch(
            {r.grid.x, r.grid.y, r.grid.z}, r.threads, [&](const Thread& t) { it->second.run(bound, t); }, d_.seed++);
      } catch (const std::runtime_error& e) {
        bs::fail(r.kernel, ": ", e.what());
      }
      ++d_.dispatches;
      ++d_.by_kernel[r.kernel];
    }
    ++d_.commits;
    for (const ShimBuffer* b : buffers_) {
      if (!b->guard_intact()) bs::fail("msl shim: a kernel wrote past the end of a buffer");
    }
  }

 private:
  struct Recorded {
    std::string kernel;
    bs::metal::Grid grid;
    uint32_t threads;
    std::vector<bs::metal::Arg> args;
    std::vector<std::vector<uint8_t>> bytes;
  };
  ShimDevice& d_;
  std::vector<Recorded> recorded_;
  std::vector<const ShimBuffer*> buffers_;
};

std::string run_selftest(const std::function<void(const Thread&)>& body, uint32_t threads) {
  try {
    msl_shim::dispatch({1, 1, 1}, threads, body, 7);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

std::unique_ptr<bs::metal::Buffer> ShimDevice::alloc(size_t bytes) { return std::make_unique<ShimBuffer>(bytes); }

std::unique_ptr<bs::metal::Buffer> ShimDevice::wrap(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (reinterpret_cast<uintptr_t>(p) % page || bytes % page) bs::fail("msl shim: wrap of an unaligned range");
  if (refuse_wraps) return nullptr;
  ++wraps;
  return std::make_unique<ShimBuffer>(static_cast<uint8_t*>(p), bytes);
}

std::unique_ptr<bs::metal::CommandList> ShimDevice::begin() { return std::make_unique<ShimList>(*this); }

std::vector<std::string> shim_kernel_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : kernels()) names.push_back(name);
  return names;
}

std::string shim_divergent_simd() {
  float out[32] = {};
  return run_selftest([&](const Thread& t) { msl_shim::shim_divergent(out, t.lane); }, 32);
}

std::string shim_barrier_after_return() {
  float out[64] = {};
  return run_selftest([&](const Thread& t) { msl_shim::shim_early_return(out, t.tid); }, 64);
}

int shim_stale_reads(bool barrier) {
  uint32_t stale = 0;
  const uint32_t b = barrier ? 1 : 0;
  msl_shim::dispatch(
      {8, 1, 1}, 128, [&](const Thread& t) { msl_shim::shim_neighbour(&stale, b, t.tgid, t.sg, t.lane, t.n_sg); }, 11);
  return static_cast<int>(stale);
}

std::string shim_lane_sum(float& sum) {
  return run_selftest(
      [&](const Thread& t) {
        const float s = msl_shim::simd_sum(static_cast<float>(t.lane));
        if (t.lane == 5) sum = s;
      },
      32);
}

}  // namespace bt
