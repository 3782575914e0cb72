// Memory read bandwidth: threads each stream over their share of one buffer, so decode
// speed can be reported as a fraction of the machine's roofline.
#pragma once
#include <cstdint>

namespace bs {

struct MembwResult {
  int threads = 0;
  uint64_t bytes = 0;    // read per pass
  double seconds = 0;    // best pass
  double read_gb_s = 0;  // bytes / seconds / 1e9
};

// Reads a buffer of `bytes` (≥ 1 MiB) with `threads` threads, `passes` times; reports the best.
MembwResult measure_read_bandwidth(int threads, uint64_t bytes, int passes);

}  // namespace bs
