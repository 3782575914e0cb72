// Causal GQA attention over a float32 or f16 KV cache [*, n_kv, head_dim]: one threadgroup per
// (query head, token), its simdgroups taking every n_sg-th key with an online softmax; each lane
// holds head dims lane, lane + 32, ... (head_dim ≤ BS_MAX_HEAD_DIM). The simdgroups' partial
// results are merged through threadgroup memory.
kernel void bs_attention(device const float* q [[buffer(0)]], device const uchar* k [[buffer(1)]],
                         device const uchar* v [[buffer(2)]], device float* out [[buffer(3)]],
                         constant AttentionParams& p [[buffer(4)]], uint3 tg [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]], uint n_sg [[simdgroups_per_threadgroup]]) {
  threadgroup float part_acc[8 * BS_MAX_HEAD_DIM];
  threadgroup float part_m[8], part_l[8];
  const uint h = tg.x, t = tg.y, hd = p.head_dim;
  const uint g = h / (p.n_q / p.n_kv), per_lane = (hd + 31u) / 32u;
  const uint kv_stride = p.n_kv * hd, n_keys = p.pos0 + t + 1u;
  device const float* qv = q + (t * p.n_q + h) * hd;
  float qr[BS_MAX_HEAD_DIM / 32u], acc[BS_MAX_HEAD_DIM / 32u];
  for (uint e = 0; e < per_lane; ++e) {
    const uint c = lane + 32u * e;
    qr[e] = c < hd ? qv[c] : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (uint j = sg; j < n_keys; j += n_sg) {
    const uint base = j * kv_stride + g * hd;
    float d = 0.0f;
    for (uint e = 0; e < per_lane; ++e) {
      const uint c = lane + 32u * e;
      if (c < hd) d += qr[e] * bs_load(k, 0, p.kv_type, base + c);
    }
    const float s = simd_sum(d) * p.scale;
    const float m_new = max(m, s), corr = exp(m - m_new), w = exp(s - m_new);
    l = l * corr + w;
    for (uint e = 0; e < per_lane; ++e) {
      const uint c = lane + 32u * e;
      acc[e] = acc[e] * corr + (c < hd ? w * bs_load(v, 0, p.kv_type, base + c) : 0.0f);
    }
    m = m_new;
  }
  for (uint e = 0; e < per_lane; ++e) {
    const uint c = lane + 32u * e;
    if (c < hd) part_acc[sg * BS_MAX_HEAD_DIM + c] = acc[e];
  }
  if (lane == 0) {
    part_m[sg] = m;
    part_l[sg] = l;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  // A simdgroup that saw no key holds m = -inf, l = 0: its weight exp(m - M) is 0.
  float big = -INFINITY;
  for (uint s = 0; s < n_sg; ++s) big = max(big, part_m[s]);
  float denom = 0.0f;
  for (uint s = 0; s < n_sg; ++s) denom += part_l[s] * exp(part_m[s] - big);
  for (uint c = tid; c < hd; c += n_sg * 32u) {
    float num = 0.0f;
    for (uint s = 0; s < n_sg; ++s) {
      if (part_m[s] != -INFINITY) num += part_acc[s * BS_MAX_HEAD_DIM + c] * exp(part_m[s] - big);
    }
    out[(t * p.n_q + h) * hd + c] = num / denom;
  }
}
