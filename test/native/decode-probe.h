// The probes of brainstem-native-tests: decode memory (decode-probe.cpp) and the whole-token
// Metal decoder against the CPU (metal-decoder-probe.cpp).
#pragma once
#include <string>

namespace bt {

// path: the decode expert path, "exact", "staged" or "hot".
int decode_probe(const char* dir, const char* backend, int threads, int tokens, const std::string& path);
// Greedy tokens and logits of the Metal decoder beside the CPU reference, as JSON on stdout.
int metal_decoder_probe(const char* dir, int tokens);

}  // namespace bt
