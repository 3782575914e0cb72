// cuda-op-runners.h's CUDA side in bs::BS_CUDA_NS: included once over the emulation
// (cuda-op-runners-emu.cpp) and once on the CUDA runtime (cuda-op-runners-device.cpp), so the
// staging code a GPU runs is the code CI runs. Legacy default stream; every buffer is freed.
#pragma once
#include <algorithm>
#include <vector>

#include "cuda-op-runners.h"
#include "cuda/add.cuh"
#include "cuda/argmax.cuh"
#include "cuda/attention.cuh"
#include "cuda/causal-conv.cuh"
#include "cuda/copy-heads.cuh"
#include "cuda/cuda-api.h"
#include "cuda/delta-rule.cuh"
#include "cuda/dense-matmul.cuh"
#include "cuda/lightning-rule.cuh"
#include "cuda/moe-combine.cuh"
#include "cuda/op-args.cuh"
#include "cuda/qk-norm-rope.cuh"
#include "cuda/qmatmul.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/rope.cuh"
#include "cuda/route-sort.cuh"
#include "cuda/sigmoid-mul.cuh"
#include "cuda/silu-mul.cuh"
#include "cuda/to-half.cuh"

namespace bs::BS_CUDA_NS::op_runners {

// One call's device buffers: operands copied in, results copied back after the launch.
class Staging {
 public:
  Staging() = default;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    for (void* p : bufs_) cudaFree(p);
  }

  // A device array of count elements holding p's (uninitialised when p is null).
  template <class T>
  T* put(const T* p, int64_t count) {
    void* d = nullptr;
    if (err_ == cudaSuccess) err_ = cudaMalloc(&d, static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T));
    if (err_ != cudaSuccess) return nullptr;
    bufs_.push_back(d);
    if (p && count > 0)
      err_ = cudaMemcpyAsync(d, p, static_cast<size_t>(count) * sizeof(T), cudaMemcpyHostToDevice, nullptr);
    return static_cast<T*>(d);
  }
  template <class T>
  T* put(const std::vector<T>& v) {
    return put(v.data(), static_cast<int64_t>(v.size()));
  }
  // A device copy of p that comes back to p after the launch.
  template <class T>
  T* inout(T* p, int64_t count) {
    T* d = put(p, count);
    if (d) backs_.push_back({p, d, static_cast<size_t>(count) * sizeof(T)});
    return d;
  }

  // launch() returns the launcher's error; refused is its shape check (nothing ran).
  template <class F>
  bt::Launch run(F&& launch) {
    if (err_ != cudaSuccess) return bt::Launch::failed;
    const cudaError_t e = launch();
    if (e == cudaErrorInvalidValue) return bt::Launch::refused;
    if (e != cudaSuccess) return bt::Launch::failed;
    for (const Back& b : backs_) {
      if (cudaMemcpyAsync(b.host, b.dev, b.bytes, cudaMemcpyDeviceToHost, nullptr) != cudaSuccess)
        return bt::Launch::failed;
    }
    return cudaStreamSynchronize(nullptr) == cudaSuccess ? bt::Launch::ok : bt::Launch::failed;
  }

 private:
  struct Back {
    void* host;
    const void* dev;
    size_t bytes;
  };
  std::vector<void*> bufs_;
  std::vector<Back> backs_;
  cudaError_t err_ = cudaSuccess;
};

inline bt::LinearOps linear(const char* name) {
  bt::LinearOps o;
  o.name = name;
  o.conv = [](const float* w, int64_t C, int64_t K, float* hist, const float* x, int64_t n, float* out) {
    Staging s;
    const float *dw = s.put(w, C * K), *dx = s.put(x, n * C);
    float *dh = s.inout(hist, (K - 1) * C), *dout = s.inout(out, n * C);
    return s.run([&] { return launch_causal_conv_silu(dw, C, static_cast<int>(K), dh, dx, n, dout, nullptr); });
  };
  o.delta = [](const bs::LinearAttnConfig& c, int64_t n, const std::vector<float>* in, float* state, float* y) {
    Staging s;
    const float *qkv = s.put(in[0]), *b = s.put(in[1]), *a = s.put(in[2]), *a_neg = s.put(in[3]), *dt = s.put(in[4]);
    float* ds = s.inout(state, c.v_heads * c.v_dim * c.k_dim);
    float* dy = s.inout(y, n * c.value_dim());
    const DeltaArgs args{qkv, b, a, a_neg, dt, ds, dy, n, c.k_heads, c.v_heads, c.k_dim, c.v_dim};
    return s.run([&] { return launch_delta_rule(args, nullptr); });
  };
  o.lightning = [](int64_t H, int64_t D, int64_t n, const std::vector<float>* in, float* state, float* y) {
    Staging s;
    const float *q = s.put(in[0]), *k = s.put(in[1]), *v = s.put(in[2]), *decay = s.put(in[3]);
    float *ds = s.inout(state, H * D * D), *dy = s.inout(y, n * H * D);
    const LightningArgs args{q, k, v, decay, ds, dy, n, H, D, 1.0f / std::sqrt(static_cast<float>(D))};
    return s.run([&] { return launch_lightning_rule(args, nullptr); });
  };
  o.gate = [](float* x, const float* g, int64_t n, int64_t g_floats, int64_t period, int64_t stride, int64_t step) {
    Staging s;
    float* dx = s.inout(x, n);
    const float* dg = s.put(g, g_floats);
    return s.run([&] { return launch_sigmoid_mul(dx, dg, n, period, stride, step, nullptr); });
  };
  o.copy = [](const float* src, int64_t src_floats, float* dst, int64_t dst_floats, const bt::HeadCopyShape& c) {
    Staging s;
    const float* ds = s.put(src, src_floats);
    float* dd = s.inout(dst, dst_floats);
    const HeadCopy h{ds, c.src_token, c.src_head, dd, c.dst_token, c.dst_head, c.n, c.heads, c.width};
    return s.run([&] { return launch_copy_heads(h, nullptr); });
  };
  return o;
}

// The norm, RoPE, attention and conversion kernels.
inline void add_attention_ops(bt::CudaDecoderOps& o) {
  o.argmax = [](const float* x, int64_t offset, int64_t n, int32_t* out) {
    Staging s;
    const float* dx = s.put(x, offset + n);
    int32_t* d = s.inout(out, 1);
    return s.run([&] { return launch_argmax(dx ? dx + offset : nullptr, n, d, nullptr); });
  };
  o.to_half = [](const float* x0, uint16_t* out0, const float* x1, uint16_t* out1, int64_t n, int32_t row,
                 int64_t row_elems) {
    Staging s;
    const int64_t len = (row >= 0 ? row * row_elems : 0) + n;
    const float *d0 = s.put(x0, n), *d1 = x1 ? s.put(x1, n) : nullptr;
    uint16_t *o0 = s.inout(out0, len), *o1 = out1 ? s.inout(out1, len) : nullptr;
    const int32_t* dr = row >= 0 ? s.put(&row, 1) : nullptr;
    return s.run([&] {
      return x1 || dr ? launch_to_half_pair(d0, o0, d1, o1, n, nullptr, dr, row_elems)
                      : launch_to_half(d0, n, o0, nullptr);
    });
  };
  o.qk_norm_rope = [](const bt::QkShape& a, float* q, float* k, const float* q_w, const float* k_w, const int32_t* pos,
                      const double* inv_freq, const bt::QkStore* store) {
    Staging s;
    const int64_t kv = a.n_tok * a.n_kv * a.head_dim;
    float *dq = s.inout(q, a.n_tok * a.n_q * a.head_dim), *dk = s.inout(k, kv);
    const float *qw = q_w ? s.put(q_w, a.head_dim) : nullptr, *kw = k_w ? s.put(k_w, a.head_dim) : nullptr;
    const int32_t* dp = s.put(pos, a.n_tok);
    const double* df = s.put(inv_freq, a.rot / 2);
    const QkNormRopeArgs args{a.n_tok, a.n_q, a.n_kv, a.head_dim, a.rot, a.eps};
    KvStore st{};
    if (store) {
      const int64_t cache = store->row * a.n_kv * a.head_dim + kv;
      st = {s.inout(store->k_cache, cache), s.inout(store->v_cache, cache), s.put(store->v_rows, kv),
            s.put(&store->row, 1)};
    }
    return s.run([&] { return launch_qk_norm_rope(args, dq, dk, qw, kw, dp, df, nullptr, store ? &st : nullptr); });
  };
  o.rmsnorm = [](const float* x, const float* w, int64_t rows, int64_t d, float eps, float* y) {
    Staging s;
    const float *dx = s.put(x, rows * d), *dw = s.put(w, d);
    float* dy = s.inout(y, rows * d);
    return s.run([&] { return launch_rmsnorm(dx, dw, rows, d, eps, dy, nullptr); });
  };
  o.add_rmsnorm = [](float* x, const float* res, const float* w, int64_t rows, int64_t d, float eps, float* y) {
    Staging s;
    float *dx = s.inout(x, rows * d), *dy = s.inout(y, rows * d);
    const float *dr = s.put(res, rows * d), *dw = s.put(w, d);
    return s.run([&] { return launch_add_rmsnorm(dx, dr, dw, rows, d, eps, dy, nullptr); });
  };
  o.combine = [](const float* rows, const float* weights, int64_t n, int k, int64_t d, float* out) {
    Staging s;
    const float *dr = s.put(rows, n * k * d), *dw = s.put(weights, n * k);
    float* dout = s.inout(out, n * d);
    return s.run([&] { return launch_moe_combine(dr, dw, n, k, d, dout, nullptr); });
  };
  o.combine_add_rmsnorm = [](float* x, const float* rows, const float* weights, int k, const float* shared,
                             const float* gate, const float* w, int64_t n, int64_t d, float eps, float* y) {
    Staging s;
    float *dx = s.inout(x, n * d), *dy = s.inout(y, n * d);
    const float *dr = s.put(rows, n * k * d), *dwt = s.put(weights, n * k), *dw = s.put(w, d);
    const float* dsh = shared ? s.put(shared, n * d) : nullptr;
    const float* dg = gate ? s.put(gate, n) : nullptr;
    return s.run([&] { return launch_combine_add_rmsnorm(dx, dr, dwt, k, dsh, dg, dw, n, d, eps, dy, nullptr); });
  };
  o.add = [](const float* x, float scale, int64_t n, float* y, int64_t period) {
    Staging s;
    const float* dx = s.put(x, period > 0 ? period : n);
    float* dy = s.inout(y, n);
    return s.run([&] { return launch_add(dx, scale, n, dy, nullptr, period); });
  };
  o.rope = [](float* x, const int32_t* pos, const double* inv_freq, int64_t n_tok, int heads, int head_dim, int rot) {
    Staging s;
    float* dx = s.inout(x, n_tok * heads * head_dim);
    const int32_t* dp = s.put(pos, n_tok);
    const double* df = s.put(inv_freq, rot / 2);
    return s.run([&] { return launch_rope(dx, dp, df, n_tok, heads, head_dim, rot, nullptr); });
  };
  o.attention = [](const bt::AttnShape& a, const float* q, const void* k, const void* v, float* out) {
    Staging s;
    const int64_t kv_bytes = a.keys * a.n_kv * a.head_dim * (a.f16 ? 2 : 4), qn = a.n_tok * a.n_q * a.head_dim;
    const float* dq = s.put(q, qn);
    const uint8_t *dk = s.put(static_cast<const uint8_t*>(k), kv_bytes),
                  *dv = s.put(static_cast<const uint8_t*>(v), kv_bytes);
    float* dout = s.inout(out, qn);
    AttentionArgs args{a.n_q, a.n_kv, a.head_dim, a.pos0, a.n_tok, a.f16, a.scale};
    if (a.split) args.partial = s.put<float>(nullptr, attention_partial_floats(a.n_q, a.head_dim));
    if (a.positions) args.positions = s.put(a.positions, a.n_tok);
    return s.run([&] { return launch_attention(args, dq, dk, dv, dout, nullptr); });
  };
}

// The feed-forward kernels: SiLU gate, quantised and dense products.
inline void add_matmul_ops(bt::CudaDecoderOps& o) {
  o.gate = linear(o.name).gate;
  o.silu_mul = [](const float* g, const float* up, int64_t n, float* out) {
    Staging s;
    const float *dg = s.put(g, n), *du = s.put(up, n);
    float* d = s.inout(out, n);
    return s.run([&] { return launch_silu_mul(dg, du, n, d, nullptr); });
  };
  o.qmatmul = [](const bt::QmCall& c) {
    Staging s;
    const bs::WeightMatrix& w = c.m->m;
    QMatArgs a = shape_args(w, c.n);
    a.codes = s.put(c.m->w), a.scales = s.put(c.m->scales), a.biases = s.put(c.m->biases), a.mat = c.mat;
    if (c.ids) a.ids = s.put(c.ids, c.n), a.x_div = c.x_div;
    if (c.up) a.up = s.put(c.up, c.n * w.cols);
    if (c.bias) a.bias = s.put(c.bias, w.rows);
    if (c.grouped) {
      a.max_tiles = route_tiles_max(c.n, w.n_mats, kMatTokens);
      a.order = s.put<int32_t>(nullptr, c.n), a.tiles = s.put<int32_t>(nullptr, 2 * a.max_tiles);
      a.tile_count = s.put<int32_t>(nullptr, 1);
    }
    const float* x = s.put(c.x, c.x_offset + c.n * w.cols);
    float* y = s.inout(c.y, c.n * w.rows);
    return s.run([&] {
      if (c.grouped) {
        const cudaError_t e =
            launch_route_sort(a.ids, c.n, w.n_mats, kMatTokens, const_cast<int32_t*>(a.order),
                              const_cast<int32_t*>(a.tiles), const_cast<int32_t*>(a.tile_count), nullptr);
        if (e != cudaSuccess) return e;
      }
      return launch_qmatmul(a, x ? x + c.x_offset : nullptr, y, nullptr);
    });
  };
  o.route_sort = [](const int32_t* ids, int64_t n, int64_t n_mats, int per_tile, int32_t* order, int32_t* tiles,
                    int32_t* tile_count) {
    Staging s;
    const int32_t* d_ids = s.put(ids, n);
    int32_t *d_order = s.inout(order, n), *d_tiles = s.inout(tiles, 2 * route_tiles_max(n, n_mats, per_tile)),
            *d_count = s.inout(tile_count, 1);
    return s.run([&] { return launch_route_sort(d_ids, n, n_mats, per_tile, d_order, d_tiles, d_count, nullptr); });
  };
  o.dense = [](const std::vector<bt::DenseCall>& calls, bool one_launch) {
    Staging s;
    DenseSet set{};
    for (const bt::DenseCall& c : calls) {
      const bs::WeightMatrix& w = c.m->m;
      set.a[set.count] =
          DenseArgs{s.put(c.m->w), type_code(w.dtype), w.rows, w.cols, c.mat, c.n, c.accumulate, c.alpha};
      set.x[set.count] = s.put(c.x, c.n * w.cols);
      set.y[set.count] = s.inout(c.y, c.n * w.rows);
      if (++set.count == kMatSet) break;
    }
    if (static_cast<int>(calls.size()) > set.count) return bt::Launch::refused;
    return s.run([&] {
      if (one_launch) return launch_dense_matmul_set(set, nullptr);
      for (int i = 0; i < set.count; ++i) {
        if (const cudaError_t e = launch_dense_matmul(set.a[i], set.x[i], set.y[i], nullptr); e != cudaSuccess)
          return e;
      }
      return cudaSuccess;
    });
  };
}

inline bt::CudaDecoderOps decoder(const char* name, bool exact) {
  bt::CudaDecoderOps o;
  o.name = name;
  o.exact = exact;
  add_attention_ops(o);
  add_matmul_ops(o);
  return o;
}

}  // namespace bs::BS_CUDA_NS::op_runners
