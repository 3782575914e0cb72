// A prerouter head's layers over the features f = [hidden; onehot(cur); onehot(prev)] without
// building f: the one-hot parts add the weight columns of the k expert ids, read from the
// routing buffers the GPU wrote (nothing is read back). One simdgroup per output row; gelu-erf
// for the first layer. The second layer is bs_dense_matmul accumulating into the logits.
kernel void bs_prerouter_linear(device const uchar* wts [[buffer(0)]], device const float* hidden [[buffer(1)]],
                                device const int* cur [[buffer(2)]], device const int* prev [[buffer(3)]],
                                device float* y [[buffer(4)]], constant PrerouterParams& p [[buffer(5)]],
                                uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                                uint lane [[thread_index_in_simdgroup]]) {
  const uint row = tg.x * BS_MM_SIMDGROUPS + sg;
  if (row >= p.rows) return;
  const uint H = p.hidden, E = p.n_experts, base = row * (H + 2u * E);
  float acc = 0.0f;
  for (uint c = lane; c < H; c += 32u) acc += bs_load(wts, p.w_off, p.type, base + c) * hidden[c];
  for (uint j = lane; j < p.k; j += 32u) {
    if (p.has_cur) acc += bs_load(wts, p.w_off, p.type, base + H + uint(cur[j]));
    if (p.has_prev) acc += bs_load(wts, p.w_off, p.type, base + H + E + uint(prev[j]));
  }
  const float total = simd_sum(acc);
  if (lane == 0) y[row] = p.gelu ? bs_gelu_erf(total) : total;
}
