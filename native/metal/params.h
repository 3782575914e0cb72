// Argument blocks of the Metal kernels, shared verbatim by the host (C++) and the kernels (MSL):
// the host embeds this file ahead of the .metal sources. Plain 32-bit fields only, so both
// compilers lay them out alike. Byte offsets locate operands inside page-aligned buffers.
#ifndef BS_METAL_PARAMS_H
#define BS_METAL_PARAMS_H
#ifndef __METAL_VERSION__
#include <cstdint>
namespace bs::metal {
using uint = uint32_t;
#endif

// Element types of weights, scales and caches (a kernel's `type` fields).
#define BS_T_F32 0u
#define BS_T_F16 1u
#define BS_T_BF16 2u

// Rows one matmul simdgroup's threadgroup covers, and tokens one pass shares a weight row across.
#define BS_MM_SIMDGROUPS 4u
#define BS_MM_TOKENS 8u
// Rows a bs_qmatmul simdgroup computes together where the grid stays large (x read once for
// them), and the threadgroups a grid must keep for that.
#define BS_MM_ROW_GROUP 4u
#define BS_MM_ROW_GROUP_MIN_GROUPS 256u
// Consecutive uint32 code words a bs_qmatmul lane reads per row and step (as MLX's qmv_fast: two
// packs, 8 bytes, per thread).
#define BS_MM_PACKS 2u
// Dense rows at least this long take a threadgroup each (simdgroups over the columns; a LoRA A
// step, a router) instead of a simdgroup: fewer dependent loads per lane.
#define BS_DENSE_SPLIT_COLS 256u
// Threads of row-parallel (norm) and elementwise kernels; most routed experts a kernel takes.
#define BS_BLOCK 256u
#define BS_MAX_EXPERTS 512u
#define BS_MAX_HEAD_DIM 256u

// y[i, rows] = W[mat_i] · x[i, cols] for i < n, W affine (codes, scales, biases): mat_i is
// `mat`, or with `gather` slots[ids[i]] (the slot table; identity when has_slots is 0) and x
// row i / x_div (x_div = top-k: every routed slot of a token reads the token's row). With
// `grouped` (gathered) the rows come in tiles of one matrix as bs_route_sort lays them out.
struct QMatParams {
  uint rows, cols, bits, group, sb_type;
  uint w_off, s_off, b_off;  // bytes into the code, scale and bias buffers
  uint n, mat, gather, has_slots, x_div, grouped;
  uint row_group;  // rows per simdgroup: 1 or BS_MM_ROW_GROUP (qmat_grid)
  uint has_bias;   // y[i, r] = the sum + bias[r] (bs_qmatmul_set: a linear's bias)
  uint gated;      // x read as SiLU(x)·up (bs_qmatmul: a MoE down projection over gate and up rows)
};

// Up to BS_MM_SET products over the same x in one dispatch (q, k, v; gate, up): matrix i takes
// the threadgroups [start[i], start[i + 1]) along x, the same rows of work along y.
#define BS_MM_SET 3u
struct QMatSetParams {
  QMatParams p[BS_MM_SET];
  uint start[BS_MM_SET + 1u];
};

// n rows of work sorted by matrix ids[i] < n_mats into one int buffer: the tile count, the tiles
// [max_tiles, 2] (first position in the order, rows ≤ BS_MM_TOKENS), then the order [n].
struct RouteSortParams {
  uint n, n_mats, max_tiles;
};

// y[i, rows] = alpha · W[mat] · x[i, cols] (+ y when accumulate), W dense F32/F16/BF16.
struct DenseParams {
  uint rows, cols, type, w_off, mat, n, accumulate;
  float alpha;
};

// Up to BS_MM_SET dense products in one dispatch (a LoRA step of q, k and v), each with its own
// W, x and y: matrix i takes the threadgroups [start[i], start[i + 1]) along x.
struct DenseSetParams {
  DenseParams p[BS_MM_SET];
  uint start[BS_MM_SET + 1u];
};

// out[i, cols] = row ids[i] of the table, affine (bits > 0) or dense.
struct EmbedParams {
  uint rows, cols, bits, group, type, w_off, s_off, b_off, n;
};

// y = RMSNorm(x)·w per row of d; with `add`, first x += res in place: res rows [rows, d], or with
// k > 0 each row's k routed rows [rows·k, d] combined by weights [rows, k] (as CombineParams),
// plus with `shared` the shared experts' rows [rows, d], with `gated` each scaled first by the
// sigmoid of its row's gate logit [rows].
struct RmsNormParams {
  uint rows, d;
  float eps;
  uint add, k, shared, gated;
};

// NeoX pairs (i, i + rot/2) of each head.
struct RopeParams {
  uint n_tok, n_heads, head_dim, rot_dims;
};

// Qwen3's per-head RMSNorm of q [n_tok, n_q, head_dim] and k [n_tok, n_kv, head_dim], then NeoX
// RoPE; with `store` the k rows and v rows into an f16 cache after them.
struct QkNormRopeParams {
  uint n_tok, n_q, n_kv, head_dim, rot_dims, store;
  float eps;
  uint norm;  // 0: RoPE alone (models without q/k norms; the norm weights unread)
};

// Causal attention of n_tok queries at positions pos0.. over a cache of [*, n_kv, head_dim].
struct AttentionParams {
  uint n_q, n_kv, head_dim, pos0, n_tok, kv_type;
  float scale;
};

struct SoftmaxTopKParams {
  uint n_tok, n_experts, top_k, norm;
};

struct SigmoidGroupParams {
  uint n_tok, n_experts, top_k, n_group, topk_group, norm, has_bias;
  float scaling;
};

// out[t, d] = Σ_j weights[t, j] · y[t·k + j, d]: a token's routed expert outputs, weighted.
struct CombineParams {
  uint n_tok, k, d;
};

struct ElementwiseParams {
  uint n;
  float s;
};

// y[i] += b[i % width] for i < n: a linear's bias over the chunk's rows.
struct BiasParams {
  uint n, width;
};

// y[rows] = W[:, :hidden] · x + Σ_j W[:, hidden + cur_j] + Σ_j W[:, hidden + E + prev_j], W
// dense [rows, hidden + 2E] (a prerouter head's first layer), gelu-erf applied when `gelu`.
struct PrerouterParams {
  uint rows, hidden, n_experts, k, type, w_off, has_cur, has_prev, gelu;
};

// Gated DeltaNet (Qwen3-Next, Qwen3.5): most conv taps a thread keeps, rows of a head's state one
// simdgroup keeps, the largest key head dim (a multiple of 32).
#define BS_MAX_CONV 8u
#define BS_DELTA_ROWS 4u
#define BS_MAX_DELTA_K 256u

// out[t, c] = silu(Σ_j w[c, j] · in[t + j, c]) over in = (history [taps-1, channels], x [n_tok,
// channels]); the history becomes in's last taps-1 rows.
struct ConvParams {
  uint channels, taps, n_tok;
};

// The delta rule over n_tok tokens of qkv [n_tok, 2·k_heads·k_dim + v_heads·v_dim] with raw b, a
// [n_tok, v_heads], a_neg and dt_bias [v_heads], state S [v_heads, v_dim, k_dim] in place.
struct DeltaParams {
  uint n_tok, k_heads, v_heads, k_dim, v_dim;
};

// Lightning attention over n_tok tokens of q, k, v [n_tok, heads, dim] (q times scale first).
struct LightningParams {
  uint n_tok, heads, dim;
  float scale;
};

// x[i] *= sigmoid(g[(i / period) · g_stride + (i % period) · g_step]) for i < n.
struct GateParams {
  uint n, period, g_stride, g_step;
};

// dst[t, h, :width] = src[t, h, :width] with each side's token and head strides (floats).
struct HeadCopyParams {
  uint src_token, src_head, dst_token, dst_head, n_tok, heads, width;
};

#ifndef __METAL_VERSION__
}  // namespace bs::metal
#endif
#endif  // BS_METAL_PARAMS_H
