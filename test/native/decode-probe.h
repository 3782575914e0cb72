// The probes of brainstem-native-tests: decode memory (decode-probe.cpp) and the whole-token
// Metal and CUDA decoders against the CPU (metal-decoder-probe.cpp, cuda-decoder-probe.cpp), the
// Metal and CUDA ones also under a session (metal-session-probe.cpp, cuda-session-probe.cpp).
#pragma once
#include <memory>
#include <string>

#include "common/model.h"

namespace bt {

// path: the decode expert path, "exact", "staged" or "hot".
int decode_probe(const char* dir, const char* backend, int threads, int tokens, const std::string& path);
// Greedy tokens and logits of the Metal decoder beside the CPU reference, as JSON on stdout.
int metal_decoder_probe(const char* dir, int tokens, bool kv_f16);
// The same for the CUDA decoder (emulated; the device with BRAINSTEM_TEST_CUDA=gpu), or with
// `bench` timed decode steps; kv_f16: the model (CPU and decoder) with f16 KV caches; slots > 0:
// routed experts in that many device slots per layer; prerouter: a zero-training one.
int cuda_decoder_probe(const char* dir, int tokens, bool bench, bool kv_f16, int slots, bool prerouter);
// Constructs the emulated decoder failing at its k-th runtime call, for each k until it is built;
// prints {"failure_points": N, "leaks": [...]}: those k after which device or pinned memory stayed allocated.
int cuda_decoder_sweep(const char* dir, int slots);
int cuda_device_decoder_probe(const std::shared_ptr<const bs::Model>& model, int tokens, bool bench, int slots);
// A session on the Metal decoder beside a CPU session through truncations, a prefix-cache hit,
// a top-k change, a LoRA and a device failure (metal-session-probe.cpp), as JSON on stdout.
// mode: "" (float32 KV), "f16", or a prerouter: "zero" (zero-training) or "heads" (random heads);
// "random=SEED": `tokens` seeded calls instead of the phases (session-probe.h).
int metal_session_probe(const char* dir, int tokens, const std::string& mode);
// The same for the CUDA decoder (emulated; the device with BRAINSTEM_TEST_CUDA=gpu), plus whether
// a second session's decoder shares the first one's weights (cuda-session-probe.cpp).
int cuda_session_probe(const char* dir, int tokens, const std::string& mode);
int cuda_device_session_probe(const std::shared_ptr<bs::Model>& model, const std::string& dir, int tokens,
                              const std::string& mode);

}  // namespace bt
