#include "cuda/qmatmul.cuh"

#include <algorithm>

#include "cuda/device-context.cuh"
#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// L lanes share a group of R consecutive output rows (32 / L groups per warp), partial sums joined
// by an L-lane reduction. Plain mode shares each weight load across up to T tokens (grid.y = token
// chunks); gathered mode runs one row of work per grid.y, or grouped one tile of up to T rows of
// work routed to one matrix (each row's sums as in plain mode: its place in a tile changes nothing). Where the codes
// and x are 16-byte aligned (always for buffers the engine allocates), a lane loads four words at once (32 4-bit or 16
// 8-bit columns: never across a group of ≥ 32 columns) per row with one scale and bias, and the x columns of that step
// once for all R rows (at 4 bits x is 8x the weight bytes); U = 2 steps in flight when R = 1. L is picked so short rows
// still give each lane two loads.
template <int BITS>
__device__ __forceinline__ float dot_words(const uint4& v, const float4* xv) {
  constexpr int kPer = 32 / BITS;  // columns per word
  constexpr uint32_t kMask = (1u << BITS) - 1u;
  const uint32_t q[4] = {v.x, v.y, v.z, v.w};
  float dot = 0.0f;
  for (int k = 0; k < 4; ++k) {
    for (int e4 = 0; e4 < kPer / 4; ++e4) {
      const float4 c = xv[k * (kPer / 4) + e4];
      const uint32_t w = q[k] >> (e4 * 4 * BITS);
      dot += static_cast<float>(w & kMask) * c.x + static_cast<float>((w >> BITS) & kMask) * c.y +
             static_cast<float>((w >> (2 * BITS)) & kMask) * c.z + static_cast<float>((w >> (3 * BITS)) & kMask) * c.w;
    }
  }
  return dot;
}

// T: tokens sharing a weight load (1 for decode and gathered rows, kMatTokens for prefill chunks),
// R: rows per lane group (kMatRowGroup or 1); compile-time bounds so the sums stay in registers.
// G: x read as SiLU(x)·up (QMatArgs::up), compiled apart so the other kernels keep their registers.
template <int BITS, int T, int R, bool G>
__global__ void qmatmul_kernel(QMatSet set, int lanes, const float* __restrict__ x) {
  constexpr int U = R == 1 ? 2 : 1;
  // The set's matrix blockIdx.z, copied by selects (no dynamic index into the parameters).
  QMatArgs a = set.a[0];
  float* y = set.y[0];
  if (blockIdx.z == 1) a = set.a[1], y = set.y[1];
  if (blockIdx.z == 2) a = set.a[2], y = set.y[2];
  const int lane = threadIdx.x & (lanes - 1);
  const int64_t row0 = ((static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5)) * (32 / lanes) +
                        ((threadIdx.x & 31) / lanes)) *
                       R;
  // Rows this lane group owns (≤ 0: dead lanes stay for the shuffles and add zeros).
  const int live = static_cast<int>(a.rows - row0 < R ? a.rows - row0 : R);
  const bool gather = a.ids != nullptr, grouped = a.order != nullptr;
  if (grouped && static_cast<int>(blockIdx.y) >= *a.tile_count) return;  // the whole block
  const int64_t i0 = gather && !grouped ? blockIdx.y : static_cast<int64_t>(blockIdx.y) * T;
  const int64_t left = a.n - i0;
  const int count = grouped ? a.tiles[2 * blockIdx.y + 1] : gather ? 1 : static_cast<int>(left < T ? left : T);
  // Each token's x row and output row: consecutive, one routed row, or a tile's rows.
  int64_t xrow[T], yrow[T];
  for (int t = 0; t < T; ++t) {
    const int64_t i = grouped ? a.order[a.tiles[2 * blockIdx.y] + (t < count ? t : 0)] : i0 + t;
    xrow[t] = gather ? i / a.x_div : i;
    yrow[t] = i;
  }
  int64_t mat = a.mat;
  if (gather) mat = a.slots ? a.slots[a.ids[yrow[0]]] : a.ids[yrow[0]];
  const int64_t words = a.cols * a.bits / 32, groups = a.cols / a.group;
  const int gshift = __ffs(a.group) - 1;  // groups are powers of two
  const uint8_t* codes = a.parts ? a.parts[3 * mat] : a.codes;
  const uint8_t* scales = a.parts ? a.parts[3 * mat + 1] : a.scales;
  const uint8_t* biases = a.parts ? a.parts[3 * mat + 2] : a.biases;
  const int64_t base = a.parts ? row0 : mat * a.rows + row0;  // row0's index in codes, scales, biases
  const uint32_t* w = reinterpret_cast<const uint32_t*>(codes) + base * words;
  float acc[T][R];
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) acc[t][r] = 0.0f;
  // Rows of one matrix share its base's alignment (a row is a multiple of 16 bytes at 4 and 8 bits).
  const bool vec =
      BITS != 0 &&
      ((reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x) | (G ? reinterpret_cast<uintptr_t>(a.up) : 0)) &
       15) == 0;
  if constexpr (BITS != 0) {
    constexpr int kCols = 4 * (32 / BITS);  // columns per 16-byte step
    const int64_t steps = words / 4;
    const uint4* w4 = reinterpret_cast<const uint4*>(w);
    auto step = [&](const uint4* v, int64_t si) {
      const int64_t c0 = si * kCols;
      float s[R], b[R];
      for (int r = 0; r < R; ++r) {
        const int64_t g = (base + r) * groups + (c0 >> gshift);
        s[r] = r < live ? load_elem(scales, a.scale_type, g) : 0.0f;
        b[r] = r < live ? load_elem(biases, a.scale_type, g) : 0.0f;
      }
      for (int t = 0; t < T; ++t) {
        if (t >= count) break;
        float4 xv[kCols / 4];
        float xsum = 0.0f;
        for (int k = 0; k < kCols / 4; ++k) {
          xv[k] = reinterpret_cast<const float4*>(x + xrow[t] * a.cols + c0)[k];
          if (G) xv[k] = silu_mul4(xv[k], reinterpret_cast<const float4*>(a.up + xrow[t] * a.cols + c0)[k]);
          xsum += (xv[k].x + xv[k].y) + (xv[k].z + xv[k].w);
        }
        for (int r = 0; r < R; ++r) acc[t][r] += s[r] * dot_words<BITS>(v[r], xv) + b[r] * xsum;  // Σ (s·q + b)·x
      }
    };
    for (int64_t si = lane; vec && live > 0 && si < steps; si += U * lanes) {
      uint4 v[U][R];
      for (int u = 0; u < U; ++u)
        for (int r = 0; r < R; ++r)
          v[u][r] = r < live && si + u * lanes < steps ? __ldg(w4 + r * steps + si + u * lanes) : uint4{0, 0, 0, 0};
      for (int u = 0; u < U; ++u)
        if (si + u * lanes < steps) step(v[u], si + u * lanes);
    }
  }
  if (!vec) {
    const int per_word = 32 / a.bits;
    const uint32_t mask = (1u << a.bits) - 1u;
    for (int r = 0; r < R; ++r) {
      if (r >= live) break;  // R bounds the loop so acc stays in registers
      for (int64_t wi = lane; wi < words; wi += lanes) {
        const uint32_t word = w[r * words + wi];
        const int64_t c0 = wi * per_word;
        const int64_t g = (base + r) * groups + (c0 >> gshift);  // a word never straddles groups (group ≥ 32)
        const float s = load_elem(scales, a.scale_type, g), b = load_elem(biases, a.scale_type, g);
        for (int t = 0; t < T; ++t) {
          if (t >= count) break;
          const float* xt = x + xrow[t] * a.cols + c0;
          const float* ut = G ? a.up + xrow[t] * a.cols + c0 : nullptr;
          float dot = 0.0f, sum = 0.0f;
          for (int e = 0; e < per_word; ++e) {
            const float xe = G ? silu_mul(xt[e], ut[e]) : xt[e];
            dot += static_cast<float>((word >> (e * a.bits)) & mask) * xe;
            sum += xe;
          }
          acc[t][r] += s * dot + b * sum;
        }
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    if (t >= count) break;  // count is the same for every lane of the block
    for (int r = 0; r < R; ++r) {
      const float total = warp_sum(acc[t][r], lanes);
      if (lane == 0 && r < live) y[yrow[t] * a.rows + row0 + r] = a.bias ? total + a.bias[row0 + r] : total;
    }
  }
}

template <int BITS, int T, int R, bool G = false>
void launch_rows(const QMatSet& set, int lanes, uint32_t chunks, const float* x, cudaStream_t s) {
  int64_t rows = 0;
  for (int i = 0; i < set.count; ++i) rows = std::max(rows, set.a[i].rows);
  const int64_t per_block = kMatWarps * (32 / lanes) * R;  // blocks past a shorter matrix's rows add nothing
  const dim3 grid(static_cast<uint32_t>((rows + per_block - 1) / per_block), chunks, static_cast<uint32_t>(set.count));
  BS_LAUNCH((qmatmul_kernel<BITS, T, R, G>), grid, kMatWarps * 32, s)(set, lanes, x);
}

// One token per row of work (decode, gathered): row groups or single rows, gated or not.
template <int BITS>
void launch_one(const QMatSet& set, bool grouped, bool gated, int rl, int lanes, uint32_t chunks, const float* x,
                cudaStream_t s) {
  if (grouped && gated) launch_rows<BITS, 1, kMatRowGroup, true>(set, rl, chunks, x, s);
  if (grouped && !gated) launch_rows<BITS, 1, kMatRowGroup>(set, rl, chunks, x, s);
  if (!grouped && gated) launch_rows<BITS, 1, 1, true>(set, lanes, chunks, x, s);
  if (!grouped && !gated) launch_rows<BITS, 1, 1>(set, lanes, chunks, x, s);
}

}  // namespace

cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, float* y, cudaStream_t s) {
  QMatSet set{};
  set.a[0] = a, set.y[0] = y, set.count = 1;
  return launch_qmatmul_set(set, x, s);
}

cudaError_t launch_qmatmul_set(const QMatSet& set, const float* x, cudaStream_t s) {
  const QMatArgs& a = set.a[0];  // the set shares cols, bits, n and mode
  int64_t rows = 0;
  for (int i = 0; i < set.count; ++i) rows += set.a[i].rows;
  if (a.n <= 0 || rows <= 0) return cudaSuccess;
  const bool by_matrix = a.order != nullptr;  // tiles of one matrix's rows (route-sort.cuh)
  const auto chunks = static_cast<uint32_t>(by_matrix ? a.max_tiles
                                            : a.ids   ? a.n
                                                      : (a.n + kMatTokens - 1) / kMatTokens);  // a.n == 1: one
  // Lanes per row: each lane two or more 16-byte loads where the row allows (4 and 8 bits).
  const int64_t steps = a.bits == 4 || a.bits == 8 ? a.cols * a.bits / 128 : 64;
  const int lanes = steps >= 64 ? 32 : steps >= 32 ? 16 : 8;
  const bool one = (a.ids != nullptr && !by_matrix) || a.n == 1;
  // Row groups (one lane reads x once for R rows) where they still leave ~1.5 waves of blocks:
  // fewer blocks than SMs starve small matrices (an H200's 512-row k projection: 3.8 → 6.8 us).
  const int rl = steps >= 32 ? 32 : steps >= 16 ? 16 : 8;
  const int64_t per_block = kMatWarps * (32 / rl) * kMatRowGroup;
  const int64_t blocks = (rows + per_block - 1) / per_block * chunks;
  const bool grouped = one && blocks >= std::max(2, 3 * device_info().sms / 2);
  const bool gated = a.up != nullptr;
  if (one && (a.bits == 4 || a.bits == 8)) {
    if (a.bits == 4) launch_one<4>(set, grouped, gated, rl, lanes, chunks, x, s);
    else launch_one<8>(set, grouped, gated, rl, lanes, chunks, x, s);
  } else if (gated) {
    return cudaErrorInvalidValue;  // the gate is read only by one-token 4 and 8-bit products
  } else if (a.bits == 4) {
    launch_rows<4, kMatTokens, 1>(set, lanes, chunks, x, s);
  } else if (a.bits == 8) {
    launch_rows<8, kMatTokens, 1>(set, lanes, chunks, x, s);
  } else {
    launch_rows<0, kMatTokens, 1>(set, lanes, chunks, x, s);
  }
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
