// The one exception type of the loading path: a message a user can act on.
// Kernels never throw; the N-API layer turns this into a rejected promise.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace bs {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Concatenates the arguments with operator<< and throws bs::Error.
template <class... A>
[[noreturn]] void fail(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

}  // namespace bs
