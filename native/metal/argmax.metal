// Greedy sampling on the GPU: out[0] = the index of x[0..n)'s largest value, ties to the lower
// index, NaN never chosen (as the CPU's argmax). One threadgroup: each thread scans a stride,
// then a simdgroup argmax, then thread 0 over the simdgroups' winners.
kernel void bs_argmax(device const float* x [[buffer(0)]], device int* out [[buffer(1)]],
                      constant ElementwiseParams& p [[buffer(2)]], uint tid [[thread_index_in_threadgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                      uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float win_v[32];
  threadgroup uint win_i[32];
  float v = -INFINITY;
  uint i = 0xffffffffu;
  for (uint j = tid; j < p.n; j += n_sg * 32u) {
    if (bs_better(x[j], j, v, i)) {
      v = x[j];
      i = j;
    }
  }
  float best = 0.0f;
  const uint at = bs_simd_argmax(v, i, best);
  if (lane == 0) {
    win_v[sg] = best;
    win_i[sg] = at;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid != 0) return;
  for (uint s = 1; s < n_sg; ++s) {
    if (bs_better(win_v[s], win_i[s], win_v[0], win_i[0])) {
      win_v[0] = win_v[s];
      win_i[0] = win_i[s];
    }
  }
  out[0] = int(win_i[0]);
}
