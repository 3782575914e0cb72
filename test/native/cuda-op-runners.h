// The whole-token decoders' kernels on host vectors, so one test text checks them over the CUDA
// emulation, through msl-shim (the linear set) and on a real CUDA device: each call copies its
// operands into device buffers, launches once, synchronises and copies the results back.
// cuda-op-runners-body.h holds the CUDA side, compiled twice (cuda-op-runners-{emu,device}.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/linear-attention.h"
#include "fixtures.h"

namespace bt {

// How a launch went: refused is the kernel's own shape check (cudaErrorInvalidValue).
enum class Launch { ok, refused, failed };

// copy_heads' layout: n tokens of `heads` runs of `width` floats, strides in floats.
struct HeadCopyShape {
  int64_t src_token, src_head, dst_token, dst_head, n, heads, width;
};

// The hybrid layers' kernels (CUDA and Metal), in place where the kernel writes in place.
struct LinearOps {
  const char* name;
  std::function<Launch(const float* w, int64_t C, int64_t K, float* hist, const float* x, int64_t n, float* out)> conv;
  std::function<Launch(const bs::LinearAttnConfig& c, int64_t n, const std::vector<float>* in, float* state, float* y)>
      delta;  // in: qkv, b, a, a_neg, dt_bias
  // q, k, v [n, H, D], log_decay [H]; q scaled by 1/√D inside.
  std::function<Launch(int64_t H, int64_t D, int64_t n, const std::vector<float>* in, float* state, float* y)>
      lightning;
  // x[i] *= sigmoid(g[(i / period) · stride + (i % period) · step]) over n values (g_floats read).
  using Gate = std::function<Launch(float* x, const float* g, int64_t n, int64_t g_floats, int64_t period,
                                    int64_t stride, int64_t step)>;
  Gate gate;
  std::function<Launch(const float* src, int64_t src_floats, float* dst, int64_t dst_floats, const HeadCopyShape& c)>
      copy;
};

struct QkShape {
  int64_t n_tok;
  int n_q, n_kv, head_dim, rot;
  float eps;
};
// An f16 KV cache store joined to qk_norm_rope: v rows [n_tok, n_kv, head_dim] and both caches
// of (row + n_tok) rows, written from `row` on.
struct QkStore {
  const float* v_rows;
  uint16_t *k_cache, *v_cache;
  int32_t row;
};

// keys: rows in the cache (k and v [keys, n_kv, head_dim] of f32 or f16); split: decode over key
// ranges; positions: per query (read from device memory, as a captured graph does), else pos0 + t.
struct AttnShape {
  int n_q, n_kv, head_dim;
  int64_t pos0, n_tok, keys;
  bool f16, split;
  float scale;
  const int32_t* positions = nullptr;
};

// A quantised product over `m`: plain (matrix mat, n tokens) or gathered (ids per row of work);
// up set: x read as SiLU(x)·up; x starts x_offset floats into its buffer (unaligned loads).
struct QmCall {
  const OwnedMatrix* m;
  int64_t n, mat;
  const int32_t* ids;
  const float* x;
  int64_t x_offset;
  const float* up;
  float* y;
  int x_div = 1;                // gathered: row i of work reads x row i / x_div (x holds n rows all the same)
  bool grouped = false;         // gathered: the rows sorted by matrix on the device first (route_sort)
  const float* bias = nullptr;  // [rows] added to every row's sums in the launch
};

// A dense product y (+)= alpha · W[mat] x over n tokens; W's elements as stored.
struct DenseCall {
  const OwnedMatrix* m;
  int64_t n, mat;
  bool accumulate;
  float alpha;
  const float* x;
  float* y;
};

// The attention and feed-forward kernels only the CUDA decoder uses.
struct CudaDecoderOps {
  const char* name;
  // Whether fused kernels are expected bit-for-bit equal to the separate launches: true in the
  // emulation (one compiler pass); nvcc may contract multiply-adds differently per kernel.
  bool exact;
  // Over x[offset, offset + n) of a buffer (the float4 loads only from 16-byte boundaries).
  std::function<Launch(const float* x, int64_t offset, int64_t n, int32_t* out)> argmax;
  // x1/out1 null: one array; row ≥ 0: both outputs start row · row_elems further (read on the device).
  std::function<Launch(const float* x0, uint16_t* out0, const float* x1, uint16_t* out1, int64_t n, int32_t row,
                       int64_t row_elems)>
      to_half;
  std::function<Launch(const QkShape& a, float* q, float* k, const float* q_w, const float* k_w, const int32_t* pos,
                       const double* inv_freq, const QkStore* store)>
      qk_norm_rope;
  std::function<Launch(const float* x, const float* w, int64_t rows, int64_t d, float eps, float* y)> rmsnorm;
  std::function<Launch(float* x, const float* res, const float* w, int64_t rows, int64_t d, float eps, float* y)>
      add_rmsnorm;
  // rows [n·k, d] of routed outputs combined by weights [n, k] into out [n, d]; then the same
  // joined to add_rmsnorm (x += the combined rows plus `shared` [n, d] when given, scaled by
  // sigmoid(gate[row]) when that is given too; y = RMSNorm(x)).
  std::function<Launch(const float* rows, const float* weights, int64_t n, int k, int64_t d, float* out)> combine;
  std::function<Launch(float* x, const float* rows, const float* weights, int k, const float* shared, const float* gate,
                       const float* w, int64_t n, int64_t d, float eps, float* y)>
      combine_add_rmsnorm;
  // y += s · x over n values; with period > 0, x[i % period] (a bias over rows).
  std::function<Launch(const float* x, float s, int64_t n, float* y, int64_t period)> add;
  std::function<Launch(float* x, const int32_t* pos, const double* inv_freq, int64_t n_tok, int heads, int head_dim,
                       int rot)>
      rope;
  std::function<Launch(const AttnShape& a, const float* q, const void* k, const void* v, float* out)> attention;
  std::function<Launch(const float* g, const float* up, int64_t n, float* out)> silu_mul;
  LinearOps::Gate gate;  // LinearOps' sigmoid gate (a shared expert's, before its add)
  std::function<Launch(const QmCall& c)> qmatmul;
  // ids [n] < n_mats sorted into order [n], tiles [2 · max tiles] of ≤ per_tile rows, tile_count.
  std::function<Launch(const int32_t* ids, int64_t n, int64_t n_mats, int per_tile, int32_t* order, int32_t* tiles,
                       int32_t* tile_count)>
      route_sort;
  // one_launch: the products as one set (the LoRA steps of several linears), else one launch each.
  std::function<Launch(const std::vector<DenseCall>& calls, bool one_launch)> dense;
};

LinearOps cuda_emu_linear_ops();
CudaDecoderOps cuda_emu_decoder_ops();
// The same on the first CUDA device (either pointer may be null); when this build or machine has
// none, t is skipped with the reason and the result is false.
bool cuda_device_ops(T& t, LinearOps* linear, CudaDecoderOps* decoder);

}  // namespace bt
