// A persistent pool of worker threads running one parallel loop at a time, built for the
// decode path: no allocation, no locks, and no waiting for a thread that is not running.
// A loop's ranges are claimed from one atomic counter by whichever threads are awake (the
// caller always takes part), and the caller waits only for ranges already claimed, so a
// worker descheduled on a busy machine costs nothing unless it holds a range. Idle workers
// spin briefly (a decode step starts hundreds of small loops) and then sleep on a futex.
// Every index is computed by exactly one call, so kernels that write disjoint outputs give
// the same bits for any thread count.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/function-ref.h"

namespace bs {

class ThreadPool {
 public:
  // `threads` ≥ 1 counts the calling thread; threads - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) on disjoint contiguous ranges covering [0, n) and returns when all
  // are done. On the pool each range is at most `grain` long (grain ≤ 0: about n / size());
  // a call made while another caller holds the pool runs as one range on the calling thread.
  void parallel_for(int64_t n, RangeFn fn, int64_t grain = 0);

  // Loops run on the pool and, while timing is on, the caller's waits at their ends for
  // ranges other threads still held (bench decode --breakdown).
  struct Counters {
    uint64_t loops = 0, wait_ns = 0;
  };
  Counters counters() const {
    return {loops_.load(std::memory_order_relaxed), wait_ns_.load(std::memory_order_relaxed)};
  }
  void set_timing(bool on) { timing_.store(on, std::memory_order_relaxed); }

 private:
  void worker_loop();
  // Claims and runs ranges of loop `gen` until none is left; false when gen is not current.
  void help(uint32_t gen);

  std::vector<std::thread> workers_;
  std::atomic<bool> owned_{false};  // a caller is running a loop on the pool
  // The current loop. Written by the owner before `state_` announces it; read by helpers only
  // between loading state_ and a successful claim (which proves the loop was still current).
  std::atomic<const RangeFn*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, grain_{1};
  alignas(64) std::atomic<uint64_t> state_{0};  // loop generation << 32 | next unclaimed index
  alignas(64) std::atomic<int64_t> done_{0};    // indices finished in the current loop
  alignas(64) std::atomic<uint32_t> wake_{0};   // futex word: bumped per loop and at shutdown
  std::atomic<bool> stop_{false};
  std::atomic<bool> timing_{false};
  std::atomic<uint64_t> loops_{0}, wait_ns_{0};  // written by the owner only
};

}  // namespace bs
