#include "cuda/route-softmax-topk.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// Lane L holds experts L, L + 32, ... Experts are chosen on the logits (softmax keeps their
// order): k rounds of a warp argmax.
__global__ void route_softmax_topk_kernel(SoftmaxTopKArgs a, const float* __restrict__ logits,
                                          int32_t* __restrict__ ids, float* __restrict__ weights) {
  const int lane = threadIdx.x, E = a.n_experts, per_lane = (E + 31) / 32;
  const int64_t t = blockIdx.x;
  const float* l = logits + t * E;
  float lv[kMaxExperts / 32];
  float local_max = -INFINITY;
  for (int e = 0; e < per_lane; ++e) {
    const int id = lane + 32 * e;
    lv[e] = id < E ? l[id] : -INFINITY;
    local_max = fmaxf(local_max, lv[e]);
  }
  const float mx = warp_max(local_max);
  float local_sum = 0.0f;
  for (int e = 0; e < per_lane; ++e) local_sum += lane + 32 * e < E ? expf(lv[e] - mx) : 0.0f;
  const float sum = warp_sum(local_sum);
  uint32_t taken = 0;  // bit e: expert lane + 32e chosen
  float chosen_sum = 0.0f;
  for (int r = 0; r < a.top_k; ++r) {
    float win_v;
    const uint32_t win = warp_take_best(lv, per_lane, E, taken, win_v);
    const float prob = expf(win_v - mx) / sum;
    chosen_sum += prob;
    if (lane == 0) {
      ids[t * a.top_k + r] = static_cast<int32_t>(win);
      weights[t * a.top_k + r] = prob;
    }
  }
  if (a.norm && lane == 0) {
    for (int r = 0; r < a.top_k; ++r) weights[t * a.top_k + r] /= chosen_sum;
  }
}

}  // namespace

cudaError_t launch_route_softmax_topk(const SoftmaxTopKArgs& a, const float* logits, int32_t* ids, float* weights,
                                      cudaStream_t s) {
  if (a.n_tok <= 0) return cudaSuccess;
  BS_LAUNCH(route_softmax_topk_kernel, static_cast<uint32_t>(a.n_tok), 32, s)(a, logits, ids, weights);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
