// The probes of brainstem-native-tests: decode memory (decode-probe.cpp) and the whole-token
// Metal decoder against the CPU (metal-decoder-probe.cpp), alone and under a session.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace bt {

// path: the decode expert path, "exact", "staged" or "hot".
int decode_probe(const char* dir, const char* backend, int threads, int tokens, const std::string& path);
// Greedy tokens and logits of the Metal decoder beside the CPU reference, as JSON on stdout.
int metal_decoder_probe(const char* dir, int tokens);
// A session on the Metal decoder beside a CPU session through truncations, a prefix-cache hit,
// a top-k change, a LoRA and a device failure (metal-session-probe.cpp), as JSON on stdout.
// mode: "" (float32 KV), "f16", or a prerouter: "zero" (zero-training) or "heads" (random heads).
int metal_session_probe(const char* dir, int tokens, const std::string& mode);
// The probes' comparisons: the largest |a - b| relative to the largest |a|, and the first argmax.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b);
int32_t argmax_of(const std::vector<float>& v);

}  // namespace bt
