#include "route-sort-check.h"

#include <algorithm>

namespace bt {

void expect_route_sort(T& t, const std::vector<int32_t>& ids, int64_t n_mats, int64_t per_tile, int32_t count,
                       const int32_t* tiles, const std::vector<int32_t>& order, const std::string& desc) {
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> per(n_mats, 0);
  for (const int32_t id : ids) ++per[id];
  int64_t want_tiles = 0;
  for (const int64_t p : per) want_tiles += (p + per_tile - 1) / per_tile;
  EXPECT(count == want_tiles) << desc << ": " << count << " tiles, want " << want_tiles;
  std::vector<int32_t> seen = order;
  std::sort(seen.begin(), seen.end());
  bool perm = static_cast<int64_t>(order.size()) == n, grouped = true;
  for (int64_t i = 0; i < n && perm; ++i) perm &= seen[i] == i;
  for (int64_t i = 1; i < n && perm; ++i) grouped &= ids[order[i - 1]] <= ids[order[i]];
  EXPECT(perm && grouped) << desc << ": the order is not the rows grouped by expert";
  if (!perm) return;
  int64_t at = 0;
  for (int32_t j = 0; j < count && at < n; ++j) {
    const int32_t start = tiles[2 * j], rows = tiles[2 * j + 1];
    const bool inside = start >= 0 && rows >= 1 && rows <= per_tile && start + rows <= n;
    EXPECT(inside && start == at) << desc << " tile " << j << ": start " << start << " rows " << rows;
    if (!inside) return;
    const int32_t e = ids[order[start]];
    // The rows of e before this tile: all its runs so far were full.
    const int64_t before =
        start - std::count_if(order.begin(), order.begin() + start, [&](int32_t i) { return ids[i] < e; });
    EXPECT(ids[order[start + rows - 1]] == e && rows == std::min<int64_t>(per_tile, per[e] - before))
        << desc << " tile " << j << ": start " << start << " rows " << rows;
    at += rows;
  }
  EXPECT(at == n) << desc << ": the tiles cover " << at << " rows";
}

}  // namespace bt
