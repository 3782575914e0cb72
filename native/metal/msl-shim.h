// Compiles Metal Shading Language kernels as C++ on a CPU, for the native tests: address-space
// qualifiers vanish, `half`, as_type and threadgroup atomics are emulated, and threadgroups run on the lockstep
// fiber scheduler (common/lockstep.h: 32-lane simdgroups, barriers, divergence reported as an
// error). Threadgroup arrays are function statics: one group runs at a time. Include after
// every standard header: it defines MSL's keywords as macros.
#pragma once

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
#include "common/lockstep.h"

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

using uint3 = bs::lockstep::Idx3;
// A pair of words read in one 8-byte load (only loaded, never built, by the kernels).
struct uint2 {
  uint32_t x, y;
};

// IEEE binary16, converted like the CPU side (common/dtype.h).
struct half {
  uint16_t bits;
  half() = default;
  explicit half(float f) : bits(bs::f32_to_f16(f)) {}
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
using std::log;
using std::sin;
using std::sqrt;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline uint max(uint a, uint b) { return a > b ? a : b; }
inline uint min(uint a, uint b) { return a < b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }

// Threadgroup atomics: lanes run one at a time between scheduling points (barriers, simdgroup
// calls), so a plain read-modify-write is atomic.
struct atomic_int {
  int v;
};
enum memory_order { memory_order_relaxed };
inline void atomic_store_explicit(atomic_int* a, int v, memory_order) { a->v = v; }
inline int atomic_load_explicit(const atomic_int* a, memory_order) { return a->v; }
inline int atomic_fetch_add_explicit(atomic_int* a, int v, memory_order) {
  const int old = a->v;
  a->v = old + v;
  return old;
}

using Thread = bs::lockstep::Thread;

inline float simd_sum(float v) { return bs::lockstep::simd_reduce(bs::lockstep::Kind::Sum, v); }
inline float simd_max(float v) { return bs::lockstep::simd_reduce(bs::lockstep::Kind::Max, v); }
inline uint simd_min(uint v) { return bs::lockstep::simd_reduce(bs::lockstep::Kind::Min, v); }
inline void simdgroup_barrier(mem_flags) { bs::lockstep::simd_barrier(); }
inline void threadgroup_barrier(mem_flags) { bs::lockstep::group_barrier(); }

// Runs `body` for every thread of a grid of threadgroups; throws std::runtime_error on
// divergence or deadlock. `seed` shuffles the lanes' order.
inline void dispatch(uint3 groups, uint threads, const std::function<void(const Thread&)>& body, uint64_t seed) {
  try {
    bs::lockstep::dispatch(groups, threads, body, seed);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("msl shim: ") + e.what());
  }
}

}  // namespace msl_shim

// MSL's address-space and function qualifiers, for the .metal sources that follow.
#define kernel
#define device
#define constant const
#define threadgroup static
#define thread
