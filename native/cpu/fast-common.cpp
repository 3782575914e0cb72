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

const float* rope_table(int32_t position, const RopeParams& p) {
  struct Table {
    int32_t position = -1;
    int rot_dims = 0;
    double theta = 0;
    std::vector<float> cs;
  };
  thread_local Table t;
  if (t.position == position && t.rot_dims == p.rot_dims && t.theta == p.theta) return t.cs.data();
  const int half = p.rot_dims / 2;
  t.cs.resize(static_cast<size_t>(2 * half));
  for (int i = 0; i < half; ++i) {
    const double angle = position * std::pow(p.theta, -2.0 * i / p.rot_dims);
    t.cs[i] = static_cast<float>(std::cos(angle));
    t.cs[half + i] = static_cast<float>(std::sin(angle));
  }
  t.position = position;
  t.rot_dims = p.rot_dims;
  t.theta = p.theta;
  return t.cs.data();
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
