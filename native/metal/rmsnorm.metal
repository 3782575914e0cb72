// RMSNorm: one threadgroup of BS_BLOCK threads per row. Squares are summed per thread, per
// simdgroup (simd_sum), then across simdgroups through threadgroup memory. y may alias x: each
// thread rewrites only the elements it read.
kernel void bs_rmsnorm(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                       device float* y [[buffer(2)]], constant RmsNormParams& p [[buffer(3)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                       uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  device const float* xr = x + tg.x * p.d;
  device float* yr = y + tg.x * p.d;
  float ss = 0.0f;
  for (uint i = tid; i < p.d; i += BS_BLOCK) ss += xr[i] * xr[i];
  ss = simd_sum(ss);
  if (lane == 0) partial[sg] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float total = simd_sum(lane < n_sg ? partial[lane] : 0.0f);
  const float inv = rsqrt(total / float(p.d) + p.eps);
  for (uint i = tid; i < p.d; i += BS_BLOCK) yr[i] = xr[i] * inv * w[i];
}
