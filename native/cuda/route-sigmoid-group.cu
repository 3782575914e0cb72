#include "cuda/route-sigmoid-group.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// DeepSeek-V3 style. Selection score = sigmoid + correction bias; with groups, a group's score
// is its two best selection scores and groups outside the best topk_group score 0; then k warp
// argmax rounds. Weights are the plain sigmoids, renormalised when norm and k > 1, scaled.
__global__ void route_sigmoid_group_kernel(SigmoidGroupArgs a, const float* __restrict__ logits,
                                           int32_t* __restrict__ ids, float* __restrict__ weights) {
  const int lane = threadIdx.x, E = a.n_experts, per_lane = (E + 31) / 32, group_size = E / a.n_group;
  const int64_t t = blockIdx.x;
  const float* l = logits + t * E;
  float sv[kMaxExperts / 32], sel[kMaxExperts / 32];
  for (int e = 0; e < per_lane; ++e) {
    const int id = lane + 32 * e;
    sv[e] = id < E ? 1.0f / (1.0f + expf(-l[id])) : 0.0f;
    sel[e] = id < E ? sv[e] + (a.bias ? a.bias[id] : 0.0f) : -INFINITY;
  }
  if (a.n_group > 1) {
    float gscore[32];  // every lane computes them all
    for (int g = 0; g < a.n_group; ++g) {
      float b1 = -INFINITY, b2 = -INFINITY;  // this lane's two best in group g
      for (int e = 0; e < per_lane; ++e) {
        const int id = lane + 32 * e;
        if (id >= E || id / group_size != g) continue;
        if (sel[e] > b1) {
          b2 = b1;
          b1 = sel[e];
        } else if (sel[e] > b2) {
          b2 = sel[e];
        }
      }
      float top;
      const uint32_t owner = warp_argmax(b1, lane, top);  // the lane holding the group's best
      const float second = warp_max(static_cast<uint32_t>(lane) == owner ? b2 : b1);
      gscore[g] = top + second;
    }
    uint32_t kept = 0;  // bit g: group g kept
    for (int r = 0; r < a.topk_group; ++r) {
      float bv = -INFINITY;
      uint32_t bi = 0xffffffffu;
      for (int g = 0; g < a.n_group; ++g) {
        if (!(kept & (1u << g)) && better(gscore[g], g, bv, bi)) {
          bv = gscore[g];
          bi = g;
        }
      }
      kept |= 1u << bi;
    }
    for (int e = 0; e < per_lane; ++e) {
      const int id = lane + 32 * e;
      if (id < E && !(kept & (1u << (id / group_size)))) sel[e] = 0.0f;
    }
  }
  uint32_t taken = 0;
  float chosen_sum = 0.0f;
  for (int r = 0; r < a.top_k; ++r) {
    float win_v;
    const uint32_t win = warp_take_best(sel, per_lane, E, taken, win_v);
    const bool mine = static_cast<int>(win % 32) == lane;
    const float s = warp_sum(mine ? sv[win / 32] : 0.0f);  // the winner's sigmoid, to every lane
    chosen_sum += s;
    if (lane == 0) {
      ids[t * a.top_k + r] = static_cast<int32_t>(win);
      weights[t * a.top_k + r] = s;
    }
  }
  if (lane == 0) {
    const float div = a.norm && a.top_k > 1 ? chosen_sum : 1.0f;
    for (int r = 0; r < a.top_k; ++r) weights[t * a.top_k + r] = weights[t * a.top_k + r] / div * a.scaling;
  }
}

}  // namespace

cudaError_t launch_route_sigmoid_group(const SigmoidGroupArgs& a, const float* logits, int32_t* ids, float* weights,
                                       cudaStream_t s) {
  if (a.n_tok <= 0) return cudaSuccess;
  BS_LAUNCH(route_sigmoid_group_kernel, static_cast<uint32_t>(a.n_tok), 32, s)(a, logits, ids, weights);
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
