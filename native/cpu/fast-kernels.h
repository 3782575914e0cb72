// The fast CPU kernels, written once over a SIMD traits type V (ops-avx2.cpp, ops-avx512.cpp,
// ops-neon.cpp each define V with their intrinsics and include this file, so every ISA runs
// the same algorithm compiled with its own flags).
//
// Quantised matmul reads the MLX codes in place. A 32-bit word holds 32/bits codes; a vector
// of L words (one "chunk" of C = L·32/bits elements) is split into phases by masking:
// phase p of lane j is element (32/bits)·j + p, still shifted left by bits·p. The activation
// is laid out once per call to match: xs[p·L + j] = x[(32/bits)·j + p] · 2^(-bits·p), so
// (q·2^(bits·p)) · (x·2^(-bits·p)) = q·x exactly and each phase costs an AND, an int→float
// convert and an FMA; the top phase is shifted down instead (it would set the sign bit).
// Per row y = Σ_g scale_g · Σ_{i∈g} q_i x_i + Σ_g bias_g · Σ_{i∈g} x_i (Σ x exact in float).
//
// One token and 4-bit codes (decode) take an integer path instead when V has one
// (kIntDot): each block of 32 activations becomes Q = round(x / d), |Q| < 2^23, split into
// three bytes Q = Q2·2^16 + Q1·2^8 + Q0 (Q0, Q1 unsigned, Q2 signed), and byte dot products
// (maddubs / VNNI / sdot, udot) give Σ q·Q exactly in int32 per chunk: nibble (u8) × Q2 (s8),
// and Q1, Q0 (u8) × nibble (s8 — a nibble fits either side). One convert and one FMA per
// chunk follow. A single int8 activation would err by ~1e-2 of the output, beyond the op
// test's 1e-4 of Σ|w·x|. ExecCtx::activation_bits = 16 (the default) keeps two bytes,
// |Q| < 2^15, Q = Q1·2^8 + Q0, logits ~1e-4 of their scale off the reference; a block's few
// extreme values are taken out and added in float (split_outliers), so its others keep their
// precision. activation_bits = 24: three bytes, a half more dot products, logits ~1e-6 off.
// Several tokens (prefill) share the unpacked codes in the float path, where that is cheaper
// than quantising each token.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/backend.h"
#include "cpu/fast-common.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

// step(integral_constant<int, P>) for P = 0..PH-1, unrolled at compile time (phases of a code word).
template <int PH, class Step>
inline void for_phases(Step&& step) {
  [&]<int... P>(std::integer_sequence<int, P...>) { (step(std::integral_constant<int, P>{}), ...); }(
      std::make_integer_sequence<int, PH>{});
}

template <class V>
struct FastKernels {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  static constexpr int kTile = 4;        // tokens per register tile
  static constexpr int kRowBlock = 8;    // rows sharing one token tile (kept in L1)
  static constexpr int64_t kMaxCols = 65536;
  static constexpr int64_t kPrefetchBytes = 4096;
  static constexpr int kKeyBlock = 128;     // attention keys scored per block
  static constexpr int kMaxHeadDim = 1024;  // larger heads go to the reference

  // ---------------------------------------------------------------- activation layout
  // Laid-out activations of n tokens for one weight format.
  struct Act {
    bool ints = false;            // integer bytes (xq, dl) instead of floats (xs)
    const float* xs = nullptr;    // [n][nch·C] float layout
    const int8_t* xq = nullptr;   // [n][nch][byte k < bytes][lo 4L bytes, hi 4L bytes]
    const float* dl = nullptr;    // [n][nch][L]: the block scale d of each lane's elements
    const float* gsum = nullptr;  // [n][groups]: Σ x over each weight group
    int64_t xs_stride = 0, g_stride = 0;  // xs (or xq bytes and dl lanes) / gsum per token
    int bytes = 2;                        // bytes per activation (ints): activation_bits / 8
    // Two bytes: per token the count (on[t]) and columns and values (oi, ov: o_stride apart) of
    // activations taken out of their blocks (split_outliers), added back per row in float.
    const int32_t* on = nullptr;
    const int32_t* oi = nullptr;
    const float* ov = nullptr;
    int64_t o_stride = 0;
  };
  // A chunk's activation bytes: [byte k][lo, hi] vectors of 4L bytes.
  template <int BYTES>
  static void load_act_bytes(const int8_t* q, I* x) {
#pragma GCC unroll 6
    for (int k = 0; k < 2 * BYTES; ++k) x[k] = V::load_codes(reinterpret_cast<const uint8_t*>(q) + 4 * L * k);
  }
  // Scale of the block maximum: |Q| must stay below 2^23 (three bytes, signed top) or 2^15 (two).
  // x·(qmax/m) rounds twice in float (≤ qmax·(1 + 2^-23)), so three bytes keep one unit spare.
  static float qmax(int bytes) { return bytes == 3 ? 8388606.0f : 32767.0f; }

  static int64_t chunk_elems(int bits) { return int64_t(32 / bits) * L; }
  static int64_t n_chunks(const WeightMatrix& w) { return (w.cols + chunk_elems(w.bits) - 1) / chunk_elems(w.bits); }

  static void layout_token(const WeightMatrix& w, const float* x, float* xs, float* gsum) {
    const int ph = 32 / w.bits;
    const int64_t C = chunk_elems(w.bits), nch = n_chunks(w);
    float mul[8];
    for (int p = 0; p < ph; ++p) mul[p] = p == ph - 1 ? 1.0f : std::ldexp(1.0f, -w.bits * p);
    for (int64_t c = 0; c < nch; ++c) {
      const int64_t base = c * C;
      if (base + C <= w.cols) {
        for (int j = 0; j < L; ++j) {
          const float* src = x + base + ph * j;
          for (int p = 0; p < ph; ++p) xs[base + p * L + j] = src[p] * mul[p];
        }
      } else {
        for (int p = 0; p < ph; ++p) {
          for (int j = 0; j < L; ++j) {
            const int64_t e = base + ph * j + p;
            xs[base + p * L + j] = e < w.cols ? x[e] * mul[p] : 0.0f;
          }
        }
      }
    }
    group_sums(w, x, gsum);
  }

  // Σ x over each weight group, zero-padded to a multiple of L (Act::g_stride).
  static void group_sums(const WeightMatrix& w, const float* x, float* gsum) {
    const int64_t G = w.groups_per_row();
    for (int64_t g = 0; g < G; ++g) gsum[g] = sum(x + g * w.group, w.group);
    for (int64_t g = G; g % L != 0; ++g) gsum[g] = 0.0f;
  }

  // Token x as integer bytes for 4-bit codes (chunks of C = 8L elements): element t of a
  // chunk goes to byte t/2 of the lo (even t) or hi (odd t) half of each byte k, matching the
  // nibbles w & 15 and w >> 4 of the code bytes.
  static int64_t byte_pos(int64_t t) { return (t & 1) * 4 * L + (t >> 1); }
  // Byte k of Q (two's complement) into byte k at element t: the low bytes read as unsigned,
  // the top one as signed.
  static void put_bytes(int8_t* q, int64_t t, int32_t Q, int bytes) {
    for (int k = 0; k < bytes; ++k) q[k * 8 * L + byte_pos(t)] = static_cast<int8_t>(static_cast<uint32_t>(Q) >> (8 * k));
  }
  static void quant_token(const WeightMatrix& w, const float* x, int bytes, int8_t* xq, float* dl, float* gsum,
                          int32_t* on, int32_t* oi, float* ov) {
    if constexpr (V::kIntDot) {
      const int64_t C = 8 * L, nch = n_chunks(w), full = w.cols / C;
      // Full chunks: V::quant_block takes 32 elements (16 even, 16 odd) to their bytes and
      // returns their d, with the same float operations as the scalar tail below.
      for (int64_t c = 0; c < full; ++c) {
        int8_t* q = xq + c * bytes * 8 * L;
        for (int k = 0; k < L / 4; ++k) {
          const float* xb = x + c * C + 32 * k;
          const float d = bytes == 3 ? V::template quant_block<3>(xb, qmax(3), q + 16 * k, q + 4 * L + 16 * k, 8 * L)
                                     : V::template quant_block<2>(xb, qmax(2), q + 16 * k, q + 4 * L + 16 * k, 8 * L);
          for (int j = 0; j < 4; ++j) dl[c * L + 4 * k + j] = d;
        }
      }
      if (full < nch) quant_tail(w, x, full, bytes, xq + full * bytes * 8 * L, dl + full * L);
      if (on) *on = split_outliers(w, x, xq, dl, oi, ov);
      group_sums(w, x, gsum);
    }
  }

  // The partial last chunk, element by element; elements past cols are zero (and so is d).
  static void quant_tail(const WeightMatrix& w, const float* x, int64_t c, int bytes, int8_t* q, float* dl) {
    const int64_t C = 8 * L;
    const float qm = qmax(bytes);
    float d[L / 4], inv[L / 4];
    for (int k = 0; k < L / 4; ++k) {
      const int64_t b = c * C + 32 * k;
      float m = 0.0f;
      for (int i = 0; i < 32 && b + i < w.cols; ++i) m = std::max(m, std::fabs(x[b + i]));
      d[k] = b < w.cols ? m / qm : 0.0f;
      inv[k] = m > 0.0f ? qm / m : 0.0f;
    }
    for (int64_t t = 0; t < C; ++t) {
      const int64_t e = c * C + t;
      int32_t Q = 0;
      if (e < w.cols) {
        Q = static_cast<int32_t>(std::nearbyint(x[e] * inv[t / 32]));  // to nearest even, as cvtps2dq
      }
      put_bytes(q, t, Q, bytes);
    }
    for (int j = 0; j < L; ++j) dl[j] = d[j / 4];
  }

  // Two bytes resolve a block only to 2^-15 of its largest |x|: an activation ~1000× the others
  // leaves them a few bits. A block whose top bytes show 1..kSplit values with |Q| ≥ 2^11
  // (within 16× of its largest) gives them up, and so on while the rest again has few values
  // within 16× of its own largest and the budget of kSplit lasts; the rest is quantised again
  // (Q = 0 for those taken, d from the others) and the taken ones are kept in float for the
  // rows to add back (qrows_int_n). A block without an extreme value stays as it is.
  static constexpr int kSplit = 4;
  static int32_t split_outliers(const WeightMatrix& w, const float* x, int8_t* xq, float* dl, int32_t* oi,
                                float* ov) {
    const int64_t C = 8 * L;
    const float qm = qmax(2);
    int32_t count = 0;
    for (int64_t b0 = 0; b0 < w.cols; b0 += 32) {
      const int64_t c = b0 / C, k = (b0 % C) / 32;
      int8_t* q = xq + c * 2 * 8 * L;
      int large = 0;
      for (int i = 0; i < 32 && large <= kSplit; ++i) {
        const int8_t v = q[8 * L + byte_pos(32 * k + i)];  // top byte
        large += v >= 8 || v < -8;
      }
      if (large > kSplit) continue;
      const int n = static_cast<int>(std::min<int64_t>(32, w.cols - b0));
      bool taken[32] = {};
      int ntaken = 0;
      float m = 0.0f;
      for (;;) {
        m = 0.0f;
        for (int i = 0; i < n; ++i) m = taken[i] ? m : std::max(m, std::fabs(x[b0 + i]));
        int cand[kSplit + 1], nc = 0;
        for (int i = 0; i < n && nc <= kSplit - ntaken; ++i) {
          if (!taken[i] && m > 0.0f && std::fabs(x[b0 + i]) >= m / 16.0f) cand[nc++] = i;
        }
        if (nc == 0 || ntaken + nc > kSplit) break;
        for (int j = 0; j < nc; ++j) {
          taken[cand[j]] = true;
          oi[count] = static_cast<int32_t>(b0 + cand[j]);
          ov[count++] = x[b0 + cand[j]];
        }
        ntaken += nc;
      }
      if (ntaken == 0) continue;
      const float inv = m > 0.0f ? qm / m : 0.0f;
      for (int i = 0; i < 32; ++i) {
        const int32_t Q = i >= n || taken[i] ? 0 : static_cast<int32_t>(std::nearbyint(x[b0 + i] * inv));
        put_bytes(q, 32 * k + i, Q, 2);
      }
      for (int j = 0; j < 4; ++j) dl[c * L + 4 * k + j] = m / qm;
    }
    return count;
  }

  // Whether n tokens of x against w take the integer path: 4-bit codes, one token per
  // matrix (decode; `max_run` is the longest run of tokens sharing a matrix).
  static bool use_ints(const WeightMatrix& w, int64_t max_run) {
    if constexpr (V::kIntDot) {
      return w.bits == 4 && max_run == 1;
    } else {
      return false;
    }
  }

  // Lays out n tokens into the calling thread's scratch (valid until its next call). Rows
  // equal to the previous one (the MoE block's copies of one token) are copied, not redone.
  static Act prepare(const ExecCtx& ctx, const WeightMatrix& w, const float* x, int64_t n, bool ints) {
    Act a;
    a.ints = ints;
    a.bytes = ctx.activation_bits / 8;
    a.g_stride = (w.groups_per_row() + L - 1) / L * L;  // zero-padded: vector loops may read to a multiple of L
    const int64_t nch = n_chunks(w);
    // Per token: float layout nch·C floats, or nch·bytes·8L activation bytes + nch·L scale floats.
    a.xs_stride = ints ? nch * L : nch * chunk_elems(w.bits);
    const int64_t qbytes = ints ? nch * a.bytes * 8 * L : 0;
    const int64_t os = a.o_stride = ints && a.bytes == 2 ? (w.cols + 31) / 32 * kSplit : 0;  // per block at most kSplit
    uint8_t* base = static_cast<uint8_t*>(fast::scratch(
        fast::Slot::Act, static_cast<size_t>(n * (qbytes + 4 * (a.xs_stride + a.g_stride) + 4 * (1 + 2 * os)))));
    int8_t* xq = reinterpret_cast<int8_t*>(base);
    float* xs = reinterpret_cast<float*>(base + n * qbytes);
    float* gs = xs + n * a.xs_stride;
    int32_t* on = reinterpret_cast<int32_t*>(gs + n * a.g_stride);
    int32_t* oi = on + n;
    float* ov = reinterpret_cast<float*>(oi + n * os);
    a.xq = xq;
    a.xs = ints ? nullptr : xs;
    a.dl = ints ? xs : nullptr;
    a.gsum = gs;
    if (os) a.on = on, a.oi = oi, a.ov = ov;
    auto run = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const float* xt = x + t * w.cols;
        if (t > t0 && std::memcmp(xt, xt - w.cols, static_cast<size_t>(w.cols) * 4) == 0) {
          std::memcpy(xq + t * qbytes, xq + (t - 1) * qbytes, static_cast<size_t>(qbytes));
          std::memcpy(xs + t * a.xs_stride, xs + (t - 1) * a.xs_stride, static_cast<size_t>(a.xs_stride) * 4);
          std::memcpy(gs + t * a.g_stride, gs + (t - 1) * a.g_stride, static_cast<size_t>(a.g_stride) * 4);
          if (os) {
            on[t] = on[t - 1];
            std::memcpy(oi + t * os, oi + (t - 1) * os, static_cast<size_t>(on[t]) * 4);
            std::memcpy(ov + t * os, ov + (t - 1) * os, static_cast<size_t>(on[t]) * 4);
          }
        } else if (ints) {
          quant_token(w, xt, a.bytes, xq + t * qbytes, xs + t * a.xs_stride, gs + t * a.g_stride, os ? on + t : nullptr,
                      oi + t * os, ov + t * os);
        } else {
          layout_token(w, xt, xs + t * a.xs_stride, gs + t * a.g_stride);
        }
      }
    };
    if (n >= 16) {
      ctx.parallel_for(n, run, 4);
    } else {
      run(0, n);
    }
    return a;
  }

  // ---------------------------------------------------------------- small vector helpers
  static float sum(const float* x, int64_t n) {
    F a = V::zero(), b = V::zero();
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      a = V::add(a, V::load(x + i));
      b = V::add(b, V::load(x + i + L));
    }
    for (; i + L <= n; i += L) a = V::add(a, V::load(x + i));
    float s = V::hsum(V::add(a, b));
    for (; i < n; ++i) s += x[i];
    return s;
  }

  static float dot(const float* a, const float* b, int64_t n) {
    F s0 = V::zero(), s1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * L <= n; i += 2 * L) {
      s0 = V::fma(V::load(a + i), V::load(b + i), s0);
      s1 = V::fma(V::load(a + i + L), V::load(b + i + L), s1);
    }
    for (; i + L <= n; i += L) s0 = V::fma(V::load(a + i), V::load(b + i), s0);
    float s = V::hsum(V::add(s0, s1));
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
  }

  // n floats of type dt (F32, F16 or BF16) at p into out. The tail goes through a zeroed
  // vector-sized buffer, so short rows of scales (G = 8 for 512 columns) stay vectorised.
  static void to_float(const uint8_t* p, DType dt, int64_t n, float* out) {
    if (dt == DType::F32) {
      std::memcpy(out, p, static_cast<size_t>(n) * 4);
      return;
    }
    const bool bf = dt == DType::BF16;
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store(out + i, bf ? V::load_bf16(p + 2 * i) : V::load_f16(p + 2 * i));
    if (i < n) {
      uint8_t tmp[2 * L] = {};
      float f[L];
      std::memcpy(tmp, p + 2 * i, static_cast<size_t>(n - i) * 2);
      V::store(f, bf ? V::load_bf16(tmp) : V::load_f16(tmp));
      std::memcpy(out + i, f, static_cast<size_t>(n - i) * 4);
    }
  }

  // Byte offset of row r of W[mat] in the scales (and biases) tensor.
  static size_t scale_offset(const WeightMatrix& w, int64_t mat, int64_t r) {
    return static_cast<size_t>((mat * w.rows + r) * w.groups_per_row()) * dtype_size(w.dtype);
  }

  // The group scales and biases of NR consecutive rows as float, row i at s + i·G (one
  // conversion per call: rows of a decode matrix are a few hundred cycles of work). The L
  // entries past the last row are zero: expand() and the bias loop read up to L past a row's
  // G, where they meet zero activations and zero group sums, and stack garbage there could be
  // NaN (NaN · 0 = NaN); inside the block they read the next row's finite scales instead.
  template <int NR>
  struct RowScalesN {
    float s[NR * (kMaxCols / 32) + L], b[NR * (kMaxCols / 32) + L];
    const WeightMatrix& w;
    int64_t G;
    explicit RowScalesN(const WeightMatrix& m) : w(m), G(m.groups_per_row()) {}
    void load(int64_t mat, int64_t r, int n = 1) {
      const size_t at = scale_offset(w, mat, r);
      to_float(w.scales + at, w.dtype, n * G, s);
      to_float(w.biases + at, w.dtype, n * G, b);
      std::fill_n(s + n * G, L, 0.0f);
      std::fill_n(b + n * G, L, 0.0f);
    }
  };
  using RowScales = RowScalesN<1>;

  // e^x, |relative error| < 3e-7 on [-87, 88] (clamped outside): the Cephes expf polynomial
  // on x - n·ln2, scaled by 2^n built in the exponent bits.
  static F exp(F x) {
    x = V::min(V::max(x, V::set1(-87.0f)), V::set1(88.0f));
    const F n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
    F r = V::fma(n, V::set1(-0.693359375f), x);
    r = V::fma(n, V::set1(2.12194440e-4f), r);
    F p = V::set1(1.9875691500e-4f);
    p = V::fma(p, r, V::set1(1.3981999507e-3f));
    p = V::fma(p, r, V::set1(8.3334519073e-3f));
    p = V::fma(p, r, V::set1(4.1665795894e-2f));
    p = V::fma(p, r, V::set1(1.6666665459e-1f));
    p = V::fma(p, r, V::set1(5.0000001201e-1f));
    p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
    return V::mul(p, V::pow2i(n));
  }

  // ---------------------------------------------------------------- quantised rows
  // Phase p of a code word vector as float (q · 2^(bits·p), or q for the top phase).
  template <int BITS, int P>
  static F phase(I w) {
    if constexpr (P == 32 / BITS - 1) {
      return V::template top<32 - BITS>(w);
    } else {
      return V::template masked<((1u << BITS) - 1u) << (BITS * P)>(w);
    }
  }

  struct RowView {
    const uint8_t* w;   // the row's codes
    int64_t nch;        // chunks, the last possibly partial
    int tail_bytes;     // bytes of the last chunk when partial, else 0
    const float* s;     // group scales (float)
    int64_t C;          // elements per chunk
    int gshift;         // log2(group): the group of element e is e >> gshift
    int lanes_per_group;
  };

  // The lane scales of chunk c: lane j holds the scale of element c·C + (32/bits)·j.
  template <bool BCAST>
  static F lane_scales(const RowView& r, int64_t c) {
    const int64_t g = (c * r.C) >> r.gshift;
    if constexpr (BCAST) {
      return V::set1(r.s[g]);
    } else {
      return V::expand(r.s + g, r.lanes_per_group);
    }
  }

  static I load_chunk(const RowView& r, int64_t c) {
    if (r.tail_bytes && c == r.nch - 1) return V::load_codes_part(r.w + c * L * 4, r.tail_bytes);
    return V::load_codes(r.w + c * L * 4);
  }

  // One token: Σ_c lane_scales · Σ_p phase_p · xs_p. Pairs of phases go into four
  // accumulators, so the dependency chain per chunk is short (cvt, mul, fma, fma) and several
  // chunks overlap in flight.
  template <int BITS, bool BCAST>
  static float qdot1(const RowView& r, const float* xs) {
    constexpr int PH = 32 / BITS;
    F acc0 = V::zero(), acc1 = V::zero(), acc2 = V::zero(), acc3 = V::zero();
    for (int64_t c = 0; c < r.nch; ++c) {
      const I w = load_chunk(r, c);
      const float* xc = xs + c * r.C;
      const F sc = lane_scales<BCAST>(r, c);
      F a0 = V::mul(phase<BITS, 0>(w), V::load(xc));
      F a1 = V::mul(phase<BITS, 2>(w), V::load(xc + 2 * L));
      a0 = V::fma(phase<BITS, 1>(w), V::load(xc + L), a0);
      a1 = V::fma(phase<BITS, 3>(w), V::load(xc + 3 * L), a1);
      acc0 = V::fma(a0, sc, acc0);
      acc1 = V::fma(a1, sc, acc1);
      if constexpr (PH == 8) {
        F a2 = V::mul(phase<BITS, 4>(w), V::load(xc + 4 * L));
        F a3 = V::mul(phase<BITS, 6>(w), V::load(xc + 6 * L));
        a2 = V::fma(phase<BITS, 5>(w), V::load(xc + 5 * L), a2);
        a3 = V::fma(phase<BITS, 7>(w), V::load(xc + 7 * L), a3);
        acc2 = V::fma(a2, sc, acc2);
        acc3 = V::fma(a3, sc, acc3);
      }
    }
    return V::hsum(V::add(V::add(acc0, acc1), V::add(acc2, acc3)));
  }

  // T tokens (2..4) share each unpacked chunk: the phases are scaled once, then FMA'd into
  // two accumulators per token (eight independent chains keep both FMA pipes busy).
  template <int BITS, bool BCAST, int T>
  static void qdotT(const RowView& r, const float* const* xs, float* out) {
    constexpr int PH = 32 / BITS;
    F acc[T][2];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = V::zero();
    for (int64_t c = 0; c < r.nch; ++c) {
      const I w = load_chunk(r, c);
      const F sc = lane_scales<BCAST>(r, c);
      const int64_t off = c * r.C;
      auto step = [&](auto pc) {
        constexpr int P = decltype(pc)::value;
        const F f = V::mul(phase<BITS, P>(w), sc);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[t][P & 1] = V::fma(f, V::load(xs[t] + off + P * L), acc[t][P & 1]);
      };
      for_phases<PH>(step);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[t] = V::hsum(V::add(acc[t][0], acc[t][1]));
  }

  // R rows (same shape) against one token on the integer path: per chunk the activation
  // bytes are loaded once for all R rows, and each row adds cvt(Σ q·Q) · scale · d (exact
  // integer sums per chunk). The group-bias term Σ_g b_g·Σx_g joins the same accumulator, so
  // each row costs one horizontal sum. Every row runs the same operations in the same order
  // whatever R is, so a row's bits do not depend on how rows are grouped (or on threads).
  template <int R, bool BCAST, int BYTES>
  static inline __attribute__((always_inline)) void qdot_int(const RowView& shape, const uint8_t* const* rows,
                                                            const float* s, const float* b, const int8_t* xq,
                                                            const float* dl, const float* gs, int64_t G,
                                                            const uint8_t* pf_end, int64_t pf, float* out) {
    // Row i's scales and biases are at s + i·G and b + i·G; the shape (and so each chunk's
    // group index) is the same for every row.
    const int64_t nch = shape.nch, C = shape.C, full = shape.tail_bytes ? nch - 1 : nch;
    const int gshift = shape.gshift, lpg = shape.lanes_per_group, tail = shape.tail_bytes;
    constexpr int64_t QB = BYTES * 8 * L;  // activation bytes per chunk
    F acc[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) acc[i] = V::zero();
    for (int64_t c = 0; c < nch; ++c) {
      // Codes stream from DRAM once per token: fetch each cache line pf bytes ahead of the
      // hardware prefetcher, which restarts at every expert's block, but not past the rows
      // this call owns (the next block may be another thread's or an unused expert's).
      if (((c * 4 * L) & 63) == 0) {
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          const uint8_t* p = rows[i] + c * 4 * L + pf;
          if (p < pf_end) __builtin_prefetch(p);
        }
      }
      I x[2 * BYTES];
      load_act_bytes<BYTES>(xq + c * QB, x);
      const F d = V::load(dl + c * L);
      const int64_t g = (c * C) >> gshift;
      const bool part = c >= full;
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const I w = part ? V::load_codes_part(rows[i] + c * 4 * L, tail) : V::load_codes(rows[i] + c * 4 * L);
        const F sc = BCAST ? V::set1(s[i * G + g]) : V::expand(s + i * G + g, lpg);
        acc[i] = V::fma(V::cvt(V::template isum<BYTES>(w, x)), V::mul(sc, d), acc[i]);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      // gs is zero past G (to a multiple of L): what b holds there (the next row's) adds 0.
      F bacc = V::zero();
      for (int64_t k = 0; k < G; k += L) bacc = V::fma(V::load(b + i * G + k), V::load(gs + k), bacc);
      out[i] = V::hsum(V::add(acc[i], bacc));
    }
  }

  template <int BITS, bool BCAST>
  static void qdot(const RowView& r, const float* const* xs, int T, float* out) {
    switch (T) {
      case 1: out[0] = qdot1<BITS, BCAST>(r, xs[0]); break;
      case 2: qdotT<BITS, BCAST, 2>(r, xs, out); break;
      case 3: qdotT<BITS, BCAST, 3>(r, xs, out); break;
      default: qdotT<BITS, BCAST, 4>(r, xs, out); break;
    }
  }

  // y[(t0 + t)·ldy + r] for rows [r0, r1) of W[mat] and tokens [t0, t0 + nt) of a; rows in
  // blocks of kRowBlock so a tile of kTile tokens is reused from L1 by each row of the block.
  static void qrows(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0, int64_t nt,
                    float* y, int64_t ldy) {
    if constexpr (V::kIntDot) {
      if (a.ints) {
        qrows_int(w, mat, r0, r1, a, t0, nt, y, ldy);
        return;
      }
    }
    if (nt >= kGemmMinTokens) {  // float layout from here on
      qrows_gemm(w, mat, r0, r1, a, t0, nt, y, ldy);
      return;
    }
    const int64_t G = w.groups_per_row(), C = chunk_elems(w.bits), nch = n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * w.bits / 8) : 0;
    // A group spans whole chunks: one scale per chunk, broadcast; else expanded per lane.
    const bool bcast = w.group >= C;
    RowScales sc(w);
    for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
      const int64_t re = std::min(r1, rb + kRowBlock);
      for (int64_t tt = 0; tt < nt; tt += kTile) {
        const int T = static_cast<int>(std::min<int64_t>(kTile, nt - tt));
        const float* xs[kTile];
        for (int t = 0; t < T; ++t) xs[t] = a.xs + (t0 + tt + t) * a.xs_stride;
        for (int64_t r = rb; r < re; ++r) {
          sc.load(mat, r);
          const RowView rv{w.w_row(mat, r), nch, tail, sc.s, C, __builtin_ctz(static_cast<unsigned>(w.group)),
                           static_cast<int>(w.group / (32 / w.bits))};
          float out[kTile];
          if (w.bits == 4) {
            bcast ? qdot<4, true>(rv, xs, T, out) : qdot<4, false>(rv, xs, T, out);
          } else {
            bcast ? qdot<8, true>(rv, xs, T, out) : qdot<8, false>(rv, xs, T, out);
          }
          for (int t = 0; t < T; ++t) {
            y[(t0 + tt + t) * ldy + r] = out[t] + dot(sc.b, a.gsum + (t0 + tt + t) * a.g_stride, G);
          }
        }
      }
    }
  }

  // Prefetches the cache lines of [p, min(end, p + bytes)).
  static void warm_up(const uint8_t* p, const uint8_t* end, int64_t bytes) {
    const uint8_t* e = std::min(end, p + bytes);
    for (const uint8_t* q = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}); q < e;
         q += 64) {
      __builtin_prefetch(q);
    }
  }

  // The integer path (one token per matrix, 4-bit): rows in fours sharing the activation loads.
  static void qrows_int(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                        int64_t nt, float* y, int64_t ldy) {
    if (a.bytes == 3) {
      qrows_int_n<3>(w, mat, r0, r1, a, t0, nt, y, ldy);
    } else {
      qrows_int_n<2>(w, mat, r0, r1, a, t0, nt, y, ldy);
    }
  }

  template <int BYTES>
  static void qrows_int_n(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                          int64_t nt, float* y, int64_t ldy) {
    constexpr int R = 4;
    const int64_t G = w.groups_per_row(), C = chunk_elems(w.bits), nch = n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * w.bits / 8) : 0;
    const bool bcast = w.group >= C;
    const int gshift = __builtin_ctz(static_cast<unsigned>(w.group)), lpg = static_cast<int>(w.group / 8);
    const int64_t qb = a.xs_stride * BYTES * 8;  // activation bytes per token
    const uint8_t* pf_end = w.w_row(mat, r1);
    // At least one group of rows ahead: a shorter distance lands in rows this pass is reading.
    const int64_t pf = std::max<int64_t>(kPrefetchBytes, R * static_cast<int64_t>(w.row_bytes()));
    // The loop below prefetches pf bytes ahead, so the range's first pf bytes (and its first
    // scales) would arrive one demand miss after another: ask for all of them at once.
    warm_up(w.w_row(mat, r0), pf_end, pf);
    const size_t sat = scale_offset(w, mat, r0), send = scale_offset(w, mat, r1);
    warm_up(w.scales + sat, w.scales + send, 1024);
    warm_up(w.biases + sat, w.biases + send, 1024);
    RowScalesN<R> sc(w);
    const RowView shape{nullptr, nch, tail, nullptr, C, gshift, lpg};
    for (int64_t tok = t0; tok < t0 + nt; ++tok) {
      const int8_t* xq = a.xq + tok * qb;
      const float* dl = a.dl + tok * a.xs_stride;
      const float* gs = a.gsum + tok * a.g_stride;
      for (int64_t r = r0; r < r1; r += R) {
        const int n = static_cast<int>(std::min<int64_t>(R, r1 - r));
        const uint8_t* rows[R];
        sc.load(mat, r, n);
        for (int i = 0; i < n; ++i) rows[i] = w.w_row(mat, r + i);
        float* out = y + tok * ldy + r;
        if (n == R) {
          bcast ? qdot_int<R, true, BYTES>(shape, rows, sc.s, sc.b, xq, dl, gs, G, pf_end, pf, out)
                : qdot_int<R, false, BYTES>(shape, rows, sc.s, sc.b, xq, dl, gs, G, pf_end, pf, out);
        } else {
          for (int i = 0; i < n; ++i) {
            const float* si = sc.s + i * G;
            const float* bi = sc.b + i * G;
            bcast ? qdot_int<1, true, BYTES>(shape, rows + i, si, bi, xq, dl, gs, G, pf_end, pf, out + i)
                  : qdot_int<1, false, BYTES>(shape, rows + i, si, bi, xq, dl, gs, G, pf_end, pf, out + i);
          }
        }
        // Activations split_outliers took out: scale · code · x per row (the bias term's group
        // sums already hold them).
        for (int32_t o = 0; a.on && o < a.on[tok]; ++o) {
          const int64_t e = a.oi[tok * a.o_stride + o];
          const float v = a.ov[tok * a.o_stride + o];
          for (int i = 0; i < n; ++i) {
            const int code = (rows[i][e >> 1] >> ((e & 1) * 4)) & 15;
            out[i] += sc.s[i * G + (e >> gshift)] * static_cast<float>(code) * v;
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------- prefill: dequant + GEMM
  // Runs of many tokens dequantise a block of rows once into float (in the activation's
  // phase order, phase p scaled by 2^(bits·p) like the codes, so w'·x' = w·x exactly) and
  // multiply it with the tokens in register tiles of kGT tokens × kGR rows: 1/8 FMA per MAC
  // once the dequantisation is spread over the run.
  static constexpr int kGT = V::kGemmT, kGR = V::kGemmR;
  static constexpr int kGemmRows = 3 * kGR;  // rows dequantised per block
  static constexpr int64_t kGemmMinTokens = 4;

  template <int BITS>
  static void dequant_scaled(const WeightMatrix& w, int64_t mat, int64_t r, const float* s, const float* b, float* out) {
    constexpr int PH = 32 / BITS;
    const int64_t C = chunk_elems(BITS), nch = n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * BITS / 8) : 0;
    const RowView rs{w.w_row(mat, r), nch, tail, s, C, __builtin_ctz(static_cast<unsigned>(w.group)),
                     static_cast<int>(w.group / PH)};
    RowView rbias = rs;
    rbias.s = b;
    const bool bcast = w.group >= C;
    for (int64_t c = 0; c < nch; ++c) {
      const I q = load_chunk(rs, c);
      const F sc = bcast ? lane_scales<true>(rs, c) : lane_scales<false>(rs, c);
      const F bi = bcast ? lane_scales<true>(rbias, c) : lane_scales<false>(rbias, c);
      float* o = out + c * C;
      auto step = [&](auto pc) {
        constexpr int P = decltype(pc)::value;
        const F bp = P == PH - 1 ? bi : V::mul(bi, V::set1(static_cast<float>(1u << (BITS * P))));
        V::store(o + P * L, V::fma(phase<BITS, P>(q), sc, bp));
      };
      for_phases<PH>(step);
    }
  }

  // out[t·R + r] = Σ_k x[t][k] · wr[r][k] over K (a multiple of L).
  template <int T, int R>
  static void gemm_tile(const float* const* x, const float* const* wr, int64_t K, float* out) {
    F acc[T][R];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) acc[t][r] = V::zero();
    }
    for (int64_t k = 0; k < K; k += L) {
      F xv[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) xv[t] = V::load(x[t] + k);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const F wv = V::load(wr[r] + k);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[t][r] = V::fma(xv[t], wv, acc[t][r]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) out[t * R + r] = V::hsum(acc[t][r]);
    }
  }

  template <int T>
  static void gemm_rows_of(int R, const float* const* x, const float* const* wr, int64_t K, float* out) {
    static_assert(kGR <= 6);
    switch (R) {
      case 1: gemm_tile<T, 1>(x, wr, K, out); break;
      case 2: if constexpr (kGR >= 2) gemm_tile<T, 2>(x, wr, K, out); break;
      case 3: if constexpr (kGR >= 3) gemm_tile<T, 3>(x, wr, K, out); break;
      case 4: if constexpr (kGR >= 4) gemm_tile<T, 4>(x, wr, K, out); break;
      case 5: if constexpr (kGR >= 5) gemm_tile<T, 5>(x, wr, K, out); break;
      default: if constexpr (kGR >= 6) gemm_tile<T, 6>(x, wr, K, out); break;
    }
  }

  static void gemm_tile_any(int T, int R, const float* const* x, const float* const* wr, int64_t K, float* out) {
    static_assert(kGT <= 4);
    switch (T) {
      case 1: gemm_rows_of<1>(R, x, wr, K, out); break;
      case 2: if constexpr (kGT >= 2) gemm_rows_of<2>(R, x, wr, K, out); break;
      case 3: if constexpr (kGT >= 3) gemm_rows_of<3>(R, x, wr, K, out); break;
      default: if constexpr (kGT >= 4) gemm_rows_of<4>(R, x, wr, K, out); break;
    }
  }

  static void qrows_gemm(const WeightMatrix& w, int64_t mat, int64_t r0, int64_t r1, const Act& a, int64_t t0,
                         int64_t nt, float* y, int64_t ldy) {
    const int64_t K = a.xs_stride;
    float* wbuf = fast::scratch_of<float>(fast::Slot::Gemm, static_cast<size_t>(kGemmRows * K));
    RowScales sc(w);
    for (int64_t rb = r0; rb < r1; rb += kGemmRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, r1 - rb));
      for (int i = 0; i < nr; ++i) {
        sc.load(mat, rb + i);
        if (w.bits == 4) {
          dequant_scaled<4>(w, mat, rb + i, sc.s, sc.b, wbuf + i * K);
        } else {
          dequant_scaled<8>(w, mat, rb + i, sc.s, sc.b, wbuf + i * K);
        }
      }
      for (int64_t tt = 0; tt < nt; tt += kGT) {
        const int T = static_cast<int>(std::min<int64_t>(kGT, nt - tt));
        const float* xs[kGT];
        for (int t = 0; t < T; ++t) xs[t] = a.xs + (t0 + tt + t) * a.xs_stride;
        for (int rr = 0; rr < nr; rr += kGR) {
          const int R = std::min(kGR, nr - rr);
          const float* wr[kGR];
          for (int r = 0; r < R; ++r) wr[r] = wbuf + (rr + r) * K;
          float out[kGT * kGR];
          gemm_tile_any(T, R, xs, wr, K, out);
          for (int t = 0; t < T; ++t) {
            for (int r = 0; r < R; ++r) y[(t0 + tt + t) * ldy + rb + rr + r] = out[t * R + r];
          }
        }
      }
    }
  }

  // Rows per parallel range: several ranges per thread (the VM's cores are shared, so
  // dynamic hand-out evens out a stalled thread), multiples of the row block.
  static int64_t row_grain(const ExecCtx& ctx, int64_t rows) {
    const int64_t g = rows / (4 * ctx.threads());
    return std::clamp<int64_t>((g + kRowBlock - 1) / kRowBlock * kRowBlock, kRowBlock, 256);
  }

  static void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
    const Act a = prepare(ctx, w, x, n, use_ints(w, n));
    ctx.parallel_for(
        w.rows, [&](int64_t r0, int64_t r1) { qrows(w, mat, r0, r1, a, 0, n, y, w.rows); }, row_grain(ctx, w.rows));
  }

  static void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
    qmatmul(ctx, w, mat, x, 1, y);
  }

  // Expert by expert: each run of equal ids is one matmul of that expert's rows over the
  // run's tokens; work items are (run, block of rows), handed out dynamically.
  static void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m,
                            float* y) {
    int64_t* starts = fast::scratch_of<int64_t>(fast::Slot::Runs, static_cast<size_t>(2 * m + 1));
    int32_t* run_ids = reinterpret_cast<int32_t*>(starts + m + 1);
    const int64_t runs = fast::id_runs(ids, m, starts, run_ids);
    int64_t max_run = 0;
    for (int64_t i = 0; i < runs; ++i) max_run = std::max(max_run, starts[i + 1] - starts[i]);
    const Act a = prepare(ctx, w, x, m, use_ints(w, max_run));
    const int64_t rb = std::clamp<int64_t>(w.rows * runs / (8 * ctx.threads()) / kRowBlock * kRowBlock, kRowBlock, 128);
    const int64_t blocks = (w.rows + rb - 1) / rb;
    ctx.parallel_for(
        runs * blocks,
        [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t run = i / blocks, r0 = (i % blocks) * rb;
            qrows(w, run_ids[run], r0, std::min(w.rows, r0 + rb), a, starts[run], starts[run + 1] - starts[run], y,
                  w.rows);
          }
        },
        1);
  }

  // ---------------------------------------------------------------- plain float weights
  template <int T>
  static void ddotT(const uint8_t* row, DType dt, int64_t cols, const float* const* x, float* out) {
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero();
    int64_t c = 0;
    for (; c + L <= cols; c += L) {
      const F wv = dt == DType::F32 ? V::load(reinterpret_cast<const float*>(row) + c)
                   : dt == DType::BF16 ? V::load_bf16(row + 2 * c)
                                       : V::load_f16(row + 2 * c);
      for (int t = 0; t < T; ++t) acc[t] = V::fma(wv, V::load(x[t] + c), acc[t]);
    }
    for (int t = 0; t < T; ++t) {
      out[t] = V::hsum(acc[t]);
      for (int64_t i = c; i < cols; ++i) out[t] += load_float(row, dt, static_cast<size_t>(i)) * x[t][i];
    }
  }

  static void dense_matmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n,
                           float* y) {
    ctx.parallel_for(
        w.rows,
        [&](int64_t r0, int64_t r1) {
          for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
            const int64_t re = std::min(r1, rb + kRowBlock);
            for (int64_t tt = 0; tt < n; tt += kTile) {
              const int T = static_cast<int>(std::min<int64_t>(kTile, n - tt));
              const float* xs[kTile];
              for (int t = 0; t < T; ++t) xs[t] = x + (tt + t) * w.cols;
              for (int64_t r = rb; r < re; ++r) {
                float out[kTile];
                const uint8_t* row = w.w_row(mat, r);
                switch (T) {
                  case 1: ddotT<1>(row, w.dtype, w.cols, xs, out); break;
                  case 2: ddotT<2>(row, w.dtype, w.cols, xs, out); break;
                  case 3: ddotT<3>(row, w.dtype, w.cols, xs, out); break;
                  default: ddotT<4>(row, w.dtype, w.cols, xs, out); break;
                }
                for (int t = 0; t < T; ++t) y[(tt + t) * w.rows + r] = out[t];
              }
            }
          }
        },
        row_grain(ctx, w.rows));
  }

  // ---------------------------------------------------------------- elementwise and norms
  static void rmsnorm(const ExecCtx&, const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* xr = x + r * d;
      const double ss = dot(xr, xr, d);
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
      const F iv = V::set1(inv);
      float* yr = y + r * d;
      int64_t i = 0;
      for (; i + L <= d; i += L) V::store(yr + i, V::mul(V::mul(V::load(xr + i), iv), V::load(w + i)));
      for (; i < d; ++i) yr[i] = xr[i] * inv * w[i];
    }
  }

  static void rope(const ExecCtx&, float* x, const int32_t* positions, int64_t n_tok, const RopeParams& p) {
    const int half = p.rot_dims / 2;
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* cs = fast::rope_table(positions[t], p);
      const float* sn = cs + half;
      for (int h = 0; h < p.n_heads; ++h) {
        float* v = x + (t * p.n_heads + h) * p.head_dim;
        int i = 0;
        for (; i + L <= half; i += L) {
          const F a = V::load(v + i), b = V::load(v + i + half), c = V::load(cs + i), s = V::load(sn + i);
          V::store(v + i, V::fma(a, c, V::mul(V::neg(b), s)));
          V::store(v + i + half, V::fma(b, c, V::mul(a, s)));
        }
        for (; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cs[i] - b * sn[i];
          v[i + half] = b * cs[i] + a * sn[i];
        }
      }
    }
  }

  static void silu_mul(const ExecCtx&, const float* gate, const float* up, int64_t n, float* out) {
    int64_t i = 0;
    const F one = V::set1(1.0f);
    for (; i + L <= n; i += L) {
      const F g = V::load(gate + i);
      V::store(out + i, V::mul(V::div(g, V::add(one, exp(V::neg(g)))), V::load(up + i)));
    }
    for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }

  static void add(const ExecCtx&, const float* x, float s, int64_t n, float* y) {
    int64_t i = 0;
    const F sv = V::set1(s);
    for (; i + L <= n; i += L) V::store(y + i, V::fma(sv, V::load(x + i), V::load(y + i)));
    for (; i < n; ++i) y[i] += s * x[i];
  }

  // ---------------------------------------------------------------- attention
  // Cache row j of kv head g as float (converted from half when the cache is F16).
  static const float* kv_row(const void* cache, bool f16, int64_t idx, int hd, float* tmp) {
    if (!f16) return static_cast<const float*>(cache) + idx;
    to_float(static_cast<const uint8_t*>(cache) + 2 * idx, DType::F16, hd, tmp);
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
  static void v_tile(const void* v, int64_t at, int64_t stride, int nb, const float (*p)[kKeyBlock], int h0,
                     int64_t c, int hd, float* acc) {
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
  static void v_heads(const void* v, int64_t at, int64_t stride, int nb, const float (*p)[kKeyBlock], int h0,
                      int hd, float* acc) {
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
  static constexpr int kMaxGroup = 16;     // heads per call
  static constexpr int kAttnAcc = 4096;    // accumulator floats per call (H · head_dim)
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
        for (int h = 0; h < H; ++h) score[h][j] = dot(q + h * hd, kr, hd) * scale;
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
          const F e = exp(V::sub(V::load(score[h] + j), V::set1(bmx)));
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
          for (int h = 0; h < H; ++h) add(ExecCtx{}, vr, score[h][j], hd, acc + h * hd);
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
            attend(q + at, H, k, v, p.kv_f16, kv_stride, int64_t(h0 / group) * hd, pos0 + t + 1, hd, p.scale,
                   out + at);
          }
        },
        std::max<int64_t>(1, items / (2 * ctx.threads())));
  }

  // ---------------------------------------------------------------- the table
  static bool accepts(Op op, const WeightMatrix* w) {
    switch (op) {
      case Op::QMatVec:
      case Op::QMatMul:
      case Op::GatherMatMul:
        return w && w->quantised() && (w->bits == 4 || w->bits == 8) && w->cols % 32 == 0 &&
               w->cols <= kMaxCols && (w->group == 32 || w->group == 64 || w->group == 128);
      case Op::DenseMatMul:
        return w && !w->quantised() && is_float_weight(w->dtype);
      default:
        return true;
    }
  }

  // Embed and routing are left to the reference: its embed (one row per token, dequant_row)
  // is the fast path, and its routing is allocation-free and O(E·k) per token, so a copy
  // would add nothing. `lora_delta`: the ISA's LoRA kernel from lora-fast.h (written
  // separately, shared by sets).
  static Backend make(const char* name, const char* detail, bool (*usable)(), decltype(Kernels::lora_delta) lora_delta) {
    return Backend{.name = name,
                   .detail = detail,
                   .usable = usable,
                   .accepts = accepts,
                   .k = {.qmatvec = qmatvec,
                         .qmatmul = qmatmul,
                         .dense_matmul = dense_matmul,
                         .gather_matmul = gather_matmul,
                         .rmsnorm = rmsnorm,
                         .rope = rope,
                         .attention = attention,
                         .silu_mul = silu_mul,
                         .add = add,
                         .lora_delta = lora_delta}};
  }
};

}  // namespace
}  // namespace bs
