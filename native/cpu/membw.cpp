#include "cpu/membw.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/start-threads.h"

namespace bs {

namespace {

// Four independent accumulators keep the loop bound by loads, not by the add chain.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

}  // namespace

MembwResult measure_read_bandwidth(int threads, uint64_t bytes, int passes) {
  threads = std::max(1, threads);
  bytes = std::max<uint64_t>(bytes, 1 << 20);
  const size_t words = bytes / 8;
  std::vector<uint64_t> buf(words);
  for (size_t i = 0; i < words; ++i) buf[i] = i * 0x9e3779b97f4a7c15ull;  // touch every page

  MembwResult r;
  r.threads = threads;
  r.bytes = words * 8;
  r.seconds = 1e30;
  std::vector<uint64_t> sums(threads);
  for (int pass = 0; pass < std::max(1, passes); ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t chunk = (words + threads - 1) / threads;
    const int started = start_threads(pool, threads, [&](int t) {
      const size_t b = std::min(words, chunk * t), e = std::min(words, b + chunk);
      sums[t] += sum_words(buf.data() + b, e - b);
    });
    for (std::thread& th : pool) th.join();
    if (started < threads) fail("could start only ", started, " of ", threads, " threads (thread or memory limit)");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.seconds = std::min(r.seconds, s);
  }
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;  // keeps the reads observable
  r.read_gb_s = static_cast<double>(r.bytes) / r.seconds / 1e9;
  return r;
}

}  // namespace bs
