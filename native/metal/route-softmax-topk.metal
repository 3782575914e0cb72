// Softmax top-k routing: one simdgroup per token, lane L holding experts L, L + 32, ... Experts
// are chosen on the logits (softmax keeps their order), k rounds of a simdgroup argmax, ties to
// the lower id as the reference orders them. ids and weights stay on the GPU for the experts.
kernel void bs_route_softmax_topk(device const float* logits [[buffer(0)]], device int* ids [[buffer(1)]],
                                  device float* weights [[buffer(2)]], constant SoftmaxTopKParams& p [[buffer(3)]],
                                  uint3 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const uint t = tg.x, E = p.n_experts, per_lane = (E + 31u) / 32u;
  device const float* l = logits + t * E;
  float lv[BS_MAX_EXPERTS / 32u];
  float local_max = -INFINITY;
  for (uint e = 0; e < per_lane; ++e) {
    const uint id = lane + 32u * e;
    lv[e] = id < E ? l[id] : -INFINITY;
    local_max = max(local_max, lv[e]);
  }
  const float mx = simd_max(local_max);
  float local_sum = 0.0f;
  for (uint e = 0; e < per_lane; ++e) local_sum += lane + 32u * e < E ? exp(lv[e] - mx) : 0.0f;
  const float sum = simd_sum(local_sum);
  uint taken = 0;  // bit e: expert lane + 32e chosen
  float chosen_sum = 0.0f;
  for (uint r = 0; r < p.top_k; ++r) {
    float best_v = -INFINITY;
    uint best_i = 0xffffffffu;
    for (uint e = 0; e < per_lane; ++e) {
      const uint id = lane + 32u * e;
      if (id < E && !(taken & (1u << e)) && bs_better(lv[e], id, best_v, best_i)) {
        best_v = lv[e];
        best_i = id;
      }
    }
    float win_v;
    const uint win = bs_simd_argmax(best_v, best_i, win_v);
    if (win % 32u == lane) taken |= 1u << (win / 32u);
    const float prob = exp(win_v - mx) / sum;
    chosen_sum += prob;
    if (lane == 0) {
      ids[t * p.top_k + r] = int(win);
      weights[t * p.top_k + r] = prob;
    }
  }
  if (p.norm && lane == 0) {
    for (uint r = 0; r < p.top_k; ++r) weights[t * p.top_k + r] /= chosen_sum;
  }
}
