// RoPE in place, non-traditional (NeoX) pairs (i, i + rot/2): one thread per pair of a head
// (grid.y = token), angle positions[t] · inv_freq[i] (the model's table, computed by the host in
// double; 0 for pairs another call rotates); dims past rot pass through.
kernel void bs_rope(device float* x [[buffer(0)]], device const int* positions [[buffer(1)]],
                    device const float* inv_freq [[buffer(2)]], constant RopeParams& p [[buffer(3)]],
                    uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint half_rot = p.rot_dims / 2u;
  const uint j = tg.x * BS_BLOCK + tid, t = tg.y;
  if (j >= p.n_heads * half_rot) return;
  const uint h = j / half_rot, i = j % half_rot;
  if (inv_freq[i] == 0.0f) return;  // another axis's pair (multimodal RoPE)
  const float angle = float(positions[t]) * inv_freq[i];
  const float c = cos(angle), s = sin(angle);
  device float* v = x + (t * p.n_heads + h) * p.head_dim;
  const float a = v[i], b = v[i + half_rot];
  v[i] = a * c - b * s;
  v[i + half_rot] = b * c + a * s;
}
