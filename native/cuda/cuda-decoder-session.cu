// What a session needs of the CUDA decoder beyond the walk (common/device-decoder.h): the cache
// grown on demand, truncation, the read-back when the host takes over, and a LoRA adapter's
// matrices on the device with its deltas beside the base linears.
#include <algorithm>

#include "common/accel-limits.h"
#include "common/error.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/op-args.cuh"

namespace bs::BS_CUDA_NS {

// Cache rows for `rows` positions: capacity doubles (up to max_positions), the cached rows copied
// over on the device, so a session pays for the context it uses.
void CudaDecoder::reserve(int64_t rows) {
  if (rows <= capacity_) return;
  const int64_t cap = grown_capacity(rows);
  const size_t row = static_cast<size_t>(m_.cfg.n_kv_heads * m_.cfg.head_dim * (kv_f16_ ? 2 : 4));
  for (auto* cache : {&k_cache_, &v_cache_}) {
    for (float*& b : *cache) {
      if (!b) continue;  // a linear layer's
      void* grown = c_.hold(cap * row);
      check(cudaMemcpyAsync(grown, b, pos_ * row, cudaMemcpyDeviceToDevice, c_.stream()), "cudaMemcpyAsync (cache)");
      check(wait_stream(c_.stream()), "growing the KV cache");
      c_.release(b);
      b = static_cast<float*>(grown);
    }
  }
  const int64_t attention_layers = std::count(rec_offset_.begin(), rec_offset_.end(), int64_t{-1});
  state_bytes_ += 2 * attention_layers * (cap - capacity_) * row;
  capacity_ = cap;
}

void CudaDecoder::truncate(int64_t n) {
  if (n < 0 || n > pos_) fail("cuda decoder: truncate(", n, ") is outside its ", pos_, " cached positions");
  pos_ = n;
  forget_predictions();
}

void CudaDecoder::read_kv(int64_t layer, int64_t n, void* k, void* v) const {
  if (n < 0 || n > pos_) fail("cuda decoder: read_kv of ", n, " rows, ", pos_, " cached");
  const size_t bytes = static_cast<size_t>(n * m_.cfg.n_kv_heads * m_.cfg.head_dim * (kv_f16_ ? 2 : 4));
  check(copy_to_host(k, k_cache_[layer], bytes, c_.stream()), "cudaMemcpyAsync (read_kv)");
  check(copy_to_host(v, v_cache_[layer], bytes, c_.stream()), "cudaMemcpyAsync (read_kv)");
  check(wait_stream(c_.stream()), "reading the KV cache back");
}

void CudaDecoder::use_adapter(const std::shared_ptr<const LoraAdapter>& a) {
  adapter_ = a.get();
  if (a == adapter_held_) return;
  for (void* p : adapter_mem_) c_.release(p);
  adapter_mem_.clear();
  adapter_w_.clear();
  adapter_held_.reset();
  if (!a) return;
  int64_t rank = 1;
  for (const std::unique_ptr<LoraModule>& mod : a->modules()) {
    const uint8_t* wa = c_.keep(mod->w.a.w, code_bytes(mod->w.a));
    const uint8_t* wb = c_.keep(mod->w.b.w, code_bytes(mod->w.b));
    adapter_mem_.push_back(const_cast<uint8_t*>(wa));
    adapter_mem_.push_back(const_cast<uint8_t*>(wb));
    adapter_w_[&mod->w] = {wa, wb};
    rank = std::max(rank, mod->w.a.rows);
  }
  lora_rank_ = rank;
  lora_t_ = static_cast<float*>(c_.hold(kMatSet * max_chunk_ * rank * 4));
  adapter_mem_.push_back(lora_t_);
  adapter_held_ = a;
  ++adapter_gen_;
}

// t = A·x, then y += scale · B·t: two dense launches, t never leaves the device.
void CudaDecoder::lora_delta(const LoraWeights& d, float* x, float* y) {
  const LoraWeights* one = &d;
  lora_steps(&one, &y, 1, x);
}

// The deltas of linears over one x (q, k, v; gate, up) as the same two launches for all of them.
void CudaDecoder::deltas(const LoraSlot* slots, float* const* ys, int count, float* x) {
  if (count > kMatSet) {
    DecoderWalk::deltas(slots, ys, count, x);
    return;
  }
  const LoraWeights* d[kMatSet];
  float* y[kMatSet];
  int n = 0;
  for (int i = 0; i < count; ++i) {
    if (const LoraWeights* w = lora(slots[i])) d[n] = w, y[n++] = ys[i];
  }
  if (n > 0) lora_steps(d, y, n, x);
}

// Every A_i·x into its own intermediate, then every y_i += scale_i · B_i·t_i (each output's
// arithmetic the same whatever the count).
void CudaDecoder::lora_steps(const LoraWeights* const* d, float* const* ys, int count, float* x) {
  DenseSet sa{}, sb{};
  sa.count = sb.count = count;
  for (int i = 0; i < count; ++i) {
    const auto& [a, b] = adapter_w_.at(d[i]);
    float* t = lora_t_ + i * max_chunk_ * lora_rank_;
    sa.a[i] = DenseArgs{a, type_code(d[i]->a.dtype), d[i]->a.rows, d[i]->a.cols, 0, n_};
    sa.x[i] = x, sa.y[i] = t;
    sb.a[i] = DenseArgs{b, type_code(d[i]->b.dtype), d[i]->b.rows, d[i]->a.rows, 0, n_, true, d[i]->scale};
    sb.x[i] = t, sb.y[i] = ys[i];
  }
  launched(launch_dense_matmul_set(sa, c_.stream()), "lora_delta (A)");
  launched(launch_dense_matmul_set(sb, c_.stream()), "lora_delta (B)");
}

}  // namespace bs::BS_CUDA_NS
