// Runs GPU kernels written for Metal or CUDA as C++ on a CPU, for the native tests: each
// threadgroup (CUDA: block) runs as one fiber per thread (ucontext) under a scheduler that keeps
// SIMD semantics honest: 32-lane simdgroups (warps) whose collective calls (reductions,
// shuffles, warp barriers) are resolved only when every live lane has reached one, the group
// barrier released only when every thread has, lanes resumed in a shuffled order each phase,
// and divergence (lanes at different collectives, a thread exiting before a barrier, a shuffle
// reading an exited lane, a deadlock) reported as an error. One group runs at a time, so
// threadgroup (shared) memory can be a function static. msl-shim.h and cuda/cuda-emu.h put each
// language's names on top of this.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/prng.h"

namespace bs::lockstep {

struct Idx3 {
  uint32_t x = 0, y = 0, z = 0;
};

// Where a thread sits (1-D groups): group index, thread in group, lane and simdgroup.
struct Thread {
  Idx3 tgid;
  uint32_t tid = 0, lane = 0, sg = 0, n_sg = 0, threads = 0;
};

enum class Kind { Sum, Max, Min, Shuffle, WarpBarrier };

namespace detail {

enum class State { Run, Simd, Barrier, Done };
enum class Type { F32, U32, Bits };

struct Lane {
  ucontext_t ctx;
  State state = State::Run;
  Kind kind = Kind::Sum;
  Type type = Type::F32;
  size_t size = 0;           // bytes of the posted value
  uint32_t src = 0;          // a shuffle's source lane
  uint64_t in = 0, out = 0;  // the value posted to a collective, and its result
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

inline std::string where(const Thread& th) {
  return "simdgroup " + std::to_string(th.sg) + " of threadgroup (" + std::to_string(th.tgid.x) + ", " +
         std::to_string(th.tgid.y) + ", " + std::to_string(th.tgid.z) + ")";
}

// Resolves the collective every live lane of one simdgroup waits at; false when they disagree.
inline bool resolve_simd(std::vector<Lane*>& sg, std::string& error) {
  const Lane& first = *sg.front();
  for (Lane* l : sg) {
    if (l->state != State::Simd || l->kind != first.kind || l->type != first.type || l->size != first.size) {
      error = where(first.th) + ": lanes reached different simd/barrier calls (divergence)";
      return false;
    }
  }
  if (first.kind == Kind::Shuffle) {
    Lane* by_lane[32] = {};
    for (Lane* l : sg) by_lane[l->th.lane] = l;
    for (Lane* l : sg) {
      const Lane* src = l->src < 32 ? by_lane[l->src] : nullptr;
      if (!src) {
        error = where(first.th) + ": lane " + std::to_string(l->th.lane) + " shuffles from lane " +
                std::to_string(l->src) + ", which has exited or does not exist";
        return false;
      }
      l->out = src->in;
    }
  } else {
    uint64_t bits = 0;
    if (first.kind != Kind::WarpBarrier) {
      if (first.type == Type::F32) {
        const float r = butterfly<float>(first.kind, sg);
        std::memcpy(&bits, &r, sizeof r);
      } else {
        const uint32_t r = butterfly<uint32_t>(first.kind, sg);
        std::memcpy(&bits, &r, sizeof r);
      }
    }
    for (Lane* l : sg) l->out = bits;
  }
  for (Lane* l : sg) l->state = State::Run;
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
inline std::string run_group(Idx3 tgid, uint32_t threads, const std::function<void(const Thread&)>& body,
                             bs::SplitMix& rng) {
  Group g;
  g.body = &body;
  g.lanes.resize(threads);
  while (stacks().size() < threads) stacks().push_back(std::make_unique<char[]>(kStack));
  const uint32_t n_sg = (threads + 31) / 32;
  for (uint32_t t = 0; t < threads; ++t) {
    Lane& l = g.lanes[t];
    l.th = Thread{tgid, t, t % 32, t / 32, n_sg, threads};
    start_fiber(l.ctx, stacks()[t].get());
  }
  Group* saved = group();
  group() = &g;
  std::vector<uint32_t> order(threads);
  for (uint32_t t = 0; t < threads; ++t) order[t] = t;
  const std::string at =
      "threadgroup (" + std::to_string(tgid.x) + ", " + std::to_string(tgid.y) + ", " + std::to_string(tgid.z) + ")";
  for (;;) {
    for (uint32_t i = threads; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    for (uint32_t t : order) {
      if (g.lanes[t].state != State::Run) continue;
      g.current = t;
      swapcontext(&g.main, &g.lanes[t].ctx);
    }
    bool progressed = false, all_done = true, any_done = false, all_barrier = true;
    for (uint32_t s = 0; s < n_sg && g.error.empty(); ++s) {
      std::vector<Lane*> live;
      for (uint32_t t = s * 32; t < std::min(threads, s * 32 + 32); ++t) {
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
      g.error = "threadgroup_barrier in " + at + " not reached by threads that returned";
      break;
    }
    if (!all_barrier) {
      g.error = "deadlock in " + at;
      break;
    }
    for (Lane& l : g.lanes) l.state = State::Run;
  }
  group() = saved;
  return g.error;
}

template <class T>
T collective(Kind k, T v, uint32_t src = 0) {
  static_assert(std::is_trivially_copyable<T>::value && (sizeof(T) == 4 || sizeof(T) == 8));
  Group& g = *group();
  Lane& l = g.lanes[g.current];
  l.kind = k;
  l.type = k == Kind::Shuffle ? Type::Bits : std::is_floating_point<T>::value ? Type::F32 : Type::U32;
  l.size = sizeof(T);
  l.src = src;
  l.in = 0;
  std::memcpy(&l.in, &v, sizeof v);
  l.state = State::Simd;
  yield();
  T r;
  std::memcpy(&r, &g.lanes[g.current].out, sizeof r);
  return r;
}

}  // namespace detail

// The calling fiber's position (inside a dispatch only).
inline const Thread& current() {
  detail::Group& g = *detail::group();
  return g.lanes[g.current].th;
}

// Collectives over the calling lane's simdgroup (float or uint32 reductions; any 4- or 8-byte
// value for a shuffle, which returns lane `src`'s value).
inline float simd_reduce(Kind k, float v) { return detail::collective(k, v); }
inline uint32_t simd_reduce(Kind k, uint32_t v) { return detail::collective(k, v); }
template <class T>
T simd_shuffle(T v, uint32_t src) {
  return detail::collective(Kind::Shuffle, v, src);
}
inline void simd_barrier() { detail::collective(Kind::WarpBarrier, 0u); }
inline void group_barrier() {
  detail::Group& g = *detail::group();
  g.lanes[g.current].state = detail::State::Barrier;
  detail::yield();
}

// Runs `body` for every thread of a grid of groups (groups in order, threads as fibers); throws
// std::runtime_error on divergence or deadlock. `seed` shuffles the lanes' order.
inline void dispatch(Idx3 groups, uint32_t threads, const std::function<void(const Thread&)>& body, uint64_t seed) {
  bs::SplitMix rng(seed);
  for (uint32_t z = 0; z < groups.z; ++z) {
    for (uint32_t y = 0; y < groups.y; ++y) {
      for (uint32_t x = 0; x < groups.x; ++x) {
        const std::string err = detail::run_group(Idx3{x, y, z}, threads, body, rng);
        if (!err.empty()) throw std::runtime_error(err);
      }
    }
  }
}

}  // namespace bs::lockstep
