#include "cuda/route-sort.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// Counting sort in shared memory: rows per matrix, each matrix's first position and first tile
// (one thread's running sums over ≤ kMaxExperts matrices), the tiles, then every row into its
// matrix's next position.
__global__ void route_sort_kernel(const int32_t* __restrict__ ids, int n, int n_mats, int per_tile, int32_t* order,
                                  int32_t* tiles, int32_t* tile_count) {
  __shared__ int count[kMaxExperts], next[kMaxExperts], tile0[kMaxExperts];
  const int tid = threadIdx.x;
  for (int e = tid; e < n_mats; e += kBlock) count[e] = 0;
  __syncthreads();
  for (int i = tid; i < n; i += kBlock) atomicAdd(&count[ids[i]], 1);
  __syncthreads();
  if (tid == 0) {
    int rows = 0, t = 0;
    for (int e = 0; e < n_mats; ++e) {
      next[e] = rows, tile0[e] = t;
      rows += count[e], t += (count[e] + per_tile - 1) / per_tile;
    }
    *tile_count = t;
  }
  __syncthreads();
  for (int e = tid; e < n_mats; e += kBlock) {
    for (int j = 0; j * per_tile < count[e]; ++j) {
      tiles[2 * (tile0[e] + j)] = next[e] + j * per_tile;
      tiles[2 * (tile0[e] + j) + 1] = count[e] - j * per_tile < per_tile ? count[e] - j * per_tile : per_tile;
    }
  }
  __syncthreads();  // the tiles read next[] before the rows advance it
  for (int i = tid; i < n; i += kBlock) order[atomicAdd(&next[ids[i]], 1)] = i;
}

}  // namespace

cudaError_t launch_route_sort(const int32_t* ids, int64_t n, int64_t n_mats, int per_tile, int32_t* order,
                              int32_t* tiles, int32_t* tile_count, cudaStream_t s) {
  if (n <= 0 || n_mats <= 0 || n_mats > kMaxExperts || per_tile <= 0) return cudaErrorInvalidValue;
  BS_LAUNCH(route_sort_kernel, 1, kBlock, s)
  (ids, static_cast<int>(n), static_cast<int>(n_mats), per_tile, order, tiles, tile_count);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
