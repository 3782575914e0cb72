// The whole transformer on a CUDA device: weights copied once into device memory (through the
// context's pinned staging; read in place on an integrated device), the KV cache (float32, or
// f16 when the model was loaded with kv_f16: rows converted after RoPE as the CPU does),
// activations and routing ids/weights in device buffers between ops and appends. One host
// synchronisation per append returns the greedy token (argmax on the device) and, when asked,
// the last token's logits. Decode steps (one token) are captured as a CUDA graph and replayed,
// its parameters (the position) updated in place. The layer walk is common/decoder-walk.h's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/decoder-walk.h"
#include "common/model.h"
#include "cuda/device-context.cuh"
#include "cuda/expert-slots.cuh"

namespace bs::BS_CUDA_NS {

class CudaDecoder : public DecoderWalk<float*> {
 public:
  // Why this path cannot run `m` ("" when it can): the architectures and formats it covers.
  static std::string unsupported(const Model& m);

  // A cache of max_positions tokens, appended in chunks of up to max_chunk tokens; `graph`:
  // replay decode steps as a CUDA graph; expert_slots > 0: routed experts in that many device
  // slots per MoE layer (expert-slots.cuh) instead of all resident. Throws bs::Error when the
  // model is unsupported or does not fit the device's free memory.
  CudaDecoder(const Model& m, int64_t max_positions, int64_t max_chunk = 1, bool graph = true, int expert_slots = 0);
  ~CudaDecoder() override;

  // Runs tokens[0..n) at the next positions and returns the greedy next token; logits, when not
  // null, get the last token's [vocab]. Throws bs::Error before anything runs for a bad token id,
  // chunk length or a full cache.
  int32_t append(const int32_t* tokens, int64_t n, float* logits = nullptr);

  struct Stats {
    int64_t appends = 0, graph_launches = 0, graph_builds = 0;  // builds: instantiations (updates not counted)
    size_t weight_bytes = 0, buffer_bytes = 0;                  // on the device
    size_t active_bytes = 0;  // weight bytes one decode step reads (the embedding's row, top-k experts)
  };
  const Stats& stats() const { return stats_; }
  const ExpertSlots* slots() const { return slots_.get(); }

 private:
  struct Weight {
    const uint8_t *codes, *scales, *biases;
  };
  void launched(cudaError_t e, const char* kernel);
  void run_graph();

  float* at(float* a, int64_t floats) override { return a + floats; }
  float* alloc(size_t bytes) override;
  float* upload(const std::vector<float>& v) override;
  void embed(int64_t n) override;
  void matmul(const WeightMatrix& w, float* x, float* y, int64_t n, bool gather, int64_t x_div) override;
  void rmsnorm(float* x, float* w, int64_t rows, int64_t d, float* y) override;
  void add(float* x, float* y, int64_t n) override;
  void silu_mul(float* gate, float* up, int64_t n) override;
  void rope(float* x, int64_t heads) override;
  void attend(int64_t l) override;
  void route(const MoeWeights& w) override;
  void combine(int64_t k) override;
  float* kv_rows(int64_t l, bool v) override;
  void store_kv(int64_t l) override;

  Context c_;
  std::unique_ptr<ExpertSlots> slots_;
  float* routed_ = nullptr;  // where the current layer's routing wrote its ids
  bool graph_, kv_f16_;
  float *k_rows_ = nullptr, *v_rows_ = nullptr;      // f16 cache: the chunk's rows before conversion
  std::unordered_map<const void*, Weight> weights_;  // by the matrix's first byte
  double* inv_freq_ = nullptr;
  int32_t* greedy_ = nullptr;                           // device: the argmax
  int32_t *host_in_ = nullptr, *host_token_ = nullptr;  // pinned: tokens then positions; the argmax
  float* host_logits_ = nullptr;                        // pinned
  cudaGraphExec_t exec_ = nullptr;
  Stats stats_;
};

}  // namespace bs::BS_CUDA_NS
