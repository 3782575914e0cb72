// `brainstem-native-tests --decode-probe DIR BACKEND THREADS TOKENS`: loads a model folder,
// warms a session up (prefill + a few decode steps), then decodes TOKENS more greedily and
// prints JSON with the heap allocations (operator new calls, all threads) and the RssAnon
// change over those steps. test/native/decode-memory.test.ts runs it on synthetic models.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/session.h"
#include "decode-probe.h"

namespace {

std::atomic<uint64_t> g_allocations{0};

int64_t rss_anon_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  }
  return -1;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

// Every heap allocation of the test binary goes through these.
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::aligned_alloc(static_cast<size_t>(a), (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace bt {

int decode_probe(const char* dir, const char* backend, int threads, int tokens) {
  bs::LoadOptions opts;
  opts.backend = backend;
  opts.threads = threads;
  auto model = bs::load_model(dir, opts);
  // Prefill 8 + warm-up 4 + tokens decode steps stay within the first KV reservation (64
  // rows) unless tokens is larger, so the cache does not grow during the measured steps.
  bs::Session s(model, 0);
  std::vector<float> logits(model->cfg.vocab);
  std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  for (int32_t& t : prompt) t %= static_cast<int32_t>(model->cfg.vocab);
  s.append(prompt.data(), static_cast<int64_t>(prompt.size()), logits.data());
  for (int i = 0; i < 4; ++i) {
    const int32_t t = argmax(logits);
    s.append(&t, 1, logits.data());
  }
  const int64_t rss0 = rss_anon_bytes();
  const uint64_t a0 = g_allocations.load();
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  for (int i = 0; i < tokens; ++i) {
    const int32_t t = argmax(logits);
    s.append(&t, 1, logits.data());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const uint64_t a1 = g_allocations.load();
  const int64_t rss1 = rss_anon_bytes();
  // Times are informational (the tests assert none): wall and process CPU per decoded token.
  std::printf("{\"backend\": \"%s\", \"threads\": %d, \"tokens\": %d, \"allocations\": %llu, "
              "\"rss_anon_before\": %lld, \"rss_anon_after\": %lld, \"last_token\": %d, \"wall_ms_per_token\": %.3f, "
              "\"cpu_ms_per_token\": %.3f}\n",
              model->dispatch().backend().name, threads, tokens, static_cast<unsigned long long>(a1 - a0),
              static_cast<long long>(rss0), static_cast<long long>(rss1), argmax(logits), 1e3 * wall / tokens,
              1e3 * cpu / tokens);
  return 0;
}

}  // namespace bt
