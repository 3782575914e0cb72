// What the Metal host code shares to encode kernels: launch sizes, type codes, weight byte counts
// and the quantised matmul's parameter block (metal-ops.cpp per call, metal-decoder.cpp per token).
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/accel-limits.h"
#include "common/backend.h"
#include "metal/metal-device.h"
#include "metal/params.h"

namespace bs::metal {

constexpr uint32_t kMatThreads = BS_MM_SIMDGROUPS * 32;

inline uint32_t ceil_div(int64_t a, int64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }
inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
// bs_dense_matmul's threadgroups along x for rows of `cols` columns.
inline uint32_t dense_groups(int64_t rows, int64_t cols) {
  return cols >= BS_DENSE_SPLIT_COLS ? u32(rows) : ceil_div(rows, BS_MM_SIMDGROUPS);
}
inline uint32_t type_code(DType t) { return t == DType::F32 ? BS_T_F32 : t == DType::F16 ? BS_T_F16 : BS_T_BF16; }

// The quantised matmul's parameters for w over n rows of work (plain: tokens; gathered: slots).
inline QMatParams qparams(const WeightMatrix& w, int64_t n) {
  return {
      u32(w.rows), u32(w.cols), u32(w.bits), u32(w.group), type_code(w.dtype), 0, 0, 0, u32(n), 0, 0, 0, 1, 0, 1, 0, 0};
}

// bs_qmatmul's grid for `tg_y` threadgroups along y (token chunks, rows of work or tiles), p's
// rows per simdgroup set: BS_MM_ROW_GROUP where the grid keeps BS_MM_ROW_GROUP_MIN_GROUPS
// threadgroups with it, else 1 (a small matrix keeps its simdgroups).
inline Grid qmat_grid(QMatParams& p, uint32_t tg_y) {
  const uint64_t grouped = uint64_t{ceil_div(p.rows, BS_MM_SIMDGROUPS * BS_MM_ROW_GROUP)} * tg_y;
  p.row_group = grouped >= BS_MM_ROW_GROUP_MIN_GROUPS ? BS_MM_ROW_GROUP : 1;
  return {ceil_div(p.rows, BS_MM_SIMDGROUPS * p.row_group), tg_y};
}

// A matrix set's threadgroup ranges: matrix i of the first `count` of s.p takes groups(s.p[i])
// threadgroups along x after those before it; returns the total.
template <class Set, class Groups>
inline uint32_t set_starts(Set& s, int count, Groups groups) {
  s.start[0] = 0;
  for (uint32_t i = 0; i < BS_MM_SET; ++i)
    s.start[i + 1] = s.start[i] + (static_cast<int>(i) < count ? groups(s.p[i]) : 0);
  return s.start[count];
}

// bs_qmatmul_set's grid for the first `count` of s.p (filled but for their row groups, set here).
inline Grid qmat_set_grid(QMatSetParams& s, int count, uint32_t tg_y) {
  return {set_starts(s, count, [tg_y](QMatParams& p) { return qmat_grid(p, tg_y).x; }), tg_y};
}

// bs_dense_matmul_set's grid for the first `count` of s.p over chunks of BS_MM_TOKENS of n rows.
inline Grid dense_set_grid(DenseSetParams& s, int count, int64_t n) {
  const uint32_t x = set_starts(s, count, [](const DenseParams& p) { return dense_groups(p.rows, p.cols); });
  return {x, ceil_div(n, BS_MM_TOKENS)};
}

// Most tiles bs_route_sort makes of n rows over n_mats matrices (each matrix's last may be partial).
inline uint32_t route_tiles_max(int64_t n, int64_t n_mats) {
  return ceil_div(n, BS_MM_TOKENS) + u32(std::min(n, n_mats));
}

// The pages holding [p, p + bytes) wrapped without a copy (the mmapped weights), `off` set to p's
// byte offset inside them; nullptr when the device refuses the range.
inline std::unique_ptr<Buffer> wrap_range(Device& d, const void* p, size_t bytes, uint32_t& off) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
  off = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) - begin);
  return d.wrap(reinterpret_cast<void*>(begin), end - begin);
}

}  // namespace bs::metal
