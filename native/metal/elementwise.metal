// Elementwise ops, one thread per element: out = silu(gate) · up, and y += s · x.
kernel void bs_silu_mul(device const float* gate [[buffer(0)]], device const float* up [[buffer(1)]],
                        device float* out [[buffer(2)]], constant ElementwiseParams& p [[buffer(3)]],
                        uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i >= p.n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + exp(-g)) * up[i];
}

kernel void bs_add(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   constant ElementwiseParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                   uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) y[i] += p.s * x[i];
}

// out[i] = x[i] rounded to IEEE half (to nearest even): keys and values into an f16 KV cache.
kernel void bs_to_f16(device const float* x [[buffer(0)]], device ushort* out [[buffer(1)]],
                      constant ElementwiseParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) out[i] = as_type<ushort>(half(x[i]));
}

// out[i] = x[i] for i < n, as 32-bit words: a token's expert ids kept for the next step's prerouter.
kernel void bs_copy(device const uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                    constant ElementwiseParams& p [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],
                    uint tid [[thread_index_in_threadgroup]]) {
  const uint i = tg.x * BS_BLOCK + tid;
  if (i < p.n) out[i] = x[i];
}
