#include "cpu/fast-common.h"

#include <algorithm>
#include <cmath>

namespace bs::fast {

namespace {

template <class T>
T* grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

void* scratch(Slot slot, size_t bytes) {
  thread_local std::vector<uint64_t> slots[static_cast<int>(Slot::Count)];
  return grow(slots[static_cast<int>(slot)], (bytes + 7) / 8);
}

void rope_table(int32_t position, const RopeParams& p, float* cos_out, float* sin_out) {
  for (int i = 0; i < p.rot_dims / 2; ++i) {
    const double angle = position * std::pow(p.theta, -2.0 * i / p.rot_dims);
    cos_out[i] = static_cast<float>(std::cos(angle));
    sin_out[i] = static_cast<float>(std::sin(angle));
  }
}

int64_t id_runs(const int32_t* ids, int64_t m, int64_t* starts, int32_t* run_ids) {
  int64_t n = 0;
  for (int64_t i = 0; i < m; ++i) {
    if (i == 0 || ids[i] != ids[i - 1]) {
      starts[n] = i;
      run_ids[n++] = ids[i];
    }
  }
  starts[n] = m;
  return n;
}

}  // namespace bs::fast
