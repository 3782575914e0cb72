// The CUDA table (common/accel-table.h): each op runs through Ops on one device context under
// one lock. A device failure never escapes: the call is finished by the reference kernel and the
// set reports itself unusable from then on (as the Metal set does).
#include "cuda/cuda-backend.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>

#include "common/accel-table.h"
#include "common/error.h"
#include "cuda/cuda-decoder.cuh"
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

// A device error in a session's decoder marks the set failed, as an op's does (the session reads
// the cache back and carries on with the CPU).
void decoder_failed(const char* what) {
  State& s = state();
  std::fprintf(stderr, "brainstem: cuda: %s; using the CPU reference from now on\n", what);
  std::lock_guard<std::mutex> lock(s.mu);
  s.failure = what;
  s.failed = true;
}

}  // namespace

std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length) {
  return session_decoder(m, context_length, 256);
}

std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length, int64_t initial_rows) {
  if (!usable()) return nullptr;
  if (const std::string why = CudaDecoder::unsupported(m); !why.empty()) {
    static std::mutex mu;
    static std::set<std::string> said;  // each reason once, not per session
    std::lock_guard<std::mutex> lock(mu);
    if (said.insert(why).second) std::fprintf(stderr, "brainstem: cuda: sessions run op by op: %s\n", why.c_str());
    return nullptr;
  }
  try {
    // The model's prefill chunk per append, weights shared by the model's sessions, a cache that
    // doubles up to the context, routed experts in slots when they do not all fit the budget.
    CudaDecoder::Options o;
    o.max_chunk = m.prefill_chunk, o.shared = true, o.initial_rows = std::min(context_length, initial_rows);
    o.expert_slots = CudaDecoder::session_slots(m, context_length, m.prefill_chunk);
    o.io_fills = true;  // a discrete GPU's slots (an integrated one has none) fill through pinned staging
    o.on_device_error = decoder_failed;
    return std::make_unique<CudaDecoder>(m, context_length, o);
  } catch (const Error& e) {
    std::fprintf(stderr, "brainstem: cuda: %s; sessions run the kernels one call at a time\n", e.what());
    return nullptr;
  }
}

const Backend& backend() {
  static const Backend b = {
      "cuda",
      "CUDA kernels (one op per .cu); one stream sync per call, mapped weights kept on the device",
      usable,
      Ops::accepts,
      AccelTable<Ops, on_device>::kernels(),
      session_decoder,
  };
  return b;
}

std::string describe() {
  const DeviceInfo& d = device_info();
  if (!d.usable) return "CUDA: unavailable (" + d.why + "); no expert-slot budget";
  char line[256];
  std::snprintf(line, sizeof line, "CUDA on %s (sm_%d%d%s), %.1f of %.1f GiB free", d.name.c_str(), d.major, d.minor,
                d.integrated ? ", integrated memory: mapped weights read in place" : "",
                static_cast<double>(d.free_bytes) / (1 << 30), static_cast<double>(d.total_bytes) / (1 << 30));
  std::string out = line;
  // What expert slots (expert-slots.cuh) may take: 85% of the memory free now, as the table's budget.
  size_t free_now = 0, total = 0;
  if (cudaMemGetInfo(&free_now, &total) == cudaSuccess) {
    std::snprintf(line, sizeof line, "; expert-slot budget %.1f GiB (85%% of the free memory)",
                  static_cast<double>(free_now / 100 * 85) / (1 << 30));
    out += line;
  } else {
    cudaGetLastError();
    out += "; expert-slot budget unknown (cudaMemGetInfo failed)";
  }
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
