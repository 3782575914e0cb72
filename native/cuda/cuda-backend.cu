// The CUDA table (common/accel-table.h): each op runs through Ops on one device context under
// one lock. A device failure never escapes: the call is finished by the reference kernel and the
// set reports itself unusable from then on (as the Metal set does).
#include "cuda/cuda-backend.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>

#include "common/accel-table.h"
#include "common/error.h"
#include "cuda/cuda-ops.cuh"
#include "cuda/smoke-test.cuh"

namespace bs::BS_CUDA_NS {

namespace {

struct State {
  std::mutex mu;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Ops> ops;
  std::atomic<bool> failed{false};
  std::string failure;
};

State& state() {
  static State s;
  return s;
}

// Runs body(ops) under the lock; false (and the set marked failed) when the device fails.
bool on_device(FunctionRef<void(Ops&)> body) {
  State& s = state();
  if (s.failed || !device_info().usable) return false;
  std::lock_guard<std::mutex> lock(s.mu);
  try {
    if (!s.ops) {
      s.ctx = std::make_unique<Context>();
      s.ops = std::make_unique<Ops>(*s.ctx);
    }
    body(*s.ops);
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "brainstem: cuda: %s; using the CPU reference from now on\n", e.what());
    s.failure = e.what();
    s.failed = true;
    return false;
  }
}

bool usable() { return device_info().usable && !state().failed; }

}  // namespace

const Backend& backend() {
  static const Backend b = {
      "cuda",
      "CUDA kernels (one op per .cu); one stream sync per call, mapped weights kept on the device",
      usable,
      Ops::accepts,
      AccelTable<Ops, on_device>::kernels(),
  };
  return b;
}

std::string describe() {
  const DeviceInfo& d = device_info();
  if (!d.usable) return "CUDA: unavailable (" + d.why + ")";
  char line[256];
  std::snprintf(line, sizeof line, "CUDA on %s (sm_%d%d%s), %.1f of %.1f GiB free", d.name.c_str(), d.major, d.minor,
                d.integrated ? ", integrated memory: mapped weights read in place" : "",
                static_cast<double>(d.free_bytes) / (1 << 30), static_cast<double>(d.total_bytes) / (1 << 30));
  std::string out = line;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.ctx) {
    std::snprintf(line, sizeof line, "; resident weights %.1f MiB of a %.1f GiB budget",
                  static_cast<double>(s.ctx->stats().resident_bytes) / (1 << 20),
                  static_cast<double>(s.ctx->stats().budget) / (1 << 30));
    out += line;
  }
  if (s.failed) out += "; disabled after a device error: " + s.failure;
  return out;
}

namespace {

struct Smoke {
  bool ran = false, ok = false;
  std::string why;
};

Smoke& smoke() {
  static Smoke s;
  return s;
}

}  // namespace

bool auto_ready(std::string* why) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  Smoke& sm = smoke();
  if (!sm.ran) {
    sm.ran = true;
    if (!device_info().usable) {
      sm.why = device_info().why;
    } else {
      sm.why = run_smoke_test(backend().k, reference_backend().k);
      if (sm.why.empty() && !usable()) sm.why = "the device failed during the smoke test: " + state().failure;
      sm.ok = sm.why.empty();
    }
  }
  if (why) *why = sm.why;
  return sm.ok;
}

void reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.ops.reset();
  s.ctx.reset();
  s.failed = false;
  s.failure.clear();
  smoke() = Smoke{};
  device_info(true);
}

}  // namespace bs::BS_CUDA_NS
