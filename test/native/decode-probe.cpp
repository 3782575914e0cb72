// `brainstem-native-tests --decode-probe DIR BACKEND THREADS TOKENS [PATH]`: loads a model
// folder, prefills a prompt and decodes TOKENS greedy steps, then rewinds and decodes the same
// tokens twice more; the last pass is measured: JSON with the heap allocations (operator new
// calls, all threads) and the RssAnon change. PATH (exact, staged, hot) is the decode expert
// path; staged and hot get a slot for every expert, so the earlier passes load every expert
// the measured pass routes to and it starts no read. test/native/decode-memory.test.ts runs it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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
  if (void* p = std::aligned_alloc(static_cast<size_t>(a),
                                   (n + static_cast<size_t>(a) - 1) / static_cast<size_t>(a) * static_cast<size_t>(a)))
    return p;
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

int decode_probe(const char* dir, const char* backend, int threads, int tokens, const std::string& path) {
  bs::LoadOptions opts;
  opts.backend = backend;
  opts.threads = threads;
  if (path != "exact") {
    const auto probe = bs::load_model(dir, opts);  // for the expert count and sizes
    const int E = probe->cfg.router.n_experts;
    opts.stream.decode_path = path == "staged" ? bs::ExpertPath::Staged : bs::ExpertPath::Hot;
    opts.stream.slots = E;
    opts.stream.cache_bytes =
        static_cast<uint64_t>(E) * probe->expert_bytes * static_cast<uint64_t>(probe->cfg.n_layers);
  }
  auto model = bs::load_model(dir, opts);
  // Prefill 8 + tokens decode steps stay within the first KV reservation (64 rows) unless
  // tokens is larger, so the cache does not grow during the measured steps.
  bs::Session s(model, 0);
  std::vector<float> logits(model->cfg.vocab);
  std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  for (int32_t& t : prompt) t %= static_cast<int32_t>(model->cfg.vocab);
  s.append(prompt.data(), static_cast<int64_t>(prompt.size()), logits.data());
  std::vector<int32_t> steps;
  for (int i = 0; i < tokens; ++i) {
    steps.push_back(argmax(logits));
    s.append(&steps.back(), 1, logits.data());
  }
  // The same steps again: the same routing, so the last pass finds every expert loaded.
  auto replay = [&] {
    s.truncate(static_cast<int64_t>(prompt.size()));
    for (const int32_t& t : steps) s.append(&t, 1, logits.data());
  };
  replay();
  const int64_t rss0 = rss_anon_bytes();
  const uint64_t a0 = g_allocations.load();
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  replay();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const uint64_t a1 = g_allocations.load();
  const int64_t rss1 = rss_anon_bytes();
  // Times are informational (the tests assert none): wall and process CPU per decoded token.
  std::printf(
      "{\"backend\": \"%s\", \"path\": \"%s\", \"threads\": %d, \"tokens\": %d, \"allocations\": %llu, "
      "\"rss_anon_before\": %lld, \"rss_anon_after\": %lld, \"last_token\": %d, \"wall_ms_per_token\": %.3f, "
      "\"cpu_ms_per_token\": %.3f}\n",
      model->dispatch().backend().name, path.c_str(), threads, tokens, static_cast<unsigned long long>(a1 - a0),
      static_cast<long long>(rss0), static_cast<long long>(rss1), argmax(logits), 1e3 * wall / tokens,
      1e3 * cpu / tokens);
  return 0;
}

}  // namespace bt
