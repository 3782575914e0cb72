// A non-owning reference to a callable: what parallel loops take instead of std::function,
// which may heap-allocate for a lambda with several captures (none allowed on the decode path).
// The callable must outlive the call it is passed to.
#pragma once
#include <memory>
#include <type_traits>
#include <utility>

namespace bs {

template <class Sig>
class FunctionRef;

template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                              std::is_invocable_r_v<R, F&, A...>>>
  FunctionRef(F&& f)  // NOLINT: implicit, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))), call_([](void* o, A... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...);
        }) {}

  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

// fn(begin, end): one contiguous range of a parallel loop.
using RangeFn = FunctionRef<void(int64_t, int64_t)>;

}  // namespace bs
