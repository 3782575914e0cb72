// The thread pool under back-to-back loops of changing size: every index of every loop runs
// exactly once. A helper that read the end of one loop and the next loop's n used to claim a
// range past the old end with the new loop's function (an index run twice, then a caller
// waiting forever for done == n).
#include <atomic>
#include <vector>

#include "cpu/thread-pool.h"
#include "harness.h"

TEST(thread_pool_runs_every_index_once_across_loops_of_changing_size) {
  bs::ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(512);
  const int64_t sizes[] = {128, 512, 64, 300, 16, 511, 96};
  int wrong = 0;
  for (int loop = 0; loop < 200000 && wrong == 0; ++loop) {
    const int64_t n = sizes[loop % 7];
    for (int64_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
    pool.parallel_for(
        n,
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        },
        16);
    for (int64_t i = 0; i < n; ++i) {
      if (hits[i].load(std::memory_order_relaxed) != 1) {
        EXPECT(false) << "loop " << loop << " (n " << n << "): index " << i << " ran " << hits[i].load() << " times";
        ++wrong;
        break;
      }
    }
  }
}
