// Embedding lookup: out[i, c] = row ids[i] of the table, one thread per element (grid.y = i).
kernel void bs_embed(device const uchar* wts [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                     device const uchar* biases [[buffer(2)]], device const int* ids [[buffer(3)]],
                     device float* out [[buffer(4)]], constant EmbedParams& p [[buffer(5)]],
                     uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint c = tg.x * BS_BLOCK + tid, i = tg.y;
  if (c >= p.cols) return;
  const uint row = uint(ids[i]);
  float v;
  if (p.bits == 0) {
    v = bs_load(wts, p.w_off, p.type, row * p.cols + c);
  } else {
    const uint bit = c * p.bits, row_words = p.cols * p.bits / 32u;
    const uint word = ((device const uint*)(wts + p.w_off))[row * row_words + bit / 32u];
    const uint q = (word >> (bit % 32u)) & ((1u << p.bits) - 1u);
    const uint g = row * (p.cols / p.group) + c / p.group;
    v = bs_load(scales, p.s_off, p.type, g) * float(q) + bs_load(biases, p.b_off, p.type, g);
  }
  out[i * p.cols + c] = v;
}
