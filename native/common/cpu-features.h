// CPU feature detection for run-time kernel dispatch (x86 AVX2/AVX-512/VNNI, arm64 dotprod, i8mm).
#pragma once
#include <string>

namespace bs {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vnni = false;
  bool neon = false, dotprod = false, i8mm = false;
};

// Detected once; cheap to call afterwards.
const CpuFeatures& cpu_features();
// Space-separated list of the features above that are present, e.g. "avx2 fma f16c".
std::string cpu_features_string();

}  // namespace bs
