// RoPE in place on the device over x[n_tok, n_heads, head_dim]: non-traditional (NeoX) pairs
// (i, i + rot/2), angle positions[t] · inv_freq[i]; positions and inv_freq (theta^(-2i/rot),
// computed by the host in double) are device buffers.
#pragma once
#include <cstdint>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

cudaError_t launch_rope(float* x, const int32_t* positions, const double* inv_freq, int64_t n_tok, int n_heads,
                        int head_dim, int rot_dims, cudaStream_t s);

}  // namespace bs::BS_CUDA_NS
