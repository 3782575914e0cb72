// The one exception type of the loading path: a message a user can act on.
// Kernels never throw; the N-API layer turns this into a rejected promise.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace bs {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
  Error(const std::string& message, std::string option, std::string detail)
      : std::runtime_error(message), option(std::move(option)), detail(std::move(detail)) {}
  // A refused load option: its name as JS passes it ("topK") and the rule without the name, so
  // a caller can name its own flag for it; both empty for other errors.
  std::string option, detail;
};

// Concatenates the arguments with operator<< and throws bs::Error.
template <class... A>
[[noreturn]] void fail(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

// Throws bs::Error "<option> (<what>): <detail>" for a refused option, `detail` concatenated.
template <class... A>
[[noreturn]] void fail_option(const char* option, const char* what, const A&... detail) {
  std::ostringstream os;
  (os << ... << detail);
  throw Error(std::string(option) + " (" + what + "): " + os.str(), option, os.str());
}

}  // namespace bs
