// Qwen3-style attention's per-head RMSNorm of q and k followed by RoPE, in place, in one launch
// (the decoder's four launches of rmsnorm and rope as one): q[n_tok, n_q, head_dim] with q_w,
// k[n_tok, n_kv, head_dim] with k_w (both null: no norm, the two RoPE launches as one), then NeoX
// pairs (i, i + rot/2) at positions[t] (rope.cuh); optionally the f16 cache store after it (KvStore).
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

struct QkNormRopeArgs {
  int64_t n_tok;
  int n_q, n_kv, head_dim, rot_dims;  // head_dim ≤ kMaxHeadDim, rot_dims ≤ head_dim
  float eps;
};

// An f16 KV cache's store joined to the launch: the chunk's k rows (after their norm and
// rotation) and v_rows [n_tok, n_kv, head_dim] converted into k and v from row[0] on (read on
// the device), as to-half.cu's pair conversion does.
struct KvStore {
  uint16_t *k, *v;
  const float* v_rows;
  const int32_t* row;
};

cudaError_t launch_qk_norm_rope(const QkNormRopeArgs& a, float* q, float* k, const float* q_w, const float* k_w,
                                const int32_t* positions, const double* inv_freq, cudaStream_t s,
                                const KvStore* store = nullptr);

}  // namespace bs::BS_CUDA_NS
