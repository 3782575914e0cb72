// Starting a group of threads when the system may refuse some (EAGAIN at a thread or memory
// limit): the refusal ends the loop instead of unwinding past joinable threads (std::terminate).
#pragma once
#include <exception>
#include <thread>
#include <vector>

namespace bs {

// Appends up to n threads running fn(i) to `out`; returns how many started.
template <class F>
int start_threads(std::vector<std::thread>& out, int n, F fn) {
  for (int i = 0; i < n; ++i) {
    try {
      out.emplace_back(fn, i);
    } catch (const std::exception&) {
      return i;
    }
  }
  return n;
}

}  // namespace bs
