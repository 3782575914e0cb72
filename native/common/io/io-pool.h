// A pool of I/O threads for expert loads. Two queues: `urgent` loads a layer is waiting for
// right now run before `background` ones (prefetches, hot-set refills, next-layer warming).
// Jobs never throw out of the pool: a job reports its own errors (slot state, completion).
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/io/model-files.h"

namespace bs {

class IoPool {
 public:
  using Job = std::function<void(ReadScratch&)>;
  explicit IoPool(int threads);
  // Lets running jobs finish, drops queued ones (their owner is going away) and joins.
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }
  void submit(Job job, bool urgent);

 private:
  void loop(ReadScratch& scratch);
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable started_cv_;
  int started_ = 0;  // threads that reached their loop
  std::deque<Job> urgent_, background_;
  bool stop_ = false;
  std::vector<std::unique_ptr<ReadScratch>> scratch_;  // one per thread
  std::vector<std::thread> threads_;
};

}  // namespace bs
