#include "common/io/io-pool.h"

#include <exception>

namespace bs {

IoPool::IoPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  // Threads that start late would touch their stacks (anonymous memory) in the middle of a decode.
  std::unique_lock<std::mutex> lk(mu_);
  started_cv_.wait(lk, [&] { return started_ == threads; });
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

void IoPool::loop() {
  ReadScratch scratch;
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
