// Dense F32/F16/BF16 matmul: y[i, row] = alpha · W[mat][row] · x[i] (+ y[i, row] when
// accumulate). One simdgroup per row, lanes striding over the columns; up to BS_MM_TOKENS
// tokens share each weight load (grid.y = token chunks). Also the LoRA delta's two steps and
// a prerouter head's second layer.
kernel void bs_dense_matmul(device const uchar* wts [[buffer(0)]], device const float* x [[buffer(1)]],
                            device float* y [[buffer(2)]], constant DenseParams& p [[buffer(3)]],
                            uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]]) {
  const uint row = tg.x * BS_MM_SIMDGROUPS + sg;
  if (row >= p.rows) return;
  const uint i0 = tg.y * BS_MM_TOKENS, count = min(BS_MM_TOKENS, p.n - i0);
  const uint base = (p.mat * p.rows + row) * p.cols;
  float acc[BS_MM_TOKENS];
  for (uint t = 0; t < BS_MM_TOKENS; ++t) acc[t] = 0.0f;
  for (uint c = lane; c < p.cols; c += 32u) {
    const float wv = bs_load(wts, p.w_off, p.type, base + c);
    for (uint t = 0; t < count; ++t) acc[t] += wv * x[(i0 + t) * p.cols + c];
  }
  for (uint t = 0; t < count; ++t) {
    const float total = p.alpha * simd_sum(acc[t]);
    device float* out = y + (i0 + t) * p.rows + row;
    if (lane == 0) *out = p.accumulate ? *out + total : total;
  }
}
