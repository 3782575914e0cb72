// Linear attention. Gated DeltaNet (Qwen3-Next, Qwen3.5) as common/linear-attention.cpp runs it: the depthwise
// causal conv with SiLU over a history, and the delta rule's recurrence with its input
// preparation (q, k at unit RMS scaled by 1/Dk and 1/√Dk; β = sigmoid(b); decay e^g with
// g = a_neg · softplus(a + dt_bias)): S ← e^g S; S ← S + β (v − S k) kᵀ; y = S q.

// One thread per channel walks the tokens in order, the window ending at slot BS_MAX_CONV-1
// (the current token) whatever the taps, so the history it rewrites is only its own channel's.
kernel void bs_causal_conv(device const float* w [[buffer(0)]], device float* history [[buffer(1)]],
                           device const float* x [[buffer(2)]], device float* out [[buffer(3)]],
                           constant ConvParams& p [[buffer(4)]], uint3 tg [[threadgroup_position_in_grid]],
                           uint tid [[thread_index_in_threadgroup]]) {
  const uint c = tg.x * BS_BLOCK + tid;
  if (c >= p.channels) return;
  const uint M = BS_MAX_CONV, off = M - p.taps;
  float win[BS_MAX_CONV], tap[BS_MAX_CONV];
  for (uint j = 0; j < M; ++j) {
    tap[j] = j >= off ? w[c * p.taps + j - off] : 0.0f;
    win[j] = j >= off && j + 1 < M ? history[(j - off) * p.channels + c] : 0.0f;
  }
  for (uint t = 0; t < p.n_tok; ++t) {
    win[M - 1] = x[t * p.channels + c];
    float s = 0.0f;
    for (uint j = 0; j < M; ++j)
      if (j >= off) s += tap[j] * win[j];
    out[t * p.channels + c] = s / (1.0f + exp(-s));
    for (uint j = 0; j + 1 < M; ++j) win[j] = win[j + 1];
  }
  for (uint j = 0; j + 1 < M; ++j)
    if (j >= off) history[(j - off) * p.channels + c] = win[j];
}

#define BS_DELTA_LANE (BS_MAX_DELTA_K / 32u)

// x · scale / √(mean(x²) + 1e-6) over the k_dim elements a simdgroup's lanes hold (e per lane).
// Loops run to constants with guards, so the arrays can stay in registers.
inline void bs_rms_scale(thread float* x, uint e, uint k_dim, float scale) {
  float ss = 0.0f;
  for (uint i = 0; i < BS_DELTA_LANE; ++i)
    if (i < e) ss += x[i] * x[i];
  ss = simd_sum(ss);
  const float inv = scale / sqrt(ss / float(k_dim) + 1e-6f);
  for (uint i = 0; i < BS_DELTA_LANE; ++i) x[i] *= inv;
}

// One simdgroup per BS_DELTA_ROWS rows of a head's S (groups: row groups × v heads): each row
// evolves on its own given q, k, its v element and the gates. Lane L holds elements L, L + 32, …
// of q, k and its rows, kept across the tokens, which run in order.
kernel void bs_delta_rule(device const float* qkv [[buffer(0)]], device const float* b [[buffer(1)]],
                          device const float* a [[buffer(2)]], device const float* a_neg [[buffer(3)]],
                          device const float* dt_bias [[buffer(4)]], device float* state [[buffer(5)]],
                          device float* y [[buffer(6)]], constant DeltaParams& p [[buffer(7)]],
                          uint3 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const uint h = tg.y, row0 = tg.x * BS_DELTA_ROWS, e = p.k_dim / 32u;
  const uint C = 2u * p.k_heads * p.k_dim + p.v_heads * p.v_dim, kh = h / (p.v_heads / p.k_heads);
  const uint rows = min(p.v_dim - row0, BS_DELTA_ROWS);
  float S[BS_DELTA_ROWS][BS_DELTA_LANE];
  device float* base = state + (h * p.v_dim + row0) * p.k_dim;
  for (uint r = 0; r < BS_DELTA_ROWS; ++r)
    for (uint i = 0; i < BS_DELTA_LANE; ++i) S[r][i] = r < rows && i < e ? base[r * p.k_dim + lane + 32u * i] : 0.0f;
  const float inv_dk = 1.0f / float(p.k_dim), inv_sqrt_dk = 1.0f / sqrt(float(p.k_dim));
  for (uint t = 0; t < p.n_tok; ++t) {
    device const float* row = qkv + t * C;
    float q[BS_DELTA_LANE], k[BS_DELTA_LANE];
    for (uint i = 0; i < BS_DELTA_LANE; ++i) {
      q[i] = i < e ? row[kh * p.k_dim + lane + 32u * i] : 0.0f;
      k[i] = i < e ? row[p.k_heads * p.k_dim + kh * p.k_dim + lane + 32u * i] : 0.0f;
    }
    bs_rms_scale(q, e, p.k_dim, inv_dk);
    bs_rms_scale(k, e, p.k_dim, inv_sqrt_dk);
    const float x = a[t * p.v_heads + h] + dt_bias[h];
    const float beta = 1.0f / (1.0f + exp(-b[t * p.v_heads + h]));
    const float softplus = x > 20.0f ? x : x < -15.0f ? exp(x) : log(1.0f + exp(x));
    const float decay = exp(a_neg[h] * softplus);
    device const float* v = row + 2u * p.k_heads * p.k_dim + h * p.v_dim + row0;
    device float* yt = y + (t * p.v_heads + h) * p.v_dim + row0;
    for (uint r = 0; r < BS_DELTA_ROWS; ++r) {
      if (r >= rows) break;
      float sk = 0.0f;
      for (uint i = 0; i < BS_DELTA_LANE; ++i) {
        S[r][i] *= decay;
        if (i < e) sk += S[r][i] * k[i];
      }
      const float d = beta * (v[r] - simd_sum(sk));
      float sq = 0.0f;
      for (uint i = 0; i < BS_DELTA_LANE; ++i) {
        S[r][i] += d * k[i];
        if (i < e) sq += S[r][i] * q[i];
      }
      sq = simd_sum(sq);
      if (lane == 0) yt[r] = sq;
    }
  }
  for (uint r = 0; r < BS_DELTA_ROWS; ++r)
    for (uint i = 0; i < BS_DELTA_LANE; ++i)
      if (r < rows && i < e) base[r * p.k_dim + lane + 32u * i] = S[r][i];
}

// Lightning attention (bailing_moe_linear's linear layers), the recurrent form: per head h with
// decay a = e^{log_decay[h]}, S ← a S + k vᵀ; y = Sᵀ q over S [D, D], q scaled first. One
// simdgroup per BS_DELTA_ROWS columns j of a head's S (groups: column groups × heads): lane L
// holds rows L, L + 32, … of q, k and its columns, kept across the tokens in order.
kernel void bs_lightning_rule(device const float* q [[buffer(0)]], device const float* k [[buffer(1)]],
                              device const float* v [[buffer(2)]], device const float* log_decay [[buffer(3)]],
                              device float* state [[buffer(4)]], device float* y [[buffer(5)]],
                              constant LightningParams& p [[buffer(6)]], uint3 tg [[threadgroup_position_in_grid]],
                              uint lane [[thread_index_in_simdgroup]]) {
  const uint h = tg.y, col0 = tg.x * BS_DELTA_ROWS, D = p.dim, e = D / 32u;
  const uint cols = min(D - col0, BS_DELTA_ROWS);
  const float decay = exp(log_decay[h]);
  float S[BS_DELTA_ROWS][BS_DELTA_LANE];
  device float* base = state + h * D * D + col0;
  for (uint c = 0; c < BS_DELTA_ROWS; ++c)
    for (uint i = 0; i < BS_DELTA_LANE; ++i) S[c][i] = c < cols && i < e ? base[(lane + 32u * i) * D + c] : 0.0f;
  for (uint t = 0; t < p.n_tok; ++t) {
    const uint at = (t * p.heads + h) * D;
    float qs[BS_DELTA_LANE], ks[BS_DELTA_LANE];
    for (uint i = 0; i < BS_DELTA_LANE; ++i) {
      qs[i] = i < e ? q[at + lane + 32u * i] * p.scale : 0.0f;
      ks[i] = i < e ? k[at + lane + 32u * i] : 0.0f;
    }
    for (uint c = 0; c < BS_DELTA_ROWS; ++c) {
      if (c >= cols) break;
      const float vc = v[at + col0 + c];
      float acc = 0.0f;
      for (uint i = 0; i < BS_DELTA_LANE; ++i) {
        S[c][i] = decay * S[c][i] + ks[i] * vc;
        if (i < e) acc += qs[i] * S[c][i];
      }
      acc = simd_sum(acc);
      if (lane == 0) y[at + col0 + c] = acc;
    }
  }
  for (uint c = 0; c < BS_DELTA_ROWS; ++c)
    for (uint i = 0; i < BS_DELTA_LANE; ++i)
      if (c < cols && i < e) base[(lane + 32u * i) * D + c] = S[c][i];
}
