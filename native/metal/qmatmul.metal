// Affine 4/8-bit matmul on the MLX layout: y[i, row] = Σ_c (s·q + b)·x[i, c]. A simdgroup takes
// p.row_group consecutive output rows (reading each x column once for all of them: at 4 bits x is
// 8 times the weight bytes), its 32 lanes striding over the rows' words BS_MM_PACKS at a time
// (coalesced), partial sums joined by simd_sum. Plain mode shares each weight word across up to BS_MM_TOKENS
// tokens (grid.y = token chunks); gather mode runs one token per grid.y with its own matrix from
// the slot table, or grouped one tile of up to BS_MM_TOKENS rows routed to one matrix
// (bs_route_sort's `sorted`: a prefill chunk's experts read once per tile). A row's sums are the
// same in every mode and row grouping. With p.gated x holds gate rows and `up` the up rows laid out
// alike: x is read as SiLU(gate)·up, as bs_silu_mul would have written it.
inline void bs_qmat_rows(device const uchar* codes, device const uchar* scales, device const uchar* biases,
                         device const float* x, device const float* up, device float* y, device const float* bias,
                         device const int* ids, device const int* slots, device const int* sorted,
                         constant QMatParams& p, uint3 tg, uint sg, uint lane) {
  const uint row0 = (tg.x * BS_MM_SIMDGROUPS + sg) * p.row_group;
  if (row0 >= p.rows) return;                        // the whole simdgroup: no lane is left inside a reduction
  if (p.grouped && tg.y >= uint(sorted[0])) return;  // past the tiles: the whole threadgroup
  const uint live = min(p.row_group, p.rows - row0);
  const uint i0 = p.gather && !p.grouped ? tg.y : tg.y * BS_MM_TOKENS;
  const uint count = p.grouped ? uint(sorted[2u + 2u * tg.y]) : p.gather ? 1u : min(BS_MM_TOKENS, p.n - i0);
  // Each token's row of work: consecutive, one routed row, or a tile's rows in the order.
  uint work[BS_MM_TOKENS];
  for (uint t = 0; t < BS_MM_TOKENS; ++t) {
    work[t] = p.grouped ? uint(sorted[p.grouped + uint(sorted[1u + 2u * tg.y]) + min(t, count - 1u)]) : i0 + t;
  }
  uint mat = p.mat;
  if (p.gather) mat = p.has_slots ? uint(slots[ids[work[0]]]) : uint(ids[work[0]]);
  const uint words = p.cols * p.bits / 32u, per_word = 32u / p.bits, groups = p.cols / p.group;
  const uint mask = (1u << p.bits) - 1u;
  const uint base = mat * p.rows + row0;
  device const uint* w = (device const uint*)(codes + p.w_off) + base * words;
  float acc[BS_MM_TOKENS][BS_MM_ROW_GROUP];
  for (uint t = 0; t < BS_MM_TOKENS; ++t)
    for (uint r = 0; r < BS_MM_ROW_GROUP; ++r) acc[t][r] = 0.0f;
  // A lane takes BS_MM_PACKS consecutive words of each row per step (8 bytes: fewer, wider loads
  // and one scale and bias for them); words is a multiple of BS_MM_PACKS and a pair never
  // straddles a group (a group of ≥ 32 values is ≥ 4 words at 4 bits, ≥ 8 at 8).
  // One 8-byte load per pair where the codes start 8-byte aligned (rows are whole pairs; buffers
  // start on pages), two 4-byte loads otherwise.
  const bool wide = BS_MM_PACKS == 2u && (p.w_off & 7u) == 0u;
  for (uint wi = lane * BS_MM_PACKS; wi < words; wi += 32u * BS_MM_PACKS) {
    const uint c0 = wi * per_word;
    uint word[BS_MM_ROW_GROUP][BS_MM_PACKS];
    float s[BS_MM_ROW_GROUP], b[BS_MM_ROW_GROUP];
    for (uint r = 0; r < live; ++r) {
      if (wide) {
        const uint2 pair = *(device const uint2*)(w + r * words + wi);
        word[r][0] = pair.x, word[r][1] = pair.y;
      } else {
        for (uint k = 0; k < BS_MM_PACKS; ++k) word[r][k] = w[r * words + wi + k];
      }
      const uint g = (base + r) * groups + c0 / p.group;
      s[r] = bs_load(scales, p.s_off, p.sb_type, g), b[r] = bs_load(biases, p.b_off, p.sb_type, g);
    }
    for (uint t = 0; t < count; ++t) {
      const uint xrow = (p.gather ? work[t] / p.x_div : work[t]) * p.cols + c0;
      device const float* xt = x + xrow;
      float xv[8u * BS_MM_PACKS], sum = 0.0f;  // per_word ≤ 8 (4 and 8 bits)
      for (uint e = 0; e < per_word * BS_MM_PACKS; ++e) {
        xv[e] = p.gated ? bs_silu_gate(xt[e], up[xrow + e]) : xt[e];
        sum += xv[e];
      }
      for (uint r = 0; r < live; ++r) {
        float dot = 0.0f;
        for (uint k = 0; k < BS_MM_PACKS; ++k)
          for (uint e = 0; e < per_word; ++e) dot += float((word[r][k] >> (e * p.bits)) & mask) * xv[k * per_word + e];
        acc[t][r] += s[r] * dot + b[r] * sum;  // Σ (s·q + b)·x = s·Σq·x + b·Σx
      }
    }
  }
  for (uint t = 0; t < count; ++t) {
    for (uint r = 0; r < live; ++r) {
      const float total = simd_sum(acc[t][r]);
      if (lane == 0) y[work[t] * p.rows + row0 + r] = p.has_bias ? total + bias[row0 + r] : total;
    }
  }
}

kernel void bs_qmatmul(device const uchar* codes [[buffer(0)]], device const uchar* scales [[buffer(1)]],
                       device const uchar* biases [[buffer(2)]], device const float* x [[buffer(3)]],
                       device float* y [[buffer(4)]], device const int* ids [[buffer(5)]],
                       device const int* slots [[buffer(6)]], device const int* sorted [[buffer(7)]],
                       device const float* up [[buffer(8)]], constant QMatParams& p [[buffer(9)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]]) {
  bs_qmat_rows(codes, scales, biases, x, up, y, x, ids, slots, sorted, p, tg, sg, lane);  // no bias: x bound, unread
}

// Two or three products over one x in one dispatch, each matrix with its own buffers (codes,
// scales, biases, y, and the linear's bias where p.has_bias) and parameters; a threadgroup's x
// position picks the matrix. The routing (ids, slot table, sorted tiles) is shared: a layer's
// gate and up are routed alike. Never gated (x is bound as up, unread).
kernel void bs_qmatmul_set(device const uchar* codes0 [[buffer(0)]], device const uchar* scales0 [[buffer(1)]],
                           device const uchar* biases0 [[buffer(2)]], device float* y0 [[buffer(3)]],
                           device const float* bias0 [[buffer(4)]], device const uchar* codes1 [[buffer(5)]],
                           device const uchar* scales1 [[buffer(6)]], device const uchar* biases1 [[buffer(7)]],
                           device float* y1 [[buffer(8)]], device const float* bias1 [[buffer(9)]],
                           device const uchar* codes2 [[buffer(10)]], device const uchar* scales2 [[buffer(11)]],
                           device const uchar* biases2 [[buffer(12)]], device float* y2 [[buffer(13)]],
                           device const float* bias2 [[buffer(14)]], device const float* x [[buffer(15)]],
                           device const int* ids [[buffer(16)]], device const int* slots [[buffer(17)]],
                           device const int* sorted [[buffer(18)]], constant QMatSetParams& s [[buffer(19)]],
                           uint3 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  const uint i = tg.x >= s.start[2] ? 2u : tg.x >= s.start[1] ? 1u : 0u;
  uint3 local = tg;
  local.x -= s.start[i];
  if (i == 0u) {
    bs_qmat_rows(codes0, scales0, biases0, x, x, y0, bias0, ids, slots, sorted, s.p[0], local, sg, lane);
  } else if (i == 1u) {
    bs_qmat_rows(codes1, scales1, biases1, x, x, y1, bias1, ids, slots, sorted, s.p[1], local, sg, lane);
  } else {
    bs_qmat_rows(codes2, scales2, biases2, x, x, y2, bias2, ids, slots, sorted, s.p[2], local, sg, lane);
  }
}
