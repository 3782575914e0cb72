// What a sort of routed rows by expert must give (CUDA's route-sort.cu, Metal's
// route-sort.metal), checked the same way for both: order a permutation of the rows grouped by
// expert; `count` tiles (tiles[2j] the first position in order, tiles[2j + 1] the rows) covering
// each expert's rows in runs of per_tile then the rest, back to back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace bt {

void expect_route_sort(T& t, const std::vector<int32_t>& ids, int64_t n_mats, int64_t per_tile, int32_t count,
                       const int32_t* tiles, const std::vector<int32_t>& order, const std::string& desc);

}  // namespace bt
