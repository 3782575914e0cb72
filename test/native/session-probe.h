// The device-session probes' shared half (metal-session-probe.cpp, cuda-session-probe.cpp): the
// model as a mode asks for it, and the phases a session on a device decoder goes through beside a
// CPU session: a chunked prefill and greedy steps, a truncation to a shorter prefix and a new
// suffix, a prefix-cache hit (that prompt again: truncate to all but its last token, prefill it),
// a narrower top-k, a LoRA adapter, then an injected device failure that hands the cache back to
// the CPU. Greedy tokens of both per phase as JSON.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/function-ref.h"
#include "common/model.h"
#include "common/session.h"

namespace bt {

// Context of the probed sessions: a hybrid vision model's phases (a long decode, an image) fill 70 rows.
constexpr int64_t kProbeContext = 96;

// The model in `dir` on the CPU reference kernels, prefill chunks of 4 tokens; mode (comma-separated)
// "f16": an f16 KV cache; "zero" / "heads": a prerouter (zero-training, or random heads);
// "staged": experts streamed through 6 staged slots ("slots3": 3), "direct": with direct reads;
// "hot": the hot decode path.
// "slots" (CUDA): a device expert budget of 3 experts per MoE layer (stream.device_expert_bytes).
std::shared_ptr<bs::Model> session_probe_model(const char* dir, const std::string& mode);

// "\"expert_slots\": {...}": K slots per layer (0: all resident), the experts per layer, and the
// session's slot counters (hits, misses, loads, prefetch loads, I/O bytes) and predicted layers.
std::string slot_counters_json(const bs::Model& m, int k_slots, const bs::Session& dev);

struct SessionPhases {
  std::string json;  // "\"phases\": {...}, ... \"max_rel_logit_diff\": x" (no braces around)
  uint64_t device_state_bytes = 0;
};

// Every other device step brings back only the token; `label` names the device's token lists.
// break_device() makes the device fail before the last phase.
SessionPhases run_session_phases(const std::shared_ptr<bs::Model>& model, const std::string& dir, bs::Session& cpu,
                                 bs::Session& dev, int tokens, const std::string& label,
                                 bs::FunctionRef<void()> break_device);

// Mode "random=SEED": `ops` seeded calls instead of the phases — prefills of text and (with
// multimodal RoPE) images with their 3-D positions (DeepStack on models without recurrent layers),
// decode runs (1–8 steps, or 33 to cross a hybrid's decode snapshot; every third step greedy on
// the device), truncations to any row — each call's logits (greedy steps: tokens) compared.
// Returns "\"random\": {...}" with the calls as a string ("p5 i1:2x3:0 d33 t7 …") for messages.
std::string run_session_random(const std::shared_ptr<bs::Model>& model, bs::Session& cpu, bs::Session& dev,
                               uint64_t seed, int ops);

// Host waits and bytes read back from the device so far, by one set of counters.
struct DeviceCounts {
  int64_t waits = 0;
  uint64_t bytes = 0;
};

// A greedy decode step of `s` after the greedy prompt {3, 5}: that step's counts by each reader
// (*next: the step's input token). counts_json: "{\"syncs\": N, \"d2h_bytes\": B}".
std::vector<DeviceCounts> greedy_step_counts(bs::Session& s, const std::vector<std::function<DeviceCounts()>>& readers,
                                             int32_t* next);
std::string counts_json(const DeviceCounts& c);

// The seed of a "random=SEED" mode word; -1 when the mode has none.
long long random_seed(const std::string& mode);

}  // namespace bt
