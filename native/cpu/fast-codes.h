// How the fast quantised kernels (fast-qmatmul.h) read the MLX codes: in place. A 32-bit
// word holds 32/bits codes; a vector of L words (one "chunk" of C = L·32/bits elements) is
// split into phases by masking: phase p of lane j is element (32/bits)·j + p, still shifted
// left by bits·p. The activation is laid out once per call to match (fast-activations.h):
// xs[p·L + j] = x[(32/bits)·j + p] · 2^(-bits·p), so (q·2^(bits·p)) · (x·2^(-bits·p)) = q·x
// exactly and each phase costs an AND, an int→float convert and an FMA; the top phase is
// shifted down instead (it would set the sign bit).
// Per row y = Σ_g scale_g · Σ_{i∈g} q_i x_i + Σ_g bias_g · Σ_{i∈g} x_i (Σ x exact in float).
#pragma once
#include <algorithm>
#include <utility>

#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

// step(integral_constant<int, P>) for P = 0..PH-1, unrolled at compile time (phases of a code word).
template <int PH, class Step>
inline void for_phases(Step&& step) {
  [&]<int... P>(std::integer_sequence<int, P...>) { (step(std::integral_constant<int, P>{}), ...); }
  (std::make_integer_sequence<int, PH>{});
}

template <class V>
struct FastCodes {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  static constexpr int64_t kMaxCols = 65536;
  using Vec = FastVector<V>;

  static int64_t chunk_elems(int bits) { return int64_t(32 / bits) * L; }
  static int64_t n_chunks(const WeightMatrix& w) { return (w.cols + chunk_elems(w.bits) - 1) / chunk_elems(w.bits); }

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
      Vec::to_float(w.scales + at, w.dtype, n * G, s);
      Vec::to_float(w.biases + at, w.dtype, n * G, b);
      std::fill_n(s + n * G, L, 0.0f);
      std::fill_n(b + n * G, L, 0.0f);
    }
  };
  using RowScales = RowScalesN<1>;

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
    const uint8_t* w;  // the row's codes
    int64_t nch;       // chunks, the last possibly partial
    int tail_bytes;    // bytes of the last chunk when partial, else 0
    const float* s;    // group scales (float)
    int64_t C;         // elements per chunk
    int gshift;        // log2(group): the group of element e is e >> gshift
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
};

}  // namespace
}  // namespace bs
