// A backend is a table of kernel functions plus supports(op, weight), ggml-style. The scalar
// CPU reference (native/cpu/ops-ref.cpp) is the spec; fast CPU kernels, Metal and CUDA fill
// the same table and are compared with it op by op (test/native). Pointers are host memory:
// both target machines (Apple silicon, Jetson) share memory between CPU and GPU.
// Activations are float32; weights are read in place from the mmapped file.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/function-ref.h"
#include "common/quant.h"

namespace bs {

class ThreadPool;
class Model;
class DeviceDecoder;

// Per-call execution context: where parallel work may run (nullptr pool: the calling thread).
struct ExecCtx {
  ThreadPool* pool = nullptr;
  // Activation precision of integer dot-product paths: 16 bits, two bytes per activation (the
  // default: logits ~1e-4 of their scale from the reference), 24, three bytes (~1e-6, a half
  // more dot products), or 8, one byte (~1e-2, as a Q8 activation; half the dot products of
  // 16). Float paths ignore it.
  int activation_bits = 16;
  int threads() const;
  // fn(begin, end) over disjoint ranges covering [0, n), each at most `grain` long (grain ≤ 0:
  // one range per thread); see ThreadPool::parallel_for.
  void parallel_for(int64_t n, RangeFn fn, int64_t grain = 0) const;
};

enum class Op : uint8_t {
  QMatVec,
  QMatMul,
  DenseMatMul,
  GatherMatMul,
  Embed,
  RmsNorm,
  Rope,
  Attention,
  RouteSoftmaxTopK,
  RouteSigmoidGroup,
  SiluMul,
  Add,
  LoraDelta,
  Count
};
const char* op_name(Op op);

struct RopeParams {
  int n_heads = 0, head_dim = 0;
  int rot_dims = 0;  // rotated leading dims of each head (even, ≤ head_dim); the rest pass through
  double theta = 10000.0;
};

struct AttentionParams {
  int n_q_heads = 0, n_kv_heads = 0, head_dim = 0;  // q head h reads kv head h / (n_q / n_kv)
  float scale = 1.0f;
  bool kv_f16 = false;  // the k and v caches hold IEEE half floats instead of float32
};

struct SoftmaxTopKParams {
  int n_experts = 0, top_k = 0;
  bool norm_topk_prob = true;
};

struct SigmoidGroupParams {
  int n_experts = 0, top_k = 0;
  int n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  float routed_scaling_factor = 1.0f;
  const float* correction_bias = nullptr;  // [n_experts], selection only
};

// The unmerged LoRA of one linear module: y += scale · B (A x) beside the base y = W x.
// A [rank, in] and B [out, rank] are plain F16/BF16/F32 matrices of one dtype (rows = rank for
// A, rows = out for B); per-module scale (alpha/r, alpha/√r or an absolute mlx-lm scale).
struct LoraWeights {
  WeightMatrix a, b;
  float scale = 1.0f;
};

// Filled with designated initialisers; an op a kernel set does not implement stays null.
struct Kernels {
  // y[rows] = W[mat] · x[cols]; W affine 4/8-bit.
  void (*qmatvec)(const ExecCtx&, const WeightMatrix& w, int64_t mat, const float* x, float* y) = nullptr;
  // y[n, rows] = x[n, cols] · W[mat]ᵀ for a small batch n; W affine 4/8-bit.
  void (*qmatmul)(const ExecCtx&, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) = nullptr;
  // The same for plain F16/BF16/F32 weights.
  void (*dense_matmul)(const ExecCtx&, const WeightMatrix& w, int64_t mat, const float* x, int64_t n,
                       float* y) = nullptr;
  // y[i, rows] = W[ids[i]] · x[i, cols] for i < m over a stacked [E, rows, cols] tensor: the
  // gathered expert matmul. Callers group equal ids together so a kernel can batch them.
  void (*gather_matmul)(const ExecCtx&, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m,
                        float* y) = nullptr;
  // ys[j] = what gather_matmul(w[j], ids, x, m) gives, bit for bit, for j < count (≤ kMaxMulti):
  // several matrices over the same activations (an expert's gate and up; q, k and v; any mix
  // of bits and groups) in one parallel loop. Optional (null: separate calls); a fusion of
  // GatherMatMul, so supports(GatherMatMul, w[j]) decides for each matrix.
  static constexpr int kMaxMulti = 4;
  void (*gather_matmul_multi)(const ExecCtx&, const WeightMatrix* const* w, int count, const int32_t* ids,
                              const float* x, int64_t m, float* const* ys) = nullptr;
  // out[i, cols] = row ids[i] of the table (the embedding lookup; any format).
  void (*embed)(const ExecCtx&, const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) = nullptr;
  // y = x * rsqrt(mean(x²) + eps) * w per row of length d; y may alias x.
  void (*rmsnorm)(const ExecCtx&, const float* x, const float* w, int64_t n_rows, int64_t d, float eps,
                  float* y) = nullptr;
  // In place on x[n_tok, n_heads, head_dim]: non-traditional (NeoX) pairs (i, i + rot/2), angle
  // positions[t] * theta^(-2i/rot).
  void (*rope)(const ExecCtx&, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) = nullptr;
  // out[n_tok, n_q, hd]: query t sits at position pos0 + t and attends causally to cache rows
  // 0..pos0+t of k, v [*, n_kv, hd] (float32, or F16 when p.kv_f16).
  void (*attention)(const ExecCtx&, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                    const AttentionParams& p, float* out) = nullptr;
  // logits[n_tok, E] → ids/weights[n_tok, top_k], by descending score, ties to the lower id.
  void (*route_softmax_topk)(const ExecCtx&, const float* logits, int64_t n_tok, const SoftmaxTopKParams& p,
                             int32_t* ids, float* weights) = nullptr;
  void (*route_sigmoid_group)(const ExecCtx&, const float* logits, int64_t n_tok, const SigmoidGroupParams& p,
                              int32_t* ids, float* weights) = nullptr;
  // out = silu(gate) * up, elementwise over n.
  void (*silu_mul)(const ExecCtx&, const float* gate, const float* up, int64_t n, float* out) = nullptr;
  // y += s * x over n.
  void (*add)(const ExecCtx&, const float* x, float s, int64_t n, float* y) = nullptr;
  // y[t, out] += l.scale · B · (A · x[t, in]) for t < n: the LoRA delta added onto a base
  // linear's output. supports() is asked with &l.a.
  void (*lora_delta)(const ExecCtx&, const LoraWeights& l, const float* x, int64_t n, float* y) = nullptr;

  // Whether the table has a kernel for `op` (a table fills only the ops it implements).
  bool has(Op op) const {
    switch (op) {
      case Op::QMatVec: return qmatvec;
      case Op::QMatMul: return qmatmul;
      case Op::DenseMatMul: return dense_matmul;
      case Op::GatherMatMul: return gather_matmul;
      case Op::Embed: return embed;
      case Op::RmsNorm: return rmsnorm;
      case Op::Rope: return rope;
      case Op::Attention: return attention;
      case Op::RouteSoftmaxTopK: return route_softmax_topk;
      case Op::RouteSigmoidGroup: return route_sigmoid_group;
      case Op::SiluMul: return silu_mul;
      case Op::Add: return add;
      case Op::LoraDelta: return lora_delta;
      case Op::Count: break;
    }
    return false;
  }
};

struct Backend {
  const char* name;    // "cpu-ref", "cpu-avx2", "cpu-avx512", "cpu-neon", "metal", "cuda"
  const char* detail;  // one line for `info()`
  bool (*usable)();    // the CPU features / device it needs are present
  // Whether the table's kernel for `op` takes weight `w` (nullptr for ops without weights):
  // the formats and shapes it handles. Ops the table lacks need no case.
  bool (*accepts)(Op op, const WeightMatrix* w);
  Kernels k;
  // A whole-forward decoder for a session of `m` with room for context_length tokens (nullptr,
  // or a null result: the session runs the table op by op). Sets that run ops one call at a time leave it null.
  std::unique_ptr<DeviceDecoder> (*session_decoder)(const Model& m, int64_t context_length) = nullptr;

  // Whether this backend runs `op` on weight `w`: its table has the op and the kernel takes w.
  bool supports(Op op, const WeightMatrix* w) const { return k.has(op) && accepts(op, w); }
};

// Every backend compiled into this binary: the CPU kernel sets (reference first, then by
// preference), then accelerator sets (CUDA; Metal on macOS).
const std::vector<const Backend*>& compiled_backends();
const Backend& reference_backend();
// nullptr when no compiled backend has that name.
const Backend* find_backend(std::string_view name);
// The preferred usable backend ("auto"): CUDA when a usable device passes the CUDA set's smoke
// test (else the reason is logged once), otherwise the last usable CPU kernel set. Metal is
// chosen by name only.
const Backend& best_backend();

// The kernels the engine calls: each op from the chosen backend when it supports the call,
// else from the reference, so a backend may implement any subset.
class Dispatch {
 public:
  explicit Dispatch(const Backend& b) : b_(&b), ref_(&reference_backend()) {}
  const Backend& backend() const { return *b_; }
  const Kernels& pick(Op op, const WeightMatrix* w = nullptr) const { return b_->supports(op, w) ? b_->k : ref_->k; }

 private:
  const Backend* b_;
  const Backend* ref_;
};

}  // namespace bs
