// The thread pool under back-to-back loops of changing size: every index of every loop runs
// exactly once. A helper that read the end of one loop and the next loop's n used to claim a
// range past the old end with the new loop's function (an index run twice, then a caller
// waiting forever for done == n).
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/io/io-pool.h"
#include "cpu/membw.h"
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

// Under an address-space limit that leaves room for a few thread stacks, the pools start what
// they can (a thread refused while others run used to unwind past them: std::terminate) and the
// bandwidth probe fails with an error. Runs in a child process so the limit stays there.
#if defined(__SANITIZE_ADDRESS__)
#define BS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BS_TEST_ASAN 1
#endif
#endif

TEST(threads_the_system_refuses_shrink_the_pools_instead_of_aborting) {
#ifdef BS_TEST_ASAN
  t.skip("an address-space limit cannot be used under AddressSanitizer (its shadow and allocator map at will)");
  return;
#endif
  // Room for about four thread stacks of the default size, whatever `ulimit -s` says.
  size_t stack = 0;
  pthread_attr_t attr;
  if (pthread_getattr_default_np(&attr) == 0) {
    pthread_attr_getstacksize(&attr, &stack);
    pthread_attr_destroy(&attr);
  }
  if (stack < (256u << 10)) {
    t.skip("the default thread stack is too small to bound thread starts by address space");
    return;
  }
  const rlim_t four_stacks = static_cast<rlim_t>(stack) * 4 + (8u << 20);
  const pid_t pid = fork();
  if (pid == 0) {
    // The soft limit: what is mapped now plus `room` bytes.
    const auto limit_to = [](rlim_t room) {
      long pages = 0;
      if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
        std::fclose(f);
      }
      rlimit limit{};
      if (pages == 0 || getrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
      limit.rlim_cur = std::min(limit.rlim_max, static_cast<rlim_t>(pages) * 4096 + room);
      if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
      // Where the limit is not enforced (qemu user emulation maps guest memory in its own
      // reservation), a mapping past it succeeds: nothing here can be tested then.
      void* probe = mmap(nullptr, room + (64u << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (probe != MAP_FAILED) _exit(11);
    };
    limit_to(four_stacks);
    int code = 0;
    try {
      bs::ThreadPool pool(64);
      if (pool.size() < 1 || pool.size() >= 64) code = 2;
      std::atomic<int64_t> sum{0};
      pool.parallel_for(
          1000,
          [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) sum.fetch_add(i, std::memory_order_relaxed);
          },
          8);
      if (sum.load() != 499500) code = 3;
    } catch (...) {
      _exit(6);
    }
    limit_to(four_stacks + (16u << 20));
    try {
      bs::IoPool io(16);  // 16 MiB of scratch first, then what room is left for stacks
      if (io.threads() < 1 || io.threads() >= 16) code = 4;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "  IoPool: %s\n", e.what());
      _exit(7);
    }
    try {
      bs::measure_read_bandwidth(64, 1 << 20, 1);
      code = 5;
    } catch (const bs::Error&) {
    }
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 11) {
    t.skip("the address-space limit is not enforced here (e.g. qemu user emulation)");
    return;
  }
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status << " (exit " << WEXITSTATUS(status) << ", signal " << WTERMSIG(status) << ")";
}
