// A prefill chunk's routed rows of work sorted by matrix, for bs_qmatmul's grouped mode (each
// expert's codes read once per tile of up to BS_MM_TOKENS rows instead of once per row). One
// threadgroup: rows per matrix counted with threadgroup atomics, each matrix's first position and
// first tile summed by one thread, the tiles written, then every row into its matrix's next place
// (rows of one matrix in no particular order: a row's sums do not depend on its place). Output
// `sorted`: [0] the tile count, then the tiles [max_tiles, 2] (first position, rows), then the
// order [n].
kernel void bs_route_sort(device const int* ids [[buffer(0)]], device int* sorted [[buffer(1)]],
                          constant RouteSortParams& p [[buffer(2)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_int count[BS_MAX_EXPERTS], next[BS_MAX_EXPERTS];
  threadgroup int tile0[BS_MAX_EXPERTS];
  for (uint e = tid; e < p.n_mats; e += BS_BLOCK) atomic_store_explicit(&count[e], 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = tid; i < p.n; i += BS_BLOCK) atomic_fetch_add_explicit(&count[ids[i]], 1, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    int rows = 0, tiles = 0;
    for (uint e = 0; e < p.n_mats; ++e) {
      const int c = atomic_load_explicit(&count[e], memory_order_relaxed);
      atomic_store_explicit(&next[e], rows, memory_order_relaxed);
      tile0[e] = tiles;
      rows += c;
      tiles += (c + int(BS_MM_TOKENS) - 1) / int(BS_MM_TOKENS);
    }
    sorted[0] = tiles;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = tid; e < p.n_mats; e += BS_BLOCK) {
    const int c = atomic_load_explicit(&count[e], memory_order_relaxed);
    const int first = atomic_load_explicit(&next[e], memory_order_relaxed);
    for (int j = 0; j * int(BS_MM_TOKENS) < c; ++j) {
      sorted[1 + 2 * (tile0[e] + j)] = first + j * int(BS_MM_TOKENS);
      sorted[2 + 2 * (tile0[e] + j)] = min(c - j * int(BS_MM_TOKENS), int(BS_MM_TOKENS));
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles read next[] before the rows advance it
  device int* order = sorted + 1u + 2u * p.max_tiles;
  for (uint i = tid; i < p.n; i += BS_BLOCK)
    order[atomic_fetch_add_explicit(&next[ids[i]], 1, memory_order_relaxed)] = int(i);
}
