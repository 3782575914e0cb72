#include "cpu/thread-pool.h"

#include "common/start-threads.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define BS_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define BS_PAUSE() asm volatile("yield")
#else
#define BS_PAUSE() ((void)0)
#endif

namespace bs {

namespace {

// How long an idle worker spins before it sleeps: longer than the serial gaps between the
// loops of one decode step (norms, routing: µs), short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(300);

// Index of a loop being announced: no range can be claimed until the owner publishes index 0.
constexpr int64_t kClosed = 0xffffffffll;

constexpr uint32_t gen_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
constexpr int64_t index_of(uint64_t s) { return static_cast<int64_t>(s & 0xffffffffu); }

// Touches the top 256 KiB of a new worker's stack once, so the kernels' stack scratch (tens of
// KiB: scales of four rows, attention blocks) is resident before the first loop and a decode
// step never faults in a stack page (RssAnon stays flat whichever ranges a worker gets).
__attribute__((noinline)) void prefault_stack() {
  volatile unsigned char buf[256 * 1024];
  for (size_t i = 0; i < sizeof buf; i += 4096) buf[i] = 0;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  // Threads the system refuses leave a smaller pool (size() says how many run), not an abort.
  start_threads(workers_, std::max(1, threads) - 1, [this](int) { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::help(uint32_t gen) {
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (gen_of(s) != gen) return;
    // Acquire: seeing a new loop's fn/n/grain implies seeing the owner's close of the old loop,
    // so the claim below fails unless s and these values belong to the same loop.
    const RangeFn* fn = fn_.load(std::memory_order_acquire);
    const int64_t n = n_.load(std::memory_order_acquire), grain = grain_.load(std::memory_order_acquire);
    const int64_t b = index_of(s);
    if (b >= n) return;
    const int64_t e = std::min(n, b + grain);
    // Succeeds only while loop `gen` is current and [b, e) unclaimed, so fn and n were its own.
    if (!state_.compare_exchange_weak(s, (uint64_t(gen) << 32) | uint64_t(e), std::memory_order_acquire)) continue;
    (*fn)(b, e);
    done_.fetch_add(e - b, std::memory_order_release);
    s = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  prefault_stack();
  uint32_t seen = 0;  // wake_ starts at 0: a loop announced before this thread ran still counts
  for (;;) {
    uint32_t w = wake_.load(std::memory_order_acquire);
    if (w == seen) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; w == seen; ++i) {
        BS_PAUSE();
        w = wake_.load(std::memory_order_acquire);
        if ((i & 255) == 255 && std::chrono::steady_clock::now() > until) break;
      }
      while (w == seen) {
        wake_.wait(seen, std::memory_order_acquire);
        w = wake_.load(std::memory_order_acquire);
      }
    }
    seen = w;
    if (stop_.load(std::memory_order_relaxed)) return;
    help(gen_of(state_.load(std::memory_order_acquire)));
  }
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t threads = size();
  if (grain <= 0) grain = (n + threads - 1) / threads;
  bool expected = false;
  if (workers_.empty() || grain >= n || n >= kClosed ||
      !owned_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
    fn(0, n);  // one range, or the pool is busy with another caller's loop
    return;
  }
  // Close the previous loop before replacing its parameters: a helper that loaded its final
  // state (all claimed) and then read the new n_ would otherwise claim a range past its end,
  // run it with the new fn and count it in done_ (seen as done_ > n: the caller spun forever).
  const uint32_t gen = gen_of(state_.load(std::memory_order_relaxed)) + 1;
  state_.store((uint64_t(gen) << 32) | uint64_t(kClosed), std::memory_order_relaxed);
  fn_.store(&fn, std::memory_order_release);
  n_.store(n, std::memory_order_release);
  grain_.store(grain, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);
  state_.store(uint64_t(gen) << 32, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_all();
  help(gen);
  // Only ranges another thread has already claimed are outstanding.
  const bool timing = timing_.load(std::memory_order_relaxed);
  const auto t0 = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  for (int i = 0; done_.load(std::memory_order_acquire) != n; ++i) {
    BS_PAUSE();
    if ((i & 1023) == 1023) std::this_thread::yield();
  }
  if (timing) {
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
    wait_ns_.store(wait_ns_.load(std::memory_order_relaxed) + static_cast<uint64_t>(waited.count()),
                   std::memory_order_relaxed);
  }
  loops_.store(loops_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  owned_.store(false, std::memory_order_release);
}

}  // namespace bs
