// The Metal table (common/accel-table.h): each op runs through MetalOps on the current device
// under one lock. A device failure never escapes: the call is finished by the reference kernel
// and the set reports itself unusable from then on (as the CUDA set does).
#include "metal/metal-backend.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "common/accel-table.h"
#include "common/error.h"
#include "metal/metal-ops.h"

namespace bs {

namespace metal {

#ifndef BRAINSTEM_WITH_METAL
Device* system_device() { return nullptr; }
const std::string& system_device_error() {
  static const std::string why = "not a macOS build";
  return why;
}
#endif

namespace {

struct State {
  std::mutex mu;
  Device* device = nullptr;  // a test's device; else the system's
  std::unique_ptr<MetalOps> ops;
  Device* ops_device = nullptr;
  std::atomic<bool> failed{false};
};

State& state() {
  static State s;
  return s;
}

Device* current() {
  State& s = state();
  return s.device ? s.device : system_device();
}

}  // namespace

void use_device(Device* d) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.device = d;
  s.ops.reset();
  s.ops_device = nullptr;
  s.failed = false;
}

std::string describe() {
  Device* d = current();
  if (!d) return "Metal: unavailable (" + system_device_error() + ")";
  char budget[64];
  std::snprintf(budget, sizeof budget, "%.1f GiB", static_cast<double>(d->working_set_budget()) / (1 << 30));
  return "Metal on " + d->name() + ", GPU working-set budget " + budget +
         (state().failed ? "; disabled after a device error" : "");
}

// Runs body(ops) under the lock; false (and the set marked failed) when the device fails.
bool on_device(FunctionRef<void(MetalOps&)> body) {
  State& s = state();
  if (s.failed) return false;
  std::lock_guard<std::mutex> lock(s.mu);
  Device* d = current();
  if (!d) return false;
  try {
    if (!s.ops || s.ops_device != d) {
      s.ops = std::make_unique<MetalOps>(*d);
      s.ops_device = d;
    }
    body(*s.ops);
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "brainstem: metal: %s; using the CPU reference from now on\n", e.what());
    s.failed = true;
    return false;
  }
}

}  // namespace metal

namespace {

bool usable() { return metal::current() != nullptr && !metal::state().failed; }

}  // namespace

const Backend& metal_backend() {
  static const Backend b = {
      .name = "metal",
      .detail = "Metal kernels (MSL compiled at run time); one command buffer per call, weights wrapped in place",
      .usable = usable,
      .accepts = metal::MetalOps::accepts,
      .k = AccelTable<metal::MetalOps, metal::on_device>::kernels(),
  };
  return b;
}

}  // namespace bs
