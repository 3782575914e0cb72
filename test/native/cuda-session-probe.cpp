// `brainstem-native-tests --cuda-session DIR TOKENS [f16,zero|heads]`: a session whose forward pass
// runs on the whole-token CUDA decoder beside a CPU session through session-probe.h's phases, over
// the CPU emulation of cuda-emu.h here (the injected failure: every kernel launch fails), or with
// BRAINSTEM_TEST_CUDA=gpu on the real device (cuda-session-device.cpp). Also whether a second
// session of the model uploads its weights again, what its greedy decode step synchronises and
// reads back, whether the failure turned the set off, and a sticky failure (nothing copies back).
// test/native/cuda-session.test.ts runs it.
#define BS_CUDA_EMULATION 1
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/session.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/device-context.cuh"
#include "decode-probe.h"
#include "session-probe.h"

namespace bt {

int cuda_session_probe(const char* dir, int tokens, const std::string& mode) {
  auto model = session_probe_model(dir, mode);
  const char* env = std::getenv("BRAINSTEM_TEST_CUDA");
  if (env && std::string(env) == "gpu") return cuda_device_session_probe(model, dir, tokens, mode);
  namespace emu = bs::cuda_emu::emu;
  emu::device() = emu::Device{};
  bs::cuda_emu::reset();
  struct Restore {
    ~Restore() {
      emu::device().fail_launches = false;
      bs::cuda_emu::reset();
    }
  } restore;
  const int k_slots = bs::cuda_emu::CudaDecoder::session_slots(*model, kProbeContext, model->prefill_chunk);
  bs::Session cpu(model, kProbeContext), cuda(model, kProbeContext);
  // A cache of 8 rows at first: the first decode step grows it (rows copied on the device).
  cuda.use_decoder(bs::cuda_emu::session_decoder(*model, kProbeContext, 8));
  if (!cuda.on_device()) bs::fail("the CUDA session decoder refused the model");
  if (const long long seed = random_seed(mode); seed >= 0) {
    const std::string r = run_session_random(model, cpu, cuda, static_cast<uint64_t>(seed), tokens);
    std::printf("{\"device\": \"%s\", %s}\n", bs::cuda_emu::device_info().name.c_str(), r.c_str());
    return 0;
  }
  // Another session of the model copies no weights again: they are shared per model.
  const uint64_t uploaded = emu::device().h2d_bytes;
  bs::Session other(model, kProbeContext);
  other.use_decoder(bs::cuda_emu::session_decoder(*model, kProbeContext));
  const bool shared = other.on_device() && emu::device().h2d_bytes - uploaded < uploaded / 10;
  // Its greedy decode step: one host synchronisation, four bytes back, by the emulation's counts
  // and by the library's own (which a device reports).
  int32_t next = 0;
  const std::vector<DeviceCounts> step = greedy_step_counts(
      other,
      {[] {
         return DeviceCounts{emu::device().syncs, emu::device().d2h_bytes};
       },
       [] {
         return DeviceCounts{static_cast<int64_t>(bs::cuda_emu::host_waits()), bs::cuda_emu::bytes_to_host()};
       }},
      &next);
  const SessionPhases r =
      run_session_phases(model, dir, cpu, cuda, tokens, "cuda", [] { emu::device().fail_launches = true; });
  // The failure turned the whole set off, as a failing op does.
  const bool disabled = !bs::cuda_emu::backend().usable();
  // A sticky failure (no call works, copies neither): the other session drops its cache with an
  // error naming it, then runs on the CPU from an empty context.
  emu::device().fail_launches = false;
  emu::device().fail_after = 0;
  std::string sticky;
  try {
    other.append_greedy(&next, 1);
  } catch (const bs::Error& e) {
    sticky = e.what();
  }
  emu::device().fail_after = -1;
  const bool dropped = sticky.find("could not be read back") != std::string::npos && other.n_past() == 0 &&
                       !other.on_device() && other.append_greedy(std::vector<int32_t>{3, 5}.data(), 2) == next;
  std::printf(
      "{\"device\": \"%s\", %s, \"weights_shared\": %s, \"greedy_step\": %s, \"greedy_step_counted\": %s, "
      "\"set_disabled\": %s, \"sticky_failure_drops_cache\": %s, %s}\n",
      bs::cuda_emu::device_info().name.c_str(), r.json.c_str(), shared ? "true" : "false", counts_json(step[0]).c_str(),
      counts_json(step[1]).c_str(), disabled ? "true" : "false", dropped ? "true" : "false",
      slot_counters_json(*model, k_slots, cuda).c_str());
  return 0;
}

}  // namespace bt
