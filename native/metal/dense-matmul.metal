// Dense F32/F16/BF16 matmul: y[i, row] = alpha · W[mat][row] · x[i] (+ y[i, row] when
// accumulate). Rows shorter than BS_DENSE_SPLIT_COLS: one simdgroup per row, lanes striding over
// the columns; longer: one threadgroup per row (grid.x = rows: dense_groups), its simdgroups'
// sums added in simdgroup order. Up to BS_MM_TOKENS tokens share each weight load (grid.y = token
// chunks). Also the LoRA delta's two steps and a prerouter head's second layer.
// `part`: the kernel's threadgroup float[BS_MM_SIMDGROUPS][BS_MM_TOKENS].
inline void bs_dense_rows(device const uchar* wts, device const float* x, device float* y, constant DenseParams& p,
                          BS_TG_PTR float (*part)[BS_MM_TOKENS], uint3 tg, uint tid, uint sg, uint lane) {
  const bool split = p.cols >= BS_DENSE_SPLIT_COLS;
  const uint row = split ? tg.x : tg.x * BS_MM_SIMDGROUPS + sg;
  if (row >= p.rows) return;  // the whole threadgroup when split
  const uint i0 = tg.y * BS_MM_TOKENS, count = min(BS_MM_TOKENS, p.n - i0);
  const uint base = (p.mat * p.rows + row) * p.cols;
  const uint first = split ? tid : lane, step = split ? BS_MM_SIMDGROUPS * 32u : 32u;
  float acc[BS_MM_TOKENS];
  for (uint t = 0; t < BS_MM_TOKENS; ++t) acc[t] = 0.0f;
  for (uint c = first; c < p.cols; c += step) {
    const float wv = bs_load(wts, p.w_off, p.type, base + c);
    for (uint t = 0; t < count; ++t) acc[t] += wv * x[(i0 + t) * p.cols + c];
  }
  float total[BS_MM_TOKENS];
  for (uint t = 0; t < count; ++t) total[t] = simd_sum(acc[t]);
  if (split) {
    for (uint t = 0; t < count; ++t)
      if (lane == 0) part[sg][t] = total[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg != 0) return;
    for (uint t = 0; t < count; ++t) {
      total[t] = 0.0f;
      for (uint s = 0; s < BS_MM_SIMDGROUPS; ++s) total[t] += part[s][t];
    }
  }
  for (uint t = 0; t < count; ++t) {
    device float* out = y + (i0 + t) * p.rows + row;
    if (lane == 0) *out = p.accumulate ? *out + p.alpha * total[t] : p.alpha * total[t];
  }
}

kernel void bs_dense_matmul(device const uchar* wts [[buffer(0)]], device const float* x [[buffer(1)]],
                            device float* y [[buffer(2)]], constant DenseParams& p [[buffer(3)]],
                            uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                            uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float part[BS_MM_SIMDGROUPS][BS_MM_TOKENS];
  bs_dense_rows(wts, x, y, p, part, tg, tid, sg, lane);
}

// Two or three dense products in one dispatch (a LoRA step of linears over one x), each with its
// own W, x and y; a threadgroup's x position picks the matrix.
kernel void bs_dense_matmul_set(device const uchar* w0 [[buffer(0)]], device const float* x0 [[buffer(1)]],
                                device float* y0 [[buffer(2)]], device const uchar* w1 [[buffer(3)]],
                                device const float* x1 [[buffer(4)]], device float* y1 [[buffer(5)]],
                                device const uchar* w2 [[buffer(6)]], device const float* x2 [[buffer(7)]],
                                device float* y2 [[buffer(8)]], constant DenseSetParams& s [[buffer(9)]],
                                uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                                uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float part[BS_MM_SIMDGROUPS][BS_MM_TOKENS];
  const uint i = tg.x >= s.start[2] ? 2u : tg.x >= s.start[1] ? 1u : 0u;
  uint3 local = tg;
  local.x -= s.start[i];
  if (i == 0u) {
    bs_dense_rows(w0, x0, y0, s.p[0], part, local, tid, sg, lane);
  } else if (i == 1u) {
    bs_dense_rows(w1, x1, y1, s.p[1], part, local, tid, sg, lane);
  } else {
    bs_dense_rows(w2, x2, y2, s.p[2], part, local, tid, sg, lane);
  }
}
