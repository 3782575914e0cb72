// The fast LoRA delta (Op::LoraDelta): y += scale · B (A x) with F16/BF16/F32 A and B widened
// in registers and float32 accumulation. t = A·x per token first (dot products over the
// input), then every output row adds scale · B[o]·t; where V can sum L rows into one vector
// (hsums) and rank % L == 0, rows go in blocks of L. Both phases split over the pool only when
// the work pays for waking it (decode shapes run on the calling thread).
#pragma once
#include "common/backend.h"
#include "cpu/fast-common.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastLora {
  using F = typename V::F;
  static constexpr int L = V::L;
  static constexpr int kAcc = 16 / L;  // accumulators: 16 elements per step at any width
  static constexpr bool kRowBlocks = requires(const F* a) { V::hsums(a); };

  // fn over [0, items) on the pool when the work reaches 2^18 multiply-adds, else on the calling
  // thread: below that a pool round trip costs more than it saves.
  static void run(const ExecCtx& ctx, int64_t items, int64_t macs_per_item, RangeFn fn) {
    if (items * macs_per_item >= (int64_t{1} << 18)) {
      ctx.parallel_for(items, fn);
    } else if (items > 0) {
      fn(0, items);
    }
  }

  // Elements [i, i + L) of a T row as float.
  template <DType T>
  static F load(const uint8_t* p, int64_t i) {
    if constexpr (T == DType::F32) {
      return V::load(reinterpret_cast<const float*>(p) + i);
    } else if constexpr (T == DType::F16) {
      return V::load_f16(p + 2 * i);
    } else {
      return V::load_bf16(p + 2 * i);
    }
  }

  // Σ_c row[c] · x[c] over n elements of a T row: kAcc accumulators, summed in pairs.
  template <DType T>
  static float dot(const uint8_t* row, const float* x, int64_t n) {
    F a[kAcc];
    for (int j = 0; j < kAcc; ++j) a[j] = V::zero();
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
      for (int j = 0; j < kAcc; ++j) a[j] = V::fma(load<T>(row, c + j * L), V::load(x + c + j * L), a[j]);
    }
    for (; c + L <= n; c += L) a[0] = V::fma(load<T>(row, c), V::load(x + c), a[0]);
    for (int w = 1; w < kAcc; w *= 2) {
      for (int j = 0; j + w < kAcc; j += 2 * w) a[j] = V::add(a[j], a[j + w]);
    }
    float s = V::hsum(a[0]);
    for (; c < n; ++c) s += load_float(row, T, static_cast<size_t>(c)) * x[c];
    return s;
  }

  // y[tok, o..o+L) += scale · B[o..o+L)·t[tok] for rank % L == 0: L rows reduced together.
  template <DType T>
  static void row_block(const LoraWeights& l, const float* t, int64_t n, int64_t o, float* y) {
    const int64_t rank = l.b.cols, out = l.b.rows;
    const size_t b_row = l.b.row_bytes();
    const F scale = V::set1(l.scale);
    for (int64_t tok = 0; tok < n; ++tok) {
      const float* tt = t + tok * rank;
      F acc[L];
      for (int j = 0; j < L; ++j) {
        const uint8_t* b = l.b.w + (o + j) * b_row;
        acc[j] = V::mul(load<T>(b, 0), V::load(tt));
        for (int64_t k = L; k < rank; k += L) acc[j] = V::fma(load<T>(b, k), V::load(tt + k), acc[j]);
      }
      float* yo = y + tok * out + o;
      V::store(yo, V::fma(scale, V::hsums(acc), V::load(yo)));
    }
  }

  template <DType T>
  static void delta(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
    const int64_t rank = l.a.rows, in = l.a.cols, out = l.b.rows;
    const size_t a_row = l.a.row_bytes(), b_row = l.b.row_bytes();
    float* t = fast::scratch_of<float>(fast::Slot::Lora, static_cast<size_t>(n * rank));  // no allocation once warm
    run(ctx, n * rank, in, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t tok = i / rank, k = i % rank;
        t[i] = dot<T>(l.a.w + k * a_row, x + tok * in, in);
      }
    });
    // Blocks of L output rows, then the rest row by row (the pool splits blocks, so every row is
    // computed the same way for any thread count).
    int64_t blocks = 0;
    if constexpr (kRowBlocks) {
      blocks = rank % L == 0 ? out / L : 0;
      run(ctx, blocks, L * n * rank, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) row_block<T>(l, t, n, blk * L, y);
      });
    }
    run(ctx, out - blocks * L, n * rank, [&](int64_t o0, int64_t o1) {
      for (int64_t o = blocks * L + o0; o < blocks * L + o1; ++o) {
        const uint8_t* b = l.b.w + o * b_row;
        for (int64_t tok = 0; tok < n; ++tok) y[tok * out + o] += l.scale * dot<T>(b, t + tok * rank, rank);
      }
    });
  }

  static void lora_delta(const ExecCtx& ctx, const LoraWeights& l, const float* x, int64_t n, float* y) {
    switch (l.a.dtype) {
      case DType::F32: return delta<DType::F32>(ctx, l, x, n, y);
      case DType::F16: return delta<DType::F16>(ctx, l, x, n, y);
      default: return delta<DType::BF16>(ctx, l, x, n, y);
    }
  }
};

}  // namespace
}  // namespace bs
