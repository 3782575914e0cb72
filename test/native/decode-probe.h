// The decode memory probe of brainstem-native-tests (see decode-probe.cpp).
#pragma once

namespace bt {

int decode_probe(const char* dir, const char* backend, int threads, int tokens);

}  // namespace bt
