#include "common/io/io-pool.h"

#include <exception>

#include "common/error.h"
#include "common/start-threads.h"

namespace bs {

IoPool::IoPool(int threads) {
  // Scratch is allocated here, where running out of memory is an error, not an abort in a thread.
  for (int i = 0; i < threads; ++i) scratch_.push_back(std::make_unique<ReadScratch>());
  // Threads the system refuses leave fewer I/O threads; none at all is an error (loads would never run).
  const int running = start_threads(threads_, threads, [this](int i) { loop(*scratch_[i]); });
  if (running == 0 && threads > 0) fail("could not start any of ", threads, " I/O threads (thread or memory limit)");
  // Threads that start late would touch their stacks (anonymous memory) in the middle of a decode.
  std::unique_lock<std::mutex> lk(mu_);
  started_cv_.wait(lk, [&] { return started_ == running; });
}

IoPool::~IoPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void IoPool::submit(Job job, bool urgent) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    (urgent ? urgent_ : background_).push_back(std::move(job));
  }
  cv_.notify_one();
}

void IoPool::loop(ReadScratch& scratch) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++started_;
  }
  started_cv_.notify_all();
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !urgent_.empty() || !background_.empty(); });
      if (stop_) return;  // queued jobs are dropped: nobody waits for them any more
      std::deque<Job>& q = urgent_.empty() ? background_ : urgent_;
      job = std::move(q.front());
      q.pop_front();
    }
    try {
      job(scratch);
    } catch (...) {
      // Jobs record their own errors; nothing may escape an I/O thread.
    }
  }
}

}  // namespace bs
