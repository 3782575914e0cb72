// `--cuda-session` on the real CUDA device (BRAINSTEM_TEST_CUDA=gpu): session-probe.h's phases
// on bs::cuda's session decoder, the failure injected by a wrapper whose appends throw (a real
// device cannot be made to fail on demand), or why it cannot run in this build or on this machine.
#include <cstdio>

#include "decode-probe.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "common/error.h"
#include "common/session.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/device-context.cuh"
#include "session-probe.h"
#endif

namespace bt {

#ifdef BRAINSTEM_WITH_CUDA
namespace {

// The device's decoder, failing every append once broken.
struct Breakable final : bs::DeviceDecoder {
  std::unique_ptr<bs::DeviceDecoder> d;
  bool broken = false;
  void append(const int32_t* t, int64_t n, const bs::DeviceStep& s, float* logits) override {
    if (broken) bs::fail("kernel launch failed (injected by the probe)");
    d->append(t, n, s, logits);
  }
  int32_t append_greedy(const int32_t* t, int64_t n, const bs::DeviceStep& s) override {
    if (broken) bs::fail("kernel launch failed (injected by the probe)");
    return d->append_greedy(t, n, s);
  }
  void truncate(int64_t n) override { d->truncate(n); }
  int64_t position() const override { return d->position(); }
  void read_kv(int64_t l, int64_t n, void* k, void* v) const override { d->read_kv(l, n, k, v); }
  // Hybrid models' snapshots pass through (a broken device fails the appends only).
  void save_state(int slot) override { d->save_state(slot); }
  void load_state(int slot) override { d->load_state(slot); }
  void read_state(int slot, float* rec) const override { d->read_state(slot, rec); }
  uint64_t state_bytes() const override { return d->state_bytes(); }
  void take_stats(bs::SessionStats& into) override { d->take_stats(into); }
};

}  // namespace
#endif

int cuda_device_session_probe(const std::shared_ptr<bs::Model>& model, const std::string& dir, int tokens,
                              const std::string& mode) {
#ifndef BRAINSTEM_WITH_CUDA
  std::fprintf(stderr, "cuda session probe: the CUDA set is not compiled into this build (no nvcc)\n");
  return 1;
#else
  const bs::cuda::DeviceInfo& info = bs::cuda::device_info();
  if (!info.usable) {
    std::fprintf(stderr, "cuda session probe: %s\n", info.why.c_str());
    return 1;
  }
  const int k_slots = bs::cuda::CudaDecoder::session_slots(*model, kProbeContext, model->prefill_chunk);
  bs::Session cpu(model, kProbeContext), cuda(model, kProbeContext);
  auto dev = std::make_unique<Breakable>();
  // A cache of 8 rows at first, as in the emulated probe: the first decode step grows it.
  dev->d = bs::cuda::session_decoder(*model, kProbeContext, 8);
  if (!dev->d) bs::fail("the CUDA session decoder refused the model");
  Breakable* b = dev.get();
  cuda.use_decoder(std::move(dev));
  if (const long long seed = random_seed(mode); seed >= 0) {
    const std::string r = run_session_random(model, cpu, cuda, static_cast<uint64_t>(seed), tokens);
    std::printf("{\"device\": \"%s\", %s}\n", info.name.c_str(), r.c_str());
    return 0;
  }
  // Another session's greedy decode step, by the library's counts of host waits and bytes back.
  bs::Session other(model, kProbeContext);
  other.use_decoder(bs::cuda::session_decoder(*model, kProbeContext));
  if (!other.on_device()) bs::fail("the CUDA session decoder refused a second session");
  int32_t next = 0;
  const std::vector<DeviceCounts> step =
      greedy_step_counts(other, {[] {
                           return DeviceCounts{static_cast<int64_t>(bs::cuda::host_waits()), bs::cuda::bytes_to_host()};
                         }},
                         &next);
  const SessionPhases r = run_session_phases(model, dir, cpu, cuda, tokens, "cuda", [&] { b->broken = true; });
  std::printf("{\"device\": \"%s\", %s, \"weights_shared\": true, \"greedy_step\": %s, %s}\n", info.name.c_str(),
              r.json.c_str(), counts_json(step[0]).c_str(), slot_counters_json(*model, k_slots, cuda).c_str());
  return 0;
#endif
}

}  // namespace bt
