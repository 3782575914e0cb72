// A prefill chunk's routed rows of work sorted by expert on the device, so the gathered matmul
// reads each expert's matrix once per tile of up to kMatTokens rows instead of once per row
// (qmatmul.cuh's grouped mode): order [n] lists the rows expert by expert; tiles [max_tiles, 2]
// holds each tile's first position in order and its row count; *tile_count the tiles written.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

// Most tiles n rows over n_mats matrices can take: every matrix's last tile may be partial.
inline int64_t route_tiles_max(int64_t n, int64_t n_mats, int64_t per_tile) {
  return (n + per_tile - 1) / per_tile + (n < n_mats ? n : n_mats);
}

// ids [n]: each row's matrix, < n_mats ≤ kMaxExperts. One block; rows of one matrix are in no
// particular order (each row's product does not depend on its place in a tile).
cudaError_t launch_route_sort(const int32_t* ids, int64_t n, int64_t n_mats, int per_tile, int32_t* order,
                              int32_t* tiles, int32_t* tile_count, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
