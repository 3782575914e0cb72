// brainstem-native-tests: runs every registered case (or those whose name contains an
// argument; `-NAME` leaves out those whose name contains NAME); `--bench [OP...]` instead times every op (or the named
// ops) of every compiled kernel set and prints JSON;
// `--require-sets a,b` fails unless those kernel sets can run here (the cases still run);
// `--decode-probe DIR BACKEND THREADS TOKENS [PATH]` measures allocations of warm decode steps;
// `--metal-decoder DIR TOKENS [f16]` decodes through the whole-token Metal decoder beside the CPU;
// `--metal-session DIR TOKENS [f16|zero|heads|staged,direct,slots3|random=SEED]` does it through a session
// (truncate, prefix hit, LoRA, failure; an f16 cache, a prerouter, or experts streamed through slots);
// `--cuda-decoder DIR TOKENS [bench,f16,slotsK,zero,sweep]` decodes (or times steps; sweep: set-up failing at each
// runtime call, checked for leaks) through the CUDA decoder beside the CPU (f16 KV caches; K expert slots per layer);
// `--cuda-session DIR TOKENS [f16|zero|heads]` through a session, as --metal-session.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "common/backend.h"
#include "common/error.h"
#include "decode-probe.h"
#include "harness.h"

namespace bt {
std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}
}  // namespace bt

namespace {

int run_bench(const std::vector<std::string>& ops) {
  std::printf("[\n");
  auto all = bt::bench_cases();
  if (!ops.empty()) {
    all.erase(
        std::remove_if(all.begin(), all.end(),
                       [&](const bt::BenchCase& c) { return std::find(ops.begin(), ops.end(), c.op) == ops.end(); }),
        all.end());
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const bt::BenchCase& c = all[i];
    c.run();  // warm up: page in weights
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    while (times.size() < 5 ||
           (times.size() < 200 && std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300))) {
      const auto t0 = std::chrono::steady_clock::now();
      c.run();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf(
        "  {\"op\": \"%s\", \"backend\": \"%s\", \"shape\": \"%s\", \"calls\": %zu, \"median_us\": %.3f, "
        "\"gb_s\": %.3f}%s\n",
        c.op.c_str(), c.backend.c_str(), c.shape.c_str(), times.size(), median * 1e6, c.bytes / median / 1e9,
        i + 1 < all.size() ? "," : "");
  }
  std::printf("]\n");
  return 0;
}

// Prints which kernel sets the cases run (those this machine can use) and which they skip, so
// a set is never left out silently; false when a set named in `required` (comma-separated) is
// not compiled in or cannot run here (the arm64 check requires both NEON sets under qemu).
bool report_sets(const std::string& required) {
  std::string ran;
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (b->usable()) {
      ran += std::string(ran.empty() ? "" : " ") + b->name;
    } else {
      std::printf("# kernel set %s skipped: this machine lacks what it needs (%s)\n", b->name, b->detail);
    }
  }
  std::printf("# kernel sets run: %s\n", ran.c_str());
  bool ok = true;
  for (size_t i = 0; i < required.size();) {
    const size_t end = std::min(required.find(',', i), required.size());
    const std::string name = required.substr(i, end - i);
    const bs::Backend* b = bs::find_backend(name);
    if (!b || !b->usable()) {
      std::printf("FAIL required kernel set %s: %s\n", name.c_str(), b ? "not usable here" : "not compiled in");
      ok = false;
    }
    i = end + 1;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered, so a run stopped by a time limit still shows the cases it finished.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> filters;
  if ((argc == 6 || argc == 7) && std::strcmp(argv[1], "--decode-probe") == 0) {
    const std::string path = argc == 7 ? argv[6] : "exact";
    if (path != "exact" && path != "staged" && path != "hot") {
      std::fprintf(stderr, "decode probe: path must be exact, staged or hot, got \"%s\"\n", path.c_str());
      return 2;
    }
    try {
      return bt::decode_probe(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]), path);
    } catch (const bs::Error& e) {
      std::fprintf(stderr, "decode probe: %s\n", e.what());
      return 1;
    }
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--metal-decoder") == 0) {
    try {
      return bt::metal_decoder_probe(argv[2], std::atoi(argv[3]), argc == 5 && std::strcmp(argv[4], "f16") == 0);
    } catch (const bs::Error& e) {
      std::fprintf(stderr, "metal decoder probe: %s\n", e.what());
      return 1;
    }
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--metal-session") == 0) {
    try {
      return bt::metal_session_probe(argv[2], std::atoi(argv[3]), argc == 5 ? argv[4] : "");
    } catch (const bs::Error& e) {
      std::fprintf(stderr, "metal session probe: %s\n", e.what());
      return 1;
    }
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--cuda-session") == 0) {
    try {
      return bt::cuda_session_probe(argv[2], std::atoi(argv[3]), argc == 5 ? argv[4] : "");
    } catch (const bs::Error& e) {
      std::fprintf(stderr, "cuda session probe: %s\n", e.what());
      return 1;
    }
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--cuda-decoder") == 0) {
    try {
      const std::string flags = argc == 5 ? argv[4] : "";
      const size_t slots = flags.find("slots");
      const int k = slots == std::string::npos ? 0 : std::atoi(flags.c_str() + slots + 5);
      if (flags.find("sweep") != std::string::npos) return bt::cuda_decoder_sweep(argv[2], k);
      return bt::cuda_decoder_probe(argv[2], std::atoi(argv[3]), flags.find("bench") != std::string::npos,
                                    flags.find("f16") != std::string::npos, k, flags.find("zero") != std::string::npos);
    } catch (const bs::Error& e) {
      std::fprintf(stderr, "cuda decoder probe: %s\n", e.what());
      return 1;
    }
  }
  std::string required;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bench") == 0) return run_bench(std::vector<std::string>(argv + i + 1, argv + argc));
    if (std::strcmp(argv[i], "--require-sets") == 0 && i + 1 < argc) {
      required = argv[++i];
      continue;
    }
    filters.push_back(argv[i]);
  }
  const bool sets_ok = report_sets(required);
  int failed = 0, ran = 0, skipped = 0;
  // A filter selects the cases whose name contains it; one starting with '-' leaves them out.
  std::vector<std::string> only, without;
  for (const std::string& f : filters)
    (f.size() > 1 && f[0] == '-' ? without : only).push_back(f[0] == '-' ? f.substr(1) : f);
  const auto matches = [](const std::vector<std::string>& fs, const char* name) {
    return std::any_of(fs.begin(), fs.end(),
                       [&](const std::string& f) { return std::string(name).find(f) != std::string::npos; });
  };
  for (const bt::Case& c : bt::cases()) {
    if ((!only.empty() && !matches(only, c.name)) || matches(without, c.name)) continue;
    ++ran;
    bt::T t;
    try {
      c.fn(t);
    } catch (const std::exception& e) {
      t.record(std::string("uncaught exception: ") + e.what());
    }
    if (t.count() == 0 && !t.skipped().empty()) {
      ++skipped;
      std::printf("skip %s: %s\n", c.name, t.skipped().c_str());
    } else if (t.count() == 0) {
      std::printf("ok %s\n", c.name);
    } else {
      ++failed;
      std::printf("FAIL %s (%d failures)\n", c.name, t.count());
      for (const std::string& f : t.failures()) std::printf("  %s\n", f.c_str());
    }
  }
  std::printf("# cases %d, failed %d, skipped %d\n", ran, failed, skipped);
  if (ran == 0) {
    std::printf("no case matched\n");
    return 2;
  }
  return failed == 0 && sets_ok ? 0 : 1;
}
