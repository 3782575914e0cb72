// Qwen3-style attention's per-head RMSNorm of q and k, then RoPE, in place, in one dispatch (the
// decoder's two bs_rmsnorm and two bs_rope as one; without p.norm the two bs_rope alone); with p.store the k rows after
// them and the v rows into the f16 cache (bs_to_f16's dispatch joined too). One simdgroup per head (q heads, k heads,
// then v heads when storing; grid.y = token). The squares are summed as bs_rmsnorm sums a row of ≤ BS_BLOCK elements
// (one simd_sum per 32, then one over the eight), so the results match the separate dispatches bit for bit.
kernel void bs_qk_norm_rope(device float* q [[buffer(0)]], device float* k [[buffer(1)]],
                            device const float* q_w [[buffer(2)]], device const float* k_w [[buffer(3)]],
                            device const int* positions [[buffer(4)]], device const float* inv_freq [[buffer(5)]],
                            device const float* v_rows [[buffer(6)]], device ushort* k_cache [[buffer(7)]],
                            device ushort* v_cache [[buffer(8)]], constant QkNormRopeParams& p [[buffer(9)]],
                            uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]]) {
  const uint h = tg.x * BS_MM_SIMDGROUPS + sg, t = tg.y, hd = p.head_dim;
  if (h >= p.n_q + p.n_kv * (p.store ? 2u : 1u)) return;  // the whole simdgroup
  if (h >= p.n_q + p.n_kv) {
    const uint hv = h - p.n_q - p.n_kv;
    for (uint i = lane; i < hd; i += 32u)
      v_cache[(t * p.n_kv + hv) * hd + i] = as_type<ushort>(half(v_rows[(t * p.n_kv + hv) * hd + i]));
    return;
  }
  const bool is_q = h < p.n_q;
  device float* v = is_q ? q + (t * p.n_q + h) * hd : k + (t * p.n_kv + (h - p.n_q)) * hd;
  if (p.norm) {
    device const float* w = is_q ? q_w : k_w;
    float mine = 0.0f;
    for (uint e = 0; e < BS_BLOCK / 32u; ++e) {
      const uint i = lane + 32u * e;
      const float part = simd_sum(i < hd ? v[i] * v[i] : 0.0f);
      if (lane == e) mine = part;
    }
    const float total = simd_sum(mine);
    const float inv = rsqrt(total / float(hd) + p.eps);
    for (uint i = lane; i < hd; i += 32u) v[i] = v[i] * inv * w[i];
    simdgroup_barrier(mem_flags::mem_device);  // a pair's halves are other lanes' norm outputs
  }
  const uint half_rot = p.rot_dims / 2u;
  for (uint i = lane; i < half_rot; i += 32u) {
    if (inv_freq[i] == 0.0f) continue;
    const float angle = float(positions[t]) * inv_freq[i];
    const float c = cos(angle), s = sin(angle);
    const float a = v[i], b = v[i + half_rot];
    v[i] = a * c - b * s;
    v[i + half_rot] = b * c + a * s;
  }
  if (!p.store || is_q) return;
  simdgroup_barrier(mem_flags::mem_device);
  device ushort* dst = k_cache + (t * p.n_kv + (h - p.n_q)) * hd;
  for (uint i = lane; i < hd; i += 32u) dst[i] = as_type<ushort>(half(v[i]));
}
