// Recurrent-state snapshots (tens of MB for a hybrid model) are filled whole right after they
// grow: resize leaves their floats uninitialised and copy_state writes them over the pool, so a
// new buffer's pages are first touched by every thread instead of zeroed, then copied, by one.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "common/backend.h"

namespace bs {

template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  // Default-initialisation: nothing for a float (value-initialisation would write a zero).
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
};

using StateBuffer = std::vector<float, NoInitAllocator<float>>;

// dst = src[0, n) in 1 MiB ranges over ctx's threads (the caller holds the model's pool). A
// page's first touch costs a fault and the kernel's zeroing: 63 MB took 32-45 ms on one core of
// a 2-vCPU VM, 19-26 ms on two.
inline void copy_state(const ExecCtx& ctx, const float* src, int64_t n, StateBuffer& dst) {
  dst.resize(static_cast<size_t>(n));
  float* out = dst.data();
  ctx.parallel_for(
      n, [&](int64_t a, int64_t b) { std::memcpy(out + a, src + a, static_cast<size_t>(b - a) * sizeof(float)); },
      int64_t{1} << 18);
}

}  // namespace bs
