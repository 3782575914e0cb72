// The decode memory probe of brainstem-native-tests (see decode-probe.cpp).
#pragma once
#include <string>

namespace bt {

// path: the decode expert path, "exact", "staged" or "hot".
int decode_probe(const char* dir, const char* backend, int threads, int tokens, const std::string& path);

}  // namespace bt
