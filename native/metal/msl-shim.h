// Compiles Metal Shading Language kernels as C++ on a CPU, for the native tests: address-space
// qualifiers vanish, `half` and as_type are emulated, and each threadgroup runs as one fiber
// per thread (ucontext) under a scheduler that keeps SIMD semantics honest: 32-lane simdgroups
// whose simd_* calls are resolved only when every live lane of the simdgroup has reached one,
// threadgroup_barrier released only when every thread has, lanes resumed in a shuffled order
// each phase, and divergence (lanes at different barriers, a thread exiting before a barrier,
// a deadlock) reported as an error. Threadgroup arrays are function statics: one group runs
// at a time. Include after every standard header: it defines MSL's keywords as macros.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/prng.h"

// MSL's [[buffer(i)]]-style attributes are unknown to a C++ compiler: ignored, silently.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-attributes"
#else
#pragma GCC diagnostic ignored "-Wattributes"
#endif

namespace msl_shim {

using uint = uint32_t;
using ushort = uint16_t;
using uchar = uint8_t;

struct uint3 {
  uint x = 0, y = 0, z = 0;
};

// IEEE binary16, converted like the CPU side (common/dtype.h).
struct half {
  uint16_t bits;
  operator float() const { return bs::f16_to_f32(bits); }
};

template <class To, class From>
To as_type(From v) {
  static_assert(sizeof(To) == sizeof(From), "as_type reinterprets equal sizes");
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

enum class mem_flags { mem_none, mem_device, mem_threadgroup };

using std::cos;
using std::exp;
using std::exp2;
using std::fabs;
using std::sin;
using std::sqrt;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline uint max(uint a, uint b) { return a > b ? a : b; }
inline uint min(uint a, uint b) { return a < b ? a : b; }

// Where a thread sits, as the kernel's position attributes report it (1-D threadgroups).
struct Thread {
  uint3 tgid;
  uint tid = 0, lane = 0, sg = 0, n_sg = 0, threads = 0;
};

namespace detail {

enum class State { Run, Simd, Barrier, Done };
enum class Kind { Sum, Max, Min, Barrier };
enum class Type { F32, U32 };

struct Lane {
  ucontext_t ctx;
  State state = State::Run;
  Kind kind = Kind::Sum;
  Type type = Type::F32;
  uint64_t in = 0, out = 0;  // the value posted to a simd op, and its result
  Thread th;
};

struct Group {
  std::vector<Lane> lanes;
  ucontext_t main;
  size_t current = 0;
  const std::function<void(const Thread&)>* body = nullptr;
  std::string error;
};

inline Group*& group() {
  static thread_local Group* g = nullptr;
  return g;
}

inline void yield() {
  Group& g = *group();
  swapcontext(&g.lanes[g.current].ctx, &g.main);
}

inline void entry() {
  Group& g = *group();
  Lane& l = g.lanes[g.current];
  (*g.body)(l.th);
  g.lanes[g.current].state = State::Done;
  swapcontext(&g.lanes[g.current].ctx, &g.main);
}

template <class T>
T reduce(Kind k, T a, T b) {
  switch (k) {
    case Kind::Sum: return a + b;
    case Kind::Max: return std::max(a, b);
    default: return std::min(a, b);
  }
}

// Butterfly over 32 lanes (offsets 16, 8, 4, 2, 1), inactive lanes holding the identity: every
// lane ends with the same bits, as on the GPU.
template <class T>
T butterfly(Kind k, std::vector<Lane*>& sg) {
  using L = std::numeric_limits<T>;
  const T lo = L::has_infinity ? -L::infinity() : L::lowest(), hi = L::has_infinity ? L::infinity() : L::max();
  T v[32];
  const T neutral = k == Kind::Sum ? T(0) : k == Kind::Max ? lo : hi;
  for (T& x : v) x = neutral;
  for (Lane* l : sg) std::memcpy(&v[l->th.lane], &l->in, sizeof(T));
  for (int off = 16; off > 0; off /= 2) {
    T next[32];
    for (int i = 0; i < 32; ++i) next[i] = reduce(k, v[i], v[i ^ off]);
    std::memcpy(v, next, sizeof v);
  }
  return v[0];
}

// Resolves the simd op every live lane of one simdgroup waits at; false when they disagree.
inline bool resolve_simd(std::vector<Lane*>& sg, std::string& error) {
  const Lane& first = *sg.front();
  for (Lane* l : sg) {
    if (l->state != State::Simd || l->kind != first.kind || l->type != first.type) {
      error = "simdgroup " + std::to_string(first.th.sg) + " of threadgroup (" + std::to_string(first.th.tgid.x) +
              ", " + std::to_string(first.th.tgid.y) + "): lanes reached different simd/barrier calls (divergence)";
      return false;
    }
  }
  uint64_t bits = 0;
  if (first.kind != Kind::Barrier) {
    if (first.type == Type::F32) {
      const float r = butterfly<float>(first.kind, sg);
      std::memcpy(&bits, &r, sizeof r);
    } else {
      const uint r = butterfly<uint>(first.kind, sg);
      std::memcpy(&bits, &r, sizeof r);
    }
  }
  for (Lane* l : sg) {
    l->out = bits;
    l->state = State::Run;
  }
  return true;
}

inline std::vector<std::unique_ptr<char[]>>& stacks() {
  static thread_local std::vector<std::unique_ptr<char[]>> s;
  return s;
}
constexpr size_t kStack = 64 * 1024;

// Points ctx at entry() on its own stack (apart, as getcontext returns twice).
[[gnu::noinline]] inline void start_fiber(ucontext_t& ctx, char* stack) {
  getcontext(&ctx);
  ctx.uc_stack.ss_sp = stack;
  ctx.uc_stack.ss_size = kStack;
  ctx.uc_link = nullptr;
  makecontext(&ctx, entry, 0);
}

// Runs one threadgroup of `threads` threads to completion; returns an error message or "".
inline std::string run_group(uint3 tgid, uint threads, const std::function<void(const Thread&)>& body,
                             bs::SplitMix& rng) {
  Group g;
  g.body = &body;
  g.lanes.resize(threads);
  while (stacks().size() < threads) stacks().push_back(std::make_unique<char[]>(kStack));
  const uint n_sg = (threads + 31) / 32;
  for (uint t = 0; t < threads; ++t) {
    Lane& l = g.lanes[t];
    l.th = Thread{tgid, t, t % 32, t / 32, n_sg, threads};
    start_fiber(l.ctx, stacks()[t].get());
  }
  Group* saved = group();
  group() = &g;
  std::vector<uint> order(threads);
  for (uint t = 0; t < threads; ++t) order[t] = t;
  for (;;) {
    for (uint i = threads; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    for (uint t : order) {
      if (g.lanes[t].state != State::Run) continue;
      g.current = t;
      swapcontext(&g.main, &g.lanes[t].ctx);
    }
    bool progressed = false, all_done = true, any_done = false, all_barrier = true;
    for (uint s = 0; s < n_sg && g.error.empty(); ++s) {
      std::vector<Lane*> live;
      for (uint t = s * 32; t < std::min(threads, s * 32 + 32); ++t) {
        if (g.lanes[t].state != State::Done) live.push_back(&g.lanes[t]);
      }
      const bool waits_simd =
          std::any_of(live.begin(), live.end(), [](const Lane* l) { return l->state == State::Simd; });
      if (waits_simd && resolve_simd(live, g.error)) progressed = true;
    }
    for (const Lane& l : g.lanes) {
      all_done = all_done && l.state == State::Done;
      any_done = any_done || l.state == State::Done;
      all_barrier = all_barrier && (l.state == State::Barrier || l.state == State::Done);
    }
    if (!g.error.empty() || all_done) break;
    if (progressed) continue;
    if (all_barrier && any_done) {
      g.error = "threadgroup_barrier in threadgroup (" + std::to_string(tgid.x) + ", " + std::to_string(tgid.y) +
                ") not reached by threads that returned";
      break;
    }
    if (!all_barrier) {
      g.error = "deadlock in threadgroup (" + std::to_string(tgid.x) + ", " + std::to_string(tgid.y) + ")";
      break;
    }
    for (Lane& l : g.lanes) l.state = State::Run;
  }
  group() = saved;
  return g.error;
}

template <class T>
T simd_op(Kind k, T v) {
  Group& g = *group();
  Lane& l = g.lanes[g.current];
  l.kind = k;
  l.type = std::is_floating_point<T>::value ? Type::F32 : Type::U32;
  l.in = 0;
  std::memcpy(&l.in, &v, sizeof v);
  l.state = State::Simd;
  yield();
  T r;
  std::memcpy(&r, &g.lanes[g.current].out, sizeof r);
  return r;
}

}  // namespace detail

inline float simd_sum(float v) { return detail::simd_op(detail::Kind::Sum, v); }
inline float simd_max(float v) { return detail::simd_op(detail::Kind::Max, v); }
inline uint simd_min(uint v) { return detail::simd_op(detail::Kind::Min, v); }
inline void simdgroup_barrier(mem_flags) { detail::simd_op(detail::Kind::Barrier, 0u); }
inline void threadgroup_barrier(mem_flags) {
  detail::Group& g = *detail::group();
  g.lanes[g.current].state = detail::State::Barrier;
  detail::yield();
}

// Runs `body` for every thread of a grid of threadgroups (groups in order, threads as fibers);
// throws std::runtime_error on divergence or deadlock. `seed` shuffles the lanes' order.
inline void dispatch(uint3 groups, uint threads, const std::function<void(const Thread&)>& body, uint64_t seed) {
  bs::SplitMix rng(seed);
  for (uint z = 0; z < groups.z; ++z) {
    for (uint y = 0; y < groups.y; ++y) {
      for (uint x = 0; x < groups.x; ++x) {
        const std::string err = detail::run_group(uint3{x, y, z}, threads, body, rng);
        if (!err.empty()) throw std::runtime_error("msl shim: " + err);
      }
    }
  }
}

}  // namespace msl_shim

// MSL's address-space and function qualifiers, for the .metal sources that follow.
#define kernel
#define device
#define constant const
#define threadgroup static
#define thread
