// Elementwise ops, one thread per element: out = silu(gate) · up, y += s · x (a bias over rows), sigmoid gates,
// rounding to half, copies.
kernel void bs_silu_mul(device const float* gate [[buffer(0)]], device const float* up [[buffer(1)]],
                        device float* out [[buffer(2)]], constant ElementwiseParams& p [[buffer(3)]],
                        uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i >= p.n) return;
  out[i] = bs_silu_gate(gate[i], up[i]);
}

kernel void bs_add(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   constant ElementwiseParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                   uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) y[i] += p.s * x[i];
}

kernel void bs_add_rows(device const float* b [[buffer(0)]], device float* y [[buffer(1)]],
                        constant BiasParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) y[i] += 1.0f * b[i % p.width];  // as bs_add's y += s · x with s = 1
}

// out[i] = x[i] rounded to IEEE half (to nearest even): keys (grid.y 0) and values (grid.y 1:
// x1 into out1) into an f16 KV cache.
kernel void bs_to_f16(device const float* x [[buffer(0)]], device ushort* out [[buffer(1)]],
                      device const float* x1 [[buffer(2)]], device ushort* out1 [[buffer(3)]],
                      constant ElementwiseParams& p [[buffer(4)]], uint3 tg [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) (tg.y ? out1 : out)[i] = as_type<ushort>(half((tg.y ? x1 : x)[i]));
}

// out[i] = x[i] for i < n, as 32-bit words: a token's expert ids kept for the next step's prerouter.
kernel void bs_copy(device const uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                    constant ElementwiseParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                    uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) out[i] = x[i];
}

// x[i] *= sigmoid(g[…]): the output-gated attention (each element its own gate beside q in
// q_proj's rows: g_step 1) and the sigmoid-gated shared expert (one gate per token: g_step 0).
kernel void bs_sigmoid_mul(device float* x [[buffer(0)]], device const float* g [[buffer(1)]],
                           constant GateParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                           uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) x[i] /= 1.0f + exp(-g[(i / p.period) * p.g_stride + (i % p.period) * p.g_step]);
}

// Strided head copies: q out of q_proj's per-head [q | gate] rows, qwen3_next's fused per-k-head
// projections into the layouts the kernels read.
kernel void bs_copy_heads(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                          constant HeadCopyParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i >= p.n_tok * p.heads * p.width) return;
  const uint j = i % p.width, h = (i / p.width) % p.heads, t = i / (p.width * p.heads);
  dst[t * p.dst_token + h * p.dst_head + j] = src[t * p.src_token + h * p.src_head + j];
}
