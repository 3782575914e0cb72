// The fast quantised matmuls (qmatvec, qmatmul, gather_matmul): activations laid out once per
// call (fast-activations.h), then rows of codes against them on the float path here, the
// integer paths (fast-int-dot.h per token, fast-int-gemm.h for runs) or the float prefill
// GEMM (fast-gemm.h).
#pragma once
#include <algorithm>

#include "cpu/fast-activations.h"
#include "cpu/fast-codes.h"
#include "cpu/fast-common.h"
#include "cpu/fast-gemm.h"
#include "cpu/fast-int-dot.h"
#include "cpu/fast-int-gemm.h"
#include "cpu/fast-vector.h"

namespace bs {

namespace {  // internal linkage: each ISA file gets its own instantiation with its own flags

template <class V>
struct FastQMatMul {
  using F = typename V::F;
  using I = typename V::I;
  static constexpr int L = V::L;
  using Vec = FastVector<V>;
  using Codes = FastCodes<V>;
  using Acts = FastActivations<V>;
  using Act = typename Acts::Act;
  using RowView = typename Codes::RowView;
  using RowScales = typename Codes::RowScales;

  // One token: Σ_c lane_scales · Σ_p phase_p · xs_p. Pairs of phases go into four
  // accumulators, so the dependency chain per chunk is short (cvt, mul, fma, fma) and several
  // chunks overlap in flight.
  template <int BITS, bool BCAST>
  static float qdot1(const RowView& r, const float* xs) {
    constexpr int PH = 32 / BITS;
    F acc0 = V::zero(), acc1 = V::zero(), acc2 = V::zero(), acc3 = V::zero();
    for (int64_t c = 0; c < r.nch; ++c) {
      const I w = Codes::load_chunk(r, c);
      const float* xc = xs + c * r.C;
      const F sc = Codes::template lane_scales<BCAST>(r, c);
      F a0 = V::mul(Codes::template phase<BITS, 0>(w), V::load(xc));
      F a1 = V::mul(Codes::template phase<BITS, 2>(w), V::load(xc + 2 * L));
      a0 = V::fma(Codes::template phase<BITS, 1>(w), V::load(xc + L), a0);
      a1 = V::fma(Codes::template phase<BITS, 3>(w), V::load(xc + 3 * L), a1);
      acc0 = V::fma(a0, sc, acc0);
      acc1 = V::fma(a1, sc, acc1);
      if constexpr (PH == 8) {
        F a2 = V::mul(Codes::template phase<BITS, 4>(w), V::load(xc + 4 * L));
        F a3 = V::mul(Codes::template phase<BITS, 6>(w), V::load(xc + 6 * L));
        a2 = V::fma(Codes::template phase<BITS, 5>(w), V::load(xc + 5 * L), a2);
        a3 = V::fma(Codes::template phase<BITS, 7>(w), V::load(xc + 7 * L), a3);
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
      const I w = Codes::load_chunk(r, c);
      const F sc = Codes::template lane_scales<BCAST>(r, c);
      const int64_t off = c * r.C;
      auto step = [&](auto pc) {
        constexpr int P = decltype(pc)::value;
        const F f = V::mul(Codes::template phase<BITS, P>(w), sc);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[t][P & 1] = V::fma(f, V::load(xs[t] + off + P * L), acc[t][P & 1]);
      };
      for_phases<PH>(step);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) out[t] = V::hsum(V::add(acc[t][0], acc[t][1]));
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
        if constexpr (V::kIntGemm) {
          if (a.bytes <= V::kIntGemmBytes && nt >= FastIntGemm<V>::kMinTokens) {
            FastIntGemm<V>::qrows(w, mat, r0, r1, a, t0, nt, y, ldy);
            return;
          }
        }
        FastIntDot<V>::qrows_int(w, mat, r0, r1, a, t0, nt, y, ldy);
        return;
      }
    }
    if (nt >= FastGemm<V>::kGemmMinTokens) {  // float layout from here on
      FastGemm<V>::qrows_gemm(w, mat, r0, r1, a, t0, nt, y, ldy);
      return;
    }
    const int64_t G = w.groups_per_row(), C = Codes::chunk_elems(w.bits), nch = Codes::n_chunks(w);
    const int64_t rem = w.cols - (nch - 1) * C;
    const int tail = rem < C ? static_cast<int>(rem * w.bits / 8) : 0;
    // A group spans whole chunks: one scale per chunk, broadcast; else expanded per lane.
    const bool bcast = w.group >= C;
    RowScales sc(w);
    for (int64_t rb = r0; rb < r1; rb += Vec::kRowBlock) {
      const int64_t re = std::min(r1, rb + Vec::kRowBlock);
      for (int64_t tt = 0; tt < nt; tt += Vec::kTile) {
        const int T = static_cast<int>(std::min<int64_t>(Vec::kTile, nt - tt));
        const float* xs[Vec::kTile];
        for (int t = 0; t < T; ++t) xs[t] = a.xs + (t0 + tt + t) * a.xs_stride;
        for (int64_t r = rb; r < re; ++r) {
          sc.load(mat, r);
          const RowView rv{w.w_row(mat, r),
                           nch,
                           tail,
                           sc.s,
                           C,
                           __builtin_ctz(static_cast<unsigned>(w.group)),
                           static_cast<int>(w.group / (32 / w.bits))};
          float out[Vec::kTile];
          if (w.bits == 4) {
            bcast ? qdot<4, true>(rv, xs, T, out) : qdot<4, false>(rv, xs, T, out);
          } else {
            bcast ? qdot<8, true>(rv, xs, T, out) : qdot<8, false>(rv, xs, T, out);
          }
          for (int t = 0; t < T; ++t) {
            y[(t0 + tt + t) * ldy + r] = out[t] + Vec::dot(sc.b, a.gsum + (t0 + tt + t) * a.g_stride, G);
          }
        }
      }
    }
  }

  static void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
    const Act a = Acts::prepare(ctx, w, x, n, Acts::use_ints(ctx, w, n));
    ctx.parallel_for(
        w.rows, [&](int64_t r0, int64_t r1) { qrows(w, mat, r0, r1, a, 0, n, y, w.rows); },
        Vec::grain_for(ctx, w.rows, static_cast<int64_t>(w.row_bytes()), n));
  }

  static void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
    qmatmul(ctx, w, mat, x, 1, y);
  }

  // Expert by expert: each run of equal ids is one matmul of that expert's rows over the
  // run's tokens; work items are (run, block of rows), handed out dynamically.
  static void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m,
                            float* y) {
    const WeightMatrix* ws[1] = {&w};
    gather_matmul_multi(ctx, ws, 1, ids, x, m, &y);
  }

  // The same for several matrices over the same x: work items (matrix, run, block of rows) in
  // one parallel loop, x laid out once per layout (bits, group) of the codes, two layouts at
  // most (fast::Slot::Act and Act2 hold them; matrices of a third go to a call of their own).
  // A row's result does not depend on its block, so each ys[j] is gather_matmul's, bit for bit.
  static void gather_matmul_multi(const ExecCtx& ctx, const WeightMatrix* const* ws, int count, const int32_t* ids,
                                  const float* x, int64_t m, float* const* ys) {
    if (count > Kernels::kMaxMulti) {
      gather_matmul_multi(ctx, ws, Kernels::kMaxMulti, ids, x, m, ys);
      gather_matmul_multi(ctx, ws + Kernels::kMaxMulti, count - Kernels::kMaxMulti, ids, x, m, ys + Kernels::kMaxMulti);
      return;
    }
    auto alike = [](const WeightMatrix* a, const WeightMatrix* b) {
      return a->bits == b->bits && a->group == b->group;
    };
    const WeightMatrix* mw[Kernels::kMaxMulti];  // this call's matrices, then the rest's from `n`
    float* my[Kernels::kMaxMulti];
    int layout[Kernels::kMaxMulti], n = 0, rest = count;
    const WeightMatrix* second = nullptr;
    for (int j = 0; j < count; ++j) {
      if (!second && !alike(ws[j], ws[0])) second = ws[j];
      const int at = alike(ws[j], ws[0]) || alike(ws[j], second) ? n++ : --rest;
      mw[at] = ws[j], my[at] = ys[j], layout[at] = alike(ws[j], ws[0]) ? 0 : 1;
    }
    if (rest < count) gather_matmul_multi(ctx, mw + rest, count - rest, ids, x, m, my + rest);
    int64_t* starts = fast::scratch_of<int64_t>(fast::Slot::Runs, static_cast<size_t>(2 * m + 1));
    int32_t* run_ids = reinterpret_cast<int32_t*>(starts + m + 1);
    const int64_t runs = fast::id_runs(ids, m, starts, run_ids);
    // Each run takes the layout its own length asks for (use_ints), x laid out in each layout
    // some run of the call takes: acts[code layout][ints].
    int64_t max_run = 0;
    bool wants[2][2] = {};
    for (int64_t i = 0; i < runs; ++i) {
      const int64_t len = starts[i + 1] - starts[i];
      max_run = std::max(max_run, len);
      wants[0][Acts::use_ints(ctx, *mw[0], len)] = true;
      if (second) wants[1][Acts::use_ints(ctx, *second, len)] = true;
    }
    constexpr fast::Slot kSlots[2][2] = {{fast::Slot::Act, fast::Slot::ActInts},
                                         {fast::Slot::Act2, fast::Slot::Act2Ints}};
    Act acts[2][2];
    for (int g = 0; g < (second ? 2 : 1); ++g) {
      for (int ints = 0; ints < 2; ++ints) {
        if (wants[g][ints]) acts[g][ints] = Acts::prepare(ctx, g ? *second : *mw[0], x, m, ints, kSlots[g][ints]);
      }
    }
    auto run_rows = [&](int j, int64_t run, int64_t r0, int64_t r1) {
      const WeightMatrix& w = *mw[j];
      const int64_t t0 = starts[run], nt = starts[run + 1] - t0;
      qrows(w, run_ids[run], r0, r1, acts[layout[j]][Acts::use_ints(ctx, w, nt)], t0, nt, my[j], w.rows);
    };
    constexpr int64_t kRB = Vec::kRowBlock;
    int64_t first[Kernels::kMaxMulti + 1] = {0};
    if (max_run <= Vec::kTile) {
      // Runs of a few tokens stream the weights: the (matrix, run) segments in order as one row
      // space cut into equal pieces of about stream_grain rows (whole experts at moe-small's
      // shapes on 2 threads: 128-row blocks of 8 experts ran gate/up at 25 GB/s from DRAM,
      // whole experts 27-28), so matrices of unlike sizes still split evenly over the threads.
      for (int j = 0; j < n; ++j) first[j + 1] = first[j] + mw[j]->rows * runs;
      const int64_t total = first[n], grain = Vec::stream_grain(ctx, total, static_cast<int64_t>(mw[0]->row_bytes()));
      const int64_t pieces = (total + grain - 1) / grain;
      // Position p·total/pieces of the row space, moved down to a kRB boundary of its segment.
      auto cut = [&](int64_t p) {
        const int64_t c = p * total / pieces;
        int j = 0;
        while (j + 1 < n && c >= first[j + 1]) ++j;
        const int64_t rows = mw[j]->rows, seg = first[j] + (c - first[j]) / rows * rows;
        return seg + (c - seg) / kRB * kRB;
      };
      ctx.parallel_for(
          pieces,
          [&](int64_t p0, int64_t p1) {
            for (int64_t p = p0; p < p1; ++p) {
              for (int64_t c = cut(p), end = cut(p + 1); c < end;) {
                int j = 0;
                while (c >= first[j + 1]) ++j;
                const WeightMatrix& w = *mw[j];
                const int64_t run = (c - first[j]) / w.rows, seg = first[j] + run * w.rows;
                const int64_t r1 = std::min(w.rows, end - seg);
                run_rows(j, run, c - seg, r1);
                c = seg + r1;
              }
            }
          },
          1);
      return;
    }
    int64_t rb[Kernels::kMaxMulti], blocks[Kernels::kMaxMulti];
    for (int j = 0; j < n; ++j) {
      rb[j] = std::clamp<int64_t>(mw[j]->rows * runs / (8 * ctx.threads()) / kRB * kRB, kRB, 128);
      blocks[j] = (mw[j]->rows + rb[j] - 1) / rb[j];
      first[j + 1] = first[j] + runs * blocks[j];
    }
    ctx.parallel_for(
        first[n],
        [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            int j = 0;
            while (i >= first[j + 1]) ++j;
            const int64_t k = i - first[j], run = k / blocks[j], r0 = (k % blocks[j]) * rb[j];
            run_rows(j, run, r0, std::min(mw[j]->rows, r0 + rb[j]));
          }
        },
        1);
  }
};

}  // namespace
}  // namespace bs
