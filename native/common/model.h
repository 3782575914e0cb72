// A loaded decoder-only MoE transformer: config, weight views into the mmapped files and
// the kernels it runs with. Architectures (models/*.cpp) fill it; the forward pass
// (transformer.cpp) and the shared blocks are written once.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/backend.h"
#include "common/experts/stream-options.h"
#include "common/linear.h"
#include "common/routing.h"
#include "common/weight-store.h"

namespace bs {

class ThreadPool;

// Gated DeltaNet sizes: q/k heads of k_dim, v heads of v_dim (v head h reads q/k head
// h / (v_heads / k_heads)), a depthwise causal conv of conv_kernel taps over [q | k | v].
// Lightning attention (bailing_moe_linear): k_heads = v_heads, k_dim = v_dim, no conv.
struct LinearAttnConfig {
  int64_t k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 0;
  bool lightning = false;
  int64_t rot_dims = 0;     // lightning: RoPE over the first rot_dims of each head
  int64_t norm_groups = 1;  // lightning: the output RMSNorm normalises this many equal groups
  int64_t key_dim() const { return k_heads * k_dim; }
  int64_t value_dim() const { return v_heads * v_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  // Floats of one layer's recurrent state: conv history [K-1, conv_dim] + S [v_heads, v_dim, k_dim].
  int64_t conv_floats() const { return conv_kernel > 0 ? (conv_kernel - 1) * conv_dim() : 0; }
  int64_t state_floats() const { return conv_floats() + v_heads * v_dim * k_dim; }
};

struct ModelConfig {
  std::string arch;  // config.json model_type
  int64_t vocab = 0, hidden = 0, n_layers = 0;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t rot_dims = 0;  // RoPE over the first rot_dims of each head
  double rope_theta = 10000.0;
  // rope_scaling that rescales frequencies (llama3, linear, yarn): inv_freq per pair [rot_dims / 2];
  // empty: θ^(−2i/rot). YaRN scales cos and sin by rope_attention_factor (logits by its square).
  std::vector<double> rope_inv_freq;
  double rope_attention_factor = 1.0;
  float rms_eps = 1e-6f;
  int64_t max_positions = 0;
  // Multimodal RoPE (rope_scaling.mrope_section): frequency slots per (time, height, width)
  // position, interleaved T,H,W,T,… when mrope_interleaved; empty for plain 1-D RoPE.
  std::vector<int> mrope_section;
  bool mrope_interleaved = false;
  int64_t intermediate = 0;         // dense MLP layers
  int64_t moe_intermediate = 0;     // one routed expert
  int64_t shared_intermediate = 0;  // shared experts (0: none)
  RouterSpec router;
  std::vector<bool> moe_layer;  // per layer: MoE (true) or dense MLP
  bool tie_embeddings = false, qk_norm = false, attention_bias = false;
  // llama: attention_bias also biases o_proj; mlp_bias the dense MLP's gate/up/down.
  bool o_bias = false, mlp_bias = false;
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  // Hybrid models (qwen3_next, qwen3_5_moe): per layer, Gated DeltaNet (true) or full attention.
  std::vector<bool> linear_layer;
  LinearAttnConfig linear;
  bool attn_output_gate = false;  // q_proj also gives a per-head sigmoid gate on the attention output
  // Names are looked up as weight_prefix + "model.layers.N..." ("language_model." for Qwen3.5).
  std::string weight_prefix;
  std::string embed_name = "model.embed_tokens";  // bailing: model.word_embeddings
  bool fused_qkv = false;  // attention's q holds the fused [q | k | v] rows (bailing query_key_value)
};

struct AttentionWeights {
  Linear q, k, v, o;
  std::vector<float> q_norm, k_norm;  // [head_dim] each, empty without qk norm
};

struct MlpWeights {
  Linear gate, up, down;
};

// One Gated DeltaNet layer. qwen3_5_moe: separate in_proj_{qkv,z,b,a}; qwen3_next: in_proj_qkvz
// and in_proj_ba grouped per k head (fused), rearranged into the same [q | k | v] layout.
// Lightning (bailing): qkv = query_key_value, z = g_proj (sigmoid output gate), norm = g_norm
// [hidden], out = dense, plus q_norm / k_norm and the fixed per-head log-decays.
struct LinearAttnWeights {
  bool fused = false;
  Linear qkv, z, b, a;                // unfused
  Linear qkvz, ba;                    // fused
  std::vector<float> conv;            // [conv_dim, conv_kernel]; tap K-1 multiplies the current token
  std::vector<float> dt_bias;         // [v_heads]
  std::vector<float> a_neg;           // -exp(A_log) [v_heads]
  std::vector<float> norm;            // gated RMSNorm weight [v_dim]
  Linear out;                         // [hidden, value_dim]
  std::vector<float> q_norm, k_norm;  // lightning: [k_dim] each, empty without qk norm
  std::vector<float> log_decay;       // lightning: [heads], the state decays by exp(log_decay) per token
};

// One of an MoE layer's expert tensors (gate/up/down × weight/scales/biases): where each
// expert's slice lies. mlx-lm stacks the experts (switch_mlp: slice e at e·bytes of one tensor);
// Hugging Face writes one tensor per expert (experts.N.*) or fuses gate and up (experts.gate_up_proj).
struct ExpertPart {
  uint64_t bytes = 0;                     // one expert's slice
  std::vector<const TensorInfo*> tensor;  // [E] the tensor holding expert e's slice
  std::vector<uint64_t> offset;           // [E] the slice's byte offset in that tensor
  const uint8_t* data(int64_t e) const { return tensor[e]->data + offset[e]; }
};

struct MoeWeights {
  Linear router;    // [E, hidden]
  RouterSpec spec;  // the model's router with this layer's correction bias
  // Stacked [E, moe_inter, hidden] / [E, hidden, moe_inter] when `stacked`; otherwise expert 0's
  // matrices (n_mats 1), the shape every expert shares (expert_views gives expert e's).
  WeightMatrix gate, up, down;
  bool stacked = true;
  // The slices behind gate, up, down: {weight, scales, biases} each when quantised, {weight}
  // each when plain.
  std::vector<ExpertPart> expert_parts;
  // Per expert: its slices were scanned for non-finite values (on first use, or after a
  // prefault has mapped the files; not at load).
  std::shared_ptr<std::atomic<bool>[]> expert_checked;
  bool has_shared = false;
  MlpWeights shared;
  // Qwen3-Next / Qwen3.5: the shared expert's output times sigmoid(shared_gate · x) [1, hidden].
  bool shared_gated = false;
  Linear shared_gate;
};

struct LayerWeights {
  std::vector<float> input_norm, post_norm;  // [hidden]
  AttentionWeights attn;
  bool is_linear = false;  // a Gated DeltaNet layer: `linear` instead of `attn`
  LinearAttnWeights linear;
  bool is_moe = false;
  MlpWeights mlp;  // dense layers
  MoeWeights moe;  // MoE layers
};

struct LoadOptions {
  int threads = 1;
  int top_k = 0;             // routing width override; 0 = the config's num_experts_per_tok
  std::string backend;       // kernel set by name; empty or "auto" = the fastest usable one
  bool kv_f16 = false;       // KV caches in IEEE half (half the memory) instead of float32
  int activation_bits = 16;  // integer decode paths: 16 (two bytes), 24 (three) or 8 (one); see ExecCtx
  int prefill_chunk = 128;   // tokens per forward step of a prefill (1..4096)
  StreamOptions stream;      // expert paths, slots, I/O, prerouter
  bool profile = false;      // sessions time their stages (SessionStats::profile)
  // Map every weight page into the process (read from disk where not cached) on a background
  // thread from load on (io/prefaulter.h), so requests take few page faults; for resident models.
  bool prefault = false;
};

class ExpertStreamer;
class Prefaulter;
class Prerouter;

class Model {
 public:
  Model(const Backend& backend, int threads, bool kv_f16 = false, int activation_bits = 16);
  ~Model();

  ModelConfig cfg;
  std::unique_ptr<WeightStore> store;
  WeightMatrix embed;  // [vocab, hidden]
  std::vector<float> final_norm;
  Linear lm_head;  // tied: a view of embed
  std::vector<LayerWeights> layers;
  int top_k = 0;                // routing width in use
  int64_t prefill_chunk = 128;  // tokens per forward step of a prefill
  uint64_t matrix_bytes = 0;
  uint64_t expert_bytes = 0;  // one routed expert (gate + up + down) of one layer
  StreamOptions stream;       // as loaded (slots resolved)
  bool profile = false;       // sessions time their stages (SessionStats::profile)
  // Expert executor paths, slot buffers and the I/O pool (null for a model without MoE layers).
  std::unique_ptr<ExpertStreamer> streamer;
  // Prerouter heads (null when the prerouter is off).
  std::unique_ptr<Prerouter> prerouter;
  // Maps the weight files in the background (null unless LoadOptions::prefault); declared after
  // `store`, so it stops before the files are unmapped.
  std::unique_ptr<Prefaulter> prefaulter;
  // Forward passes of the sessions of one model run one at a time: they share the slot buffers.
  mutable std::mutex forward_mu;

  // Unique per process (never reused, unlike the model's address once it is freed): what an
  // adapter is checked against.
  const uint64_t id;

  const Dispatch& dispatch() const { return dispatch_; }
  ExecCtx ctx() const { return ExecCtx{pool_.get(), activation_bits_}; }
  // The threads decoding: the caller plus the workers the system let the pool start.
  int threads() const;
  // Before a forward pass: throws bs::Error when a weight or heads file shrank since it was
  // mapped (reading it would kill the process with SIGBUS; explicit expert reads only fail).
  void check_files() const;
  bool kv_f16() const { return kv_f16_; }
  int activation_bits() const { return activation_bits_; }

 private:
  Dispatch dispatch_;
  bool kv_f16_;
  int activation_bits_;  // 8, 16 or 24
  std::unique_ptr<ThreadPool> pool_;
};

// Loads the model folder `dir` (config.json + safetensors); throws bs::Error with a message
// naming the file, tensor or field that is wrong.
std::shared_ptr<Model> load_model(const std::string& dir, const LoadOptions& opts);
// config.json model_type values load_model accepts.
std::vector<std::string> supported_architectures();

}  // namespace bs
