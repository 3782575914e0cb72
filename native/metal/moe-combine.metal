// The routed experts' outputs of each token summed with their routing weights, both read from
// GPU buffers the routing and expert kernels wrote: one thread per (element, token).
kernel void bs_moe_combine(device const float* y [[buffer(0)]], device const float* weights [[buffer(1)]],
                           device float* out [[buffer(2)]], constant CombineParams& p [[buffer(3)]],
                           uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint c = tg.x * BS_BLOCK + tid, t = tg.y;
  if (c >= p.d) return;
  float acc = 0.0f;
  for (uint j = 0; j < p.k; ++j) acc += weights[t * p.k + j] * y[(t * p.k + j) * p.d + c];
  out[t * p.d + c] = acc;
}
