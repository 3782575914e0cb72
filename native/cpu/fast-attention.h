// The fast attention over the KV cache (float32 or F16): grouped query heads against blocks of
// keys with an online softmax.
#pragma once
#include <algorithm>
#include <cmath>

#include "cpu/fast-elementwise.h"
#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastAttention {
  using F = typename V::F;
  static constexpr int L = V::L;
  static constexpr int kKeyBlock = 128;     // attention keys scored per block
  static constexpr int kMaxHeadDim = 1024;  // larger heads go to the reference
  using Vec = FastVector<V>;

  // Cache row j of kv head g as float (converted from half when the cache is F16).
  static const float* kv_row(const void* cache, bool f16, int64_t idx, int hd, float* tmp) {
    if (!f16) return static_cast<const float*>(cache) + idx;
    Vec::to_float(static_cast<const uint8_t*>(cache) + 2 * idx, DType::F16, hd, tmp);
    return tmp;
  }

  // A head's slice of a cache row is a few lines a row apart (the cache is [pos][kv head][hd]),
  // a stride the hardware prefetcher follows poorly: fetch kKvAhead rows ahead.
  static constexpr int kKvAhead = 8;
  static void prefetch_row(const void* cache, bool f16, int64_t idx, int hd) {
    const uint8_t* p = static_cast<const uint8_t*>(cache) + idx * (f16 ? 2 : 4);
    for (int64_t b = 0; b < int64_t(hd) * (f16 ? 2 : 4); b += 64) __builtin_prefetch(p + b);
  }

  // acc[h][c, c + CB·L) += Σ_j p[h][j] · V_j[c, c + CB·L) for heads [h0, h0 + HB) and the nb
  // keys of a block: keys innermost, HB·CB accumulators in registers, each V vector converted
  // once for the HB heads. Per element the same FMAs in key order as one head alone.
  template <bool F16, int HB, int CB>
  static void v_tile(const void* v, int64_t at, int64_t stride, int nb, const float (*p)[kKeyBlock], int h0, int64_t c,
                     int hd, float* acc) {
    F a[HB][CB];
#pragma GCC unroll 8
    for (int h = 0; h < HB; ++h)
#pragma GCC unroll 4
      for (int b = 0; b < CB; ++b) a[h][b] = V::load(acc + (h0 + h) * hd + c + b * L);
    for (int j = 0; j < nb; ++j) {
      const int64_t e = at + j * stride + c;  // element index of the cache
      F x[CB];
#pragma GCC unroll 4
      for (int b = 0; b < CB; ++b) {
        x[b] = F16 ? V::load_f16(static_cast<const uint8_t*>(v) + 2 * (e + b * L))
                   : V::load(static_cast<const float*>(v) + e + b * L);
      }
#pragma GCC unroll 8
      for (int h = 0; h < HB; ++h) {
        const F pj = V::set1(p[h0 + h][j]);
#pragma GCC unroll 4
        for (int b = 0; b < CB; ++b) a[h][b] = V::fma(pj, x[b], a[h][b]);
      }
    }
#pragma GCC unroll 8
    for (int h = 0; h < HB; ++h)
#pragma GCC unroll 4
      for (int b = 0; b < CB; ++b) V::store(acc + (h0 + h) * hd + c + b * L, a[h][b]);
  }

  // Heads [h0, h0 + HB) over all hd / L chunks, CB chunks per tile, then the rest one by one.
  template <bool F16, int HB, int CB>
  static void v_heads(const void* v, int64_t at, int64_t stride, int nb, const float (*p)[kKeyBlock], int h0, int hd,
                      float* acc) {
    int64_t c = 0;
    for (; c + CB * L <= hd; c += CB * L) v_tile<F16, HB, CB>(v, at, stride, nb, p, h0, c, hd, acc);
    for (; c < hd; c += L) v_tile<F16, HB, 1>(v, at, stride, nb, p, h0, c, hd, acc);
  }

  // The value side of one key block: eight accumulators per tile (4 heads × 2 chunks, or one
  // head × 4 chunks) hide the FMA latency.
  template <bool F16>
  static void accumulate_v(const void* v, int64_t at, int64_t stride, int nb, const float (*p)[kKeyBlock], int H,
                           int hd, float* acc) {
    int h0 = 0;
    for (; h0 + 4 <= H; h0 += 4) v_heads<F16, 4, 2>(v, at, stride, nb, p, h0, hd, acc);
    for (; h0 < H; ++h0) v_heads<F16, 1, 4>(v, at, stride, nb, p, h0, hd, acc);
  }

  // H query heads that share one kv head (GQA) against keys in blocks of kKeyBlock with a
  // running max and sum per head (online softmax), so the scratch is a fixed stack block
  // whatever the context length. Each K and V row is converted once for all H heads; every
  // head runs the same operations whatever H is, so results do not depend on the grouping.
  static constexpr int kMaxGroup = 16;   // heads per call
  static constexpr int kAttnAcc = 4096;  // accumulator floats per call (H · head_dim)
  static void attend(const float* q, int H, const void* k, const void* v, bool f16, int64_t stride, int64_t off,
                     int64_t n_keys, int hd, float scale, float* o) {
    float score[kMaxGroup][kKeyBlock], acc[kAttnAcc], tmp[kMaxHeadDim], mx[kMaxGroup], sum[kMaxGroup];
    std::fill_n(acc, H * hd, 0.0f);
    std::fill_n(mx, H, -INFINITY);
    std::fill_n(sum, H, 0.0f);
    for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
      const int nb = static_cast<int>(n_keys - j0 < kKeyBlock ? n_keys - j0 : kKeyBlock);
      for (int j = 0; j < nb; ++j) {
        if (j0 + j + kKvAhead < n_keys) prefetch_row(k, f16, (j0 + j + kKvAhead) * stride + off, hd);
        const float* kr = kv_row(k, f16, (j0 + j) * stride + off, hd, tmp);
        for (int h = 0; h < H; ++h) score[h][j] = Vec::dot(q + h * hd, kr, hd) * scale;
      }
      for (int h = 0; h < H; ++h) {
        const float bmx = block_max(score[h], nb, mx[h]);
        // Rescale what was accumulated under the old maximum (e^-inf = 0 on the first block).
        const float shrink = std::exp(mx[h] - bmx);
        mx[h] = bmx;
        sum[h] *= shrink;
        if (shrink != 1.0f) scale_in_place(acc + h * hd, shrink, hd);
        int j = 0;
        F sv = V::zero();
        for (; j + L <= nb; j += L) {
          const F e = Vec::exp(V::sub(V::load(score[h] + j), V::set1(bmx)));
          V::store(score[h] + j, e);
          sv = V::add(sv, e);
        }
        sum[h] += V::hsum(sv);
        for (; j < nb; ++j) sum[h] += (score[h][j] = std::exp(score[h][j] - bmx));
      }
      // The block's V rows (≤ 128 × head_dim) stay in L1/L2 across the tiles: the hardware
      // prefetcher brings the next block's rows while this one computes.
      if (hd % L != 0) {  // head_dim not a multiple of the vector: row by row
        for (int j = 0; j < nb; ++j) {
          if (j0 + j + kKvAhead < n_keys) prefetch_row(v, f16, (j0 + j + kKvAhead) * stride + off, hd);
          const float* vr = kv_row(v, f16, (j0 + j) * stride + off, hd, tmp);
          for (int h = 0; h < H; ++h) FastElementwise<V>::add(ExecCtx{}, vr, score[h][j], hd, acc + h * hd);
        }
      } else if (f16) {
        accumulate_v<true>(v, j0 * stride + off, stride, nb, score, H, hd, acc);
      } else {
        accumulate_v<false>(v, j0 * stride + off, stride, nb, score, H, hd, acc);
      }
    }
    for (int h = 0; h < H; ++h) {
      const float inv = 1.0f / sum[h];
      for (int c = 0; c < hd; ++c) o[h * hd + c] = acc[h * hd + c] * inv;
    }
  }

  // max(m, s[0..n)) (exact, so the order of comparisons does not matter).
  static float block_max(const float* s, int n, float m) {
    int j = 0;
    if (n >= L) {
      F mv = V::load(s);
      for (j = L; j + L <= n; j += L) mv = V::max(mv, V::load(s + j));
      float lanes[L];
      V::store(lanes, mv);
      for (float x : lanes) m = x > m ? x : m;
    }
    for (; j < n; ++j) m = s[j] > m ? s[j] : m;
    return m;
  }

  static void scale_in_place(float* x, float s, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store(x + i, V::mul(V::load(x + i), V::set1(s)));
    for (; i < n; ++i) x[i] *= s;
  }

  // Items are (token, run of H heads of one kv group): H is the largest divisor of the group
  // that fits the stack block and still leaves two items per thread where it can.
  static void attention(const ExecCtx& ctx, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                        const AttentionParams& p, float* out) {
    if (p.head_dim > kMaxHeadDim) {
      reference_backend().k.attention(ctx, q, k, v, pos0, n_tok, p, out);
      return;
    }
    const int group = p.n_q_heads / p.n_kv_heads, hd = p.head_dim;
    int H = 1;
    for (int h = 2; h <= group; ++h) {
      if (group % h == 0 && h <= kMaxGroup && h * hd <= kAttnAcc &&
          n_tok * (p.n_q_heads / h) >= std::min<int64_t>(2 * ctx.threads(), n_tok * p.n_q_heads)) {
        H = h;
      }
    }
    const int64_t kv_stride = static_cast<int64_t>(p.n_kv_heads) * hd;
    const int64_t per_tok = p.n_q_heads / H, items = n_tok * per_tok;
    ctx.parallel_for(
        items,
        [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / per_tok;
            const int h0 = static_cast<int>(i % per_tok) * H;
            const int64_t at = (t * p.n_q_heads + h0) * hd;
            attend(q + at, H, k, v, p.kv_f16, kv_stride, int64_t(h0 / group) * hd, pos0 + t + 1, hd, p.scale, out + at);
          }
        },
        std::max<int64_t>(1, items / (2 * ctx.threads())));
  }
};

}  // namespace
}  // namespace bs
