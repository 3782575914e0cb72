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
  // a stride the hardware prefetcher follows poorly: fetch kKvAhead rows ahead (K and V rows
  // both while the keys are scored, so the block's V rows are near when they are summed).
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

  // Scores of rows [0, R) (q + r·hd) against nk ≤ 8 key rows (kr[i]), times scale, into
  // score[r][j0 + i]. Eight keys at a time share one horizontal reduction (hsums) where the
  // traits have it; a row's scores do not depend on R or on the other rows.
  static constexpr bool kHsums = requires(const F* a) { V::hsums(a); };
  static void score_keys(const float* q, int R, int hd, const float* const* kr, int nk, float scale, int j0,
                         float (*score)[kKeyBlock]) {
    if constexpr (kHsums) {
      if (hd % L == 0) {
        for (int r = 0; r < R; ++r) {
          const float* qr = q + r * hd;
          F acc[8];
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) acc[i] = V::zero();
          for (int c = 0; c < hd; c += L) {
            const F x = V::load(qr + c);
#pragma GCC unroll 8
            for (int i = 0; i < 8; ++i) {
              if (i < nk) acc[i] = V::fma(x, V::load(kr[i] + c), acc[i]);
            }
          }
          float out[8];
          V::store(out, V::mul(V::hsums(acc), V::set1(scale)));
          std::copy_n(out, nk, score[r] + j0);
        }
        return;
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < nk; ++i) score[r][j0 + i] = Vec::dot(q + r * hd, kr[i], hd) * scale;
    }
  }

  // Rows r = t·H + h: T consecutive query tokens × H heads that share one kv head (GQA), token
  // t seeing the first n_keys0 + t keys, against keys in blocks of kKeyBlock with a running max
  // and sum per row (online softmax), so the scratch is a fixed stack block whatever the
  // context length. Each K and V row is converted once for all rows; keys past a token's own
  // end weigh exactly 0, so every row's result is the same whatever T and H are.
  static constexpr int kMaxGroup = 16;   // rows per call
  static constexpr int kAttnAcc = 4096;  // accumulator floats per call (rows · head_dim)
  static void attend(const float* q, int64_t q_tok, int T, int H, const void* k, const void* v, bool f16,
                     int64_t stride, int64_t off, int64_t n_keys0, int hd, float scale, float* o) {
    const int R = T * H;
    float score[kMaxGroup][kKeyBlock], acc[kAttnAcc], qs[kAttnAcc], kt[8][kMaxHeadDim], mx[kMaxGroup], sum[kMaxGroup];
    for (int t = 0; t < T; ++t) std::copy_n(q + t * q_tok, H * hd, qs + t * H * hd);
    std::fill_n(acc, R * hd, 0.0f);
    std::fill_n(mx, R, -INFINITY);
    std::fill_n(sum, R, 0.0f);
    const int64_t n_keys = n_keys0 + T - 1;
    for (int64_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
      const int nb = static_cast<int>(n_keys - j0 < kKeyBlock ? n_keys - j0 : kKeyBlock);
      for (int j = 0; j < nb; j += 8) {
        const int nk = std::min(8, nb - j);
        const float* kr[8];
        for (int i = 0; i < nk; ++i) {
          const int64_t key = j0 + j + i;
          if (key + kKvAhead < n_keys) {
            prefetch_row(k, f16, (key + kKvAhead) * stride + off, hd);
            prefetch_row(v, f16, (key + kKvAhead) * stride + off, hd);
          }
          kr[i] = kv_row(k, f16, key * stride + off, hd, kt[i]);
        }
        score_keys(qs, R, hd, kr, nk, scale, j, score);
      }
      for (int r = 0; r < R; ++r) {
        // This row's keys in the block; the rest of the block weighs 0.
        const int64_t own = n_keys0 + r / H - j0;
        const int nr = static_cast<int>(own < nb ? (own > 0 ? own : 0) : nb);
        std::fill(score[r] + nr, score[r] + nb, 0.0f);
        if (nr == 0) continue;
        const float bmx = block_max(score[r], nr, mx[r]);
        // Rescale what was accumulated under the old maximum (e^-inf = 0 on the first block).
        const float shrink = std::exp(mx[r] - bmx);
        mx[r] = bmx;
        sum[r] *= shrink;
        if (shrink != 1.0f) scale_in_place(acc + r * hd, shrink, hd);
        int j = 0;
        F sv = V::zero();
        for (; j + L <= nr; j += L) {
          const F e = Vec::exp(V::sub(V::load(score[r] + j), V::set1(bmx)));
          V::store(score[r] + j, e);
          sv = V::add(sv, e);
        }
        sum[r] += V::hsum(sv);
        for (; j < nr; ++j) sum[r] += (score[r][j] = std::exp(score[r][j] - bmx));
      }
      // The block's V rows (≤ 128 × head_dim) stay in L1/L2 across the tiles: the hardware
      // prefetcher brings the next block's rows while this one computes.
      if (hd % L != 0) {  // head_dim not a multiple of the vector: row by row
        for (int j = 0; j < nb; ++j) {
          if (j0 + j + kKvAhead < n_keys) prefetch_row(v, f16, (j0 + j + kKvAhead) * stride + off, hd);
          const float* vr = kv_row(v, f16, (j0 + j) * stride + off, hd, kt[0]);
          for (int r = 0; r < R; ++r) {
            if (j0 + j < n_keys0 + r / H) FastElementwise<V>::add(ExecCtx{}, vr, score[r][j], hd, acc + r * hd);
          }
        }
      } else if (f16) {
        accumulate_v<true>(v, j0 * stride + off, stride, nb, score, R, hd, acc);
      } else {
        accumulate_v<false>(v, j0 * stride + off, stride, nb, score, R, hd, acc);
      }
    }
    for (int r = 0; r < R; ++r) {
      const float inv = 1.0f / sum[r];
      float* out = o + (r / H) * q_tok + (r % H) * hd;
      for (int c = 0; c < hd; ++c) out[c] = acc[r * hd + c] * inv;
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

  // Items are (run of T tokens, run of H heads of one kv group): H is the largest divisor of
  // the group that fits the stack block and still leaves two items per thread where it can,
  // then T the most tokens that fit beside it (prefill: K and V rows converted once per tile).
  static void attention(const ExecCtx& ctx, const float* q, const void* k, const void* v, int64_t pos0, int64_t n_tok,
                        const AttentionParams& p, float* out) {
    if (p.head_dim > kMaxHeadDim) {
      reference_backend().k.attention(ctx, q, k, v, pos0, n_tok, p, out);
      return;
    }
    const int group = p.n_q_heads / p.n_kv_heads, hd = p.head_dim;
    const int64_t want = std::min<int64_t>(2 * ctx.threads(), n_tok * p.n_q_heads);
    int H = 1;
    for (int h = 2; h <= group; ++h) {
      if (group % h == 0 && h <= kMaxGroup && h * hd <= kAttnAcc && n_tok * (p.n_q_heads / h) >= want) H = h;
    }
    const int64_t per_tok = p.n_q_heads / H;
    int T = 1;
    while (T < n_tok && (T + 1) * H <= kMaxGroup && (T + 1) * H * hd <= kAttnAcc &&
           (n_tok + T) / (T + 1) * per_tok >= want)
      ++T;
    const int64_t kv_stride = static_cast<int64_t>(p.n_kv_heads) * hd, q_tok = int64_t(p.n_q_heads) * hd;
    const int64_t tiles = (n_tok + T - 1) / T, items = tiles * per_tok;
    ctx.parallel_for(
        items,
        [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t t = i / per_tok * T;
            const int h0 = static_cast<int>(i % per_tok) * H;
            const int64_t at = t * q_tok + int64_t(h0) * hd;
            attend(q + at, q_tok, static_cast<int>(std::min<int64_t>(T, n_tok - t)), H, k, v, p.kv_f16, kv_stride,
                   int64_t(h0 / group) * hd, pos0 + t + 1, hd, p.scale, out + at);
          }
        },
        std::max<int64_t>(1, items / (2 * ctx.threads())));
  }
};

}  // namespace
}  // namespace bs
