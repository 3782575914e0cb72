// RMSNorm: one threadgroup of BS_BLOCK threads per row. Squares are summed per thread, per
// simdgroup (simd_sum), then across simdgroups through threadgroup memory. With p.add the
// residual add comes first, written back to x (as bs_add, or bs_moe_combine's sum of routed rows,
// bs_add of the shared experts' rows to it (after bs_sigmoid_mul by their gate), then bs_add): the
// decoder's residual stream and the next norm in one dispatch. Each thread rewrites only the elements it read, so y may
// alias x.
kernel void bs_rmsnorm(device float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                       device float* y [[buffer(2)]], device const float* res [[buffer(3)]],
                       device const float* weights [[buffer(4)]], constant RmsNormParams& p [[buffer(5)]],
                       device const float* shared [[buffer(6)]], device const float* gate [[buffer(7)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                       uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float partial[32];
  const uint row = tg.x;
  device float* xr = x + row * p.d;
  device float* yr = y + row * p.d;
  float ss = 0.0f;
  for (uint i = tid; i < p.d; i += BS_BLOCK) {
    if (p.add) {
      float r = res[row * p.d + i];
      if (p.k > 0) {
        r = 0.0f;
        for (uint j = 0; j < p.k; ++j) r += weights[row * p.k + j] * res[(row * p.k + j) * p.d + i];
        if (p.shared) {
          float sh = shared[row * p.d + i];
          if (p.gated) sh /= 1.0f + exp(-gate[row]);
          r += 1.0f * sh;
        }
      }
      xr[i] += 1.0f * r;
    }
    ss += xr[i] * xr[i];
  }
  ss = simd_sum(ss);
  if (lane == 0) partial[sg] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float total = simd_sum(lane < n_sg ? partial[lane] : 0.0f);
  const float inv = rsqrt(total / float(p.d) + p.eps);
  for (uint i = tid; i < p.d; i += BS_BLOCK) yr[i] = xr[i] * inv * w[i];
}
