// Sigmoid group routing (DeepSeek-V3 style): one simdgroup per token. Selection score = sigmoid
// + correction bias; with groups, a group's score is its two best selection scores, groups
// outside the best topk_group score 0; then k argmax rounds, ties to the lower id. Weights are
// the plain sigmoids, renormalised when norm and k > 1, times the scaling factor.
kernel void bs_route_sigmoid_group(device const float* logits [[buffer(0)]], device const float* bias [[buffer(1)]],
                                   device int* ids [[buffer(2)]], device float* weights [[buffer(3)]],
                                   constant SigmoidGroupParams& p [[buffer(4)]],
                                   uint3 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const uint t = tg.x, E = p.n_experts, per_lane = (E + 31u) / 32u, group_size = E / p.n_group;
  device const float* l = logits + t * E;
  float sv[BS_MAX_EXPERTS / 32u], sel[BS_MAX_EXPERTS / 32u];
  for (uint e = 0; e < per_lane; ++e) {
    const uint id = lane + 32u * e;
    sv[e] = id < E ? 1.0f / (1.0f + exp(-l[id])) : 0.0f;
    sel[e] = id < E ? sv[e] + (p.has_bias ? bias[id] : 0.0f) : -INFINITY;
  }
  if (p.n_group > 1) {
    // Group scores (every lane computes them all), then the kept groups by the same argmax.
    float gscore[32];
    for (uint g = 0; g < p.n_group; ++g) {
      float b1 = -INFINITY, b2 = -INFINITY;  // this lane's two best in group g
      for (uint e = 0; e < per_lane; ++e) {
        const uint id = lane + 32u * e;
        if (id >= E || id / group_size != g) continue;
        if (sel[e] > b1) {
          b2 = b1;
          b1 = sel[e];
        } else if (sel[e] > b2) {
          b2 = sel[e];
        }
      }
      float top;
      const uint owner = bs_simd_argmax(b1, lane, top);  // the lane holding the group's best
      const float second = simd_max(lane == owner ? b2 : b1);
      gscore[g] = top + second;
    }
    uint kept = 0;  // bit g: group g kept
    for (uint r = 0; r < p.topk_group; ++r) {
      float bv = -INFINITY;
      uint bi = 0xffffffffu;
      for (uint g = 0; g < p.n_group; ++g) {
        if (!(kept & (1u << g)) && bs_better(gscore[g], g, bv, bi)) {
          bv = gscore[g];
          bi = g;
        }
      }
      kept |= 1u << bi;
    }
    for (uint e = 0; e < per_lane; ++e) {
      const uint id = lane + 32u * e;
      if (id < E && !(kept & (1u << (id / group_size)))) sel[e] = 0.0f;
    }
  }
  uint taken = 0;
  float chosen_sum = 0.0f;
  for (uint r = 0; r < p.top_k; ++r) {
    float best_v = -INFINITY;
    uint best_i = 0xffffffffu;
    for (uint e = 0; e < per_lane; ++e) {
      const uint id = lane + 32u * e;
      if (id < E && !(taken & (1u << e)) && bs_better(sel[e], id, best_v, best_i)) {
        best_v = sel[e];
        best_i = id;
      }
    }
    float win_v;
    const uint win = bs_simd_argmax(best_v, best_i, win_v);
    const bool mine = win % 32u == lane;
    if (mine) taken |= 1u << (win / 32u);
    const float s = simd_sum(mine ? sv[win / 32u] : 0.0f);  // the winner's sigmoid, to every lane
    chosen_sum += s;
    if (lane == 0) {
      ids[t * p.top_k + r] = int(win);
      weights[t * p.top_k + r] = s;
    }
  }
  if (lane == 0) {
    const float div = p.norm && p.top_k > 1 ? chosen_sum : 1.0f;
    for (uint r = 0; r < p.top_k; ++r) weights[t * p.top_k + r] = weights[t * p.top_k + r] / div * p.scaling;
  }
}
