// The Metal table (common/accel-table.h): each op runs through MetalOps on the current device
// under one lock. A device failure never escapes: the call is finished by the reference kernel
// and the set reports itself unusable from then on (as the CUDA set does).
#include "metal/metal-backend.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

#include "common/accel-table.h"
#include "common/error.h"
#include "common/model.h"
#include "metal/metal-decoder.h"
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

// A session's MetalDecoder on the current device, each call under the set's lock (the device is
// shared with the op-by-op table and other sessions). A device error marks the set failed and
// reaches the session, which reads the cache back and carries on with the CPU.
class SessionDecoder final : public DeviceDecoder {
 public:
  SessionDecoder(Device& d, const Model& m, int64_t ctx) : dec_(d, m, ctx, m.prefill_chunk, DeviceWeights::of(d, m)) {}
  void append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) override {
    locked([&] { dec_.append(tokens, n, step, logits); });
  }
  int32_t append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) override {
    int32_t out = 0;
    locked([&] { out = dec_.append_greedy(tokens, n, step); });
    return out;
  }
  void truncate(int64_t n) override { dec_.truncate(n); }
  int64_t position() const override { return dec_.position(); }
  void read_kv(int64_t layer, int64_t n, void* k, void* v) const override { dec_.read_kv(layer, n, k, v); }
  uint64_t state_bytes() const override { return dec_.state_bytes(); }
  void save_state(int slot) override { dec_.save_state(slot); }
  void load_state(int slot) override { dec_.load_state(slot); }
  void read_state(int slot, float* rec) const override { dec_.read_state(slot, rec); }

 private:
  void locked(FunctionRef<void()> body) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.failed) fail("metal: the device failed earlier");
    try {
      body();
    } catch (const DecoderInputError&) {
      throw;  // a read failed, not the device
    } catch (const Error& e) {
      std::fprintf(stderr, "brainstem: metal: %s; using the CPU reference from now on\n", e.what());
      s.failed = true;
      throw;
    }
  }
  MetalDecoder dec_;
};

// Once per model, why its sessions run the table op by op (lightning layers, a format or an
// expert path the decoder lacks): never a silent fallback.
void log_uncovered(const Model& m, const std::string& why) {
  static std::mutex mu;
  static std::set<const Model*> told;
  std::lock_guard<std::mutex> lock(mu);
  if (!told.insert(&m).second) return;
  std::fprintf(stderr,
               "brainstem: metal: the whole-token decoder does not cover this %s model: %s; its sessions run the "
               "table's kernels one call at a time\n",
               m.cfg.arch.c_str(), why.c_str());
}

std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length) {
  Device* d = current();
  if (!d || state().failed) return nullptr;
  if (const std::string why = MetalDecoder::unsupported(m); !why.empty()) {
    log_uncovered(m, why);
    return nullptr;
  }
  try {
    return std::make_unique<SessionDecoder>(*d, m, context_length);
  } catch (const Error& e) {
    std::fprintf(stderr, "brainstem: metal: %s; sessions run the kernels one call at a time\n", e.what());
    return nullptr;
  }
}

}  // namespace metal

namespace {

bool usable() { return metal::current() != nullptr && !metal::state().failed; }

}  // namespace

const Backend& metal_backend() {
  static const Backend b = {
      .name = "metal",
      .detail =
          "Metal kernels (MSL compiled at run time); one command buffer per call (per chunk for a session of a covered "
          "model), weights wrapped in place",
      .usable = usable,
      .accepts = metal::MetalOps::accepts,
      .k = AccelTable<metal::MetalOps, metal::on_device>::kernels(),
      .session_decoder = metal::session_decoder,
  };
  return b;
}

}  // namespace bs
