#include "common/io/prefaulter.h"

#include <sched.h>

#include <algorithm>

#include "common/io/read-hints.h"

namespace bs {

namespace {
// Bytes per madvise call: a dispose waits for at most one (80 ms from a 100 MB/s card, cold).
constexpr uint64_t kStep = 8ull << 20;
}  // namespace

Prefaulter::Prefaulter(std::vector<Span> spans, After after) : spans_(std::move(spans)), after_(std::move(after)) {
  for (const Span& s : spans_) total_ += s.second;
  thread_ = std::thread([this] { run(); });
}

Prefaulter::~Prefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

void Prefaulter::run() {
#if defined(__linux__)
  // Only on otherwise idle CPU time: mapping must not slow the requests it is for.
  const sched_param idle{};
  ::sched_setscheduler(0, SCHED_IDLE, &idle);
#endif
  bool advised = false;  // some step could only advise the OS (no MADV_POPULATE_READ)
  std::vector<unsigned char> pages;
  for (const Span& s : spans_) {
    for (uint64_t off = 0; off < s.second; off += kStep) {
      if (stop_.load(std::memory_order_relaxed)) {
        state_.store(State::Stopped, std::memory_order_release);
        return;
      }
      const uint8_t* p = s.first + off;
      const uint64_t n = std::min(kStep, s.second - off);
      // What is not cached is read in one large request first: populating faults page by page,
      // and the expert ranges are MADV_RANDOM (no readahead): cold, that read 4 KiB at a time.
      const bool cached = range_resident(p, n, pages);
      if (!cached) advise_willneed(p, n);
      if (!populate_read(p, n)) advised = true;
      done_.fetch_add(n, std::memory_order_relaxed);
    }
  }
  if (after_) {
    after_(stop_, after_done_);
    if (stop_.load(std::memory_order_relaxed)) {
      state_.store(State::Stopped, std::memory_order_release);
      return;
    }
  }
  state_.store(advised ? State::Advised : State::Mapped, std::memory_order_release);
}

Prefaulter::Status Prefaulter::status() const {
  const State st = state_.load(std::memory_order_acquire);
  return {st, done_.load(std::memory_order_relaxed), total_, after_done_.load(std::memory_order_relaxed)};
}

const char* prefault_state_name(Prefaulter::State s) {
  switch (s) {
    case Prefaulter::State::Running: return "running";
    case Prefaulter::State::Mapped: return "mapped";
    case Prefaulter::State::Advised: return "advised";
    case Prefaulter::State::Stopped: return "stopped";
  }
  return "stopped";
}

}  // namespace bs
