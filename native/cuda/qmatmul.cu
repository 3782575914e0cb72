#include "cuda/qmatmul.cuh"

#include "cuda/device-math.cuh"

namespace bs::BS_CUDA_NS {

namespace {

// L lanes per output row (32, 16 or 8: rows per warp = 32 / L), partial sums joined by an
// L-lane reduction. Plain mode shares each weight load across up to kMatTokens tokens (grid.y =
// token chunks); gathered mode runs one row of work per grid.y. Where the row's codes and x are
// 16-byte aligned (always for buffers the engine allocates), a lane loads four words at once
// (32 4-bit or 16 8-bit columns: never across a group of ≥ 32 columns) with one scale and bias,
// two such loads in flight, x as float4; L is picked so short rows still give each lane two loads.
template <int BITS>
__device__ __forceinline__ void dot_words(const uint4& v, const float4* __restrict__ xv, float& dot, float& sum) {
  constexpr int kPer = 32 / BITS;  // columns per word
  constexpr uint32_t kMask = (1u << BITS) - 1u;
  const uint32_t q[4] = {v.x, v.y, v.z, v.w};
  for (int k = 0; k < 4; ++k) {
    for (int e4 = 0; e4 < kPer / 4; ++e4) {
      const float4 c = xv[k * (kPer / 4) + e4];
      const uint32_t w = q[k] >> (e4 * 4 * BITS);
      dot += static_cast<float>(w & kMask) * c.x + static_cast<float>((w >> BITS) & kMask) * c.y +
             static_cast<float>((w >> (2 * BITS)) & kMask) * c.z + static_cast<float>((w >> (3 * BITS)) & kMask) * c.w;
      sum += (c.x + c.y) + (c.z + c.w);
    }
  }
}

// T: tokens sharing a weight load (1 for decode and gathered rows, kMatTokens for prefill chunks),
// a compile-time bound so the sums stay in registers.
template <int BITS, int T>
__global__ void qmatmul_kernel(QMatArgs a, int lanes, const float* __restrict__ x, float* __restrict__ y) {
  const int lane = threadIdx.x & (lanes - 1);
  const int64_t row =
      (static_cast<int64_t>(blockIdx.x) * kMatWarps + (threadIdx.x >> 5)) * (32 / lanes) + ((threadIdx.x & 31) / lanes);
  const bool live = row < a.rows;  // dead lanes stay for the shuffles and add zeros
  const bool gather = a.ids != nullptr;
  const int64_t i0 = gather ? blockIdx.y : static_cast<int64_t>(blockIdx.y) * T;
  const int64_t left = a.n - i0;
  const int count = gather ? 1 : static_cast<int>(left < T ? left : T);
  int64_t mat = a.mat;
  if (gather) mat = a.slots ? a.slots[a.ids[i0]] : a.ids[i0];
  const int64_t xrow = gather ? i0 / a.x_div : i0;
  const int64_t words = a.cols * a.bits / 32, groups = a.cols / a.group;
  const int gshift = __ffs(a.group) - 1;  // groups are powers of two
  const uint8_t* codes = a.parts ? a.parts[3 * mat] : a.codes;
  const uint8_t* scales = a.parts ? a.parts[3 * mat + 1] : a.scales;
  const uint8_t* biases = a.parts ? a.parts[3 * mat + 2] : a.biases;
  const int64_t base = a.parts ? row : mat * a.rows + row;
  const uint32_t* w = reinterpret_cast<const uint32_t*>(codes) + base * words;
  float acc[T];
  for (int t = 0; t < T; ++t) acc[t] = 0.0f;
  const bool vec = BITS != 0 && ((reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x)) & 15) == 0;
  if constexpr (BITS != 0) {
    if (vec && live) {
      const uint4* w4 = reinterpret_cast<const uint4*>(w);
      const int64_t steps = words / 4;
      auto step = [&](const uint4& v, int64_t si) {
        const int64_t c0 = si * 4 * (32 / BITS);
        const int64_t g = base * groups + (c0 >> gshift);
        const float s = load_elem(scales, a.scale_type, g), b = load_elem(biases, a.scale_type, g);
        for (int t = 0; t < T; ++t) {
          if (t >= count) break;
          float dot = 0.0f, sum = 0.0f;
          dot_words<BITS>(v, reinterpret_cast<const float4*>(x + (xrow + t) * a.cols + c0), dot, sum);
          acc[t] += s * dot + b * sum;  // Σ (s·q + b)·x = s·Σq·x + b·Σx
        }
      };
      for (int64_t si = lane; si < steps; si += 2 * lanes) {
        const bool two = si + lanes < steps;
        const uint4 v0 = __ldg(w4 + si);
        const uint4 v1 = two ? __ldg(w4 + si + lanes) : v0;
        step(v0, si);
        if (two) step(v1, si + lanes);
      }
    }
  }
  if (!vec && live) {
    const int per_word = 32 / a.bits;
    const uint32_t mask = (1u << a.bits) - 1u;
    for (int64_t wi = lane; wi < words; wi += lanes) {
      const uint32_t word = w[wi];
      const int64_t c0 = wi * per_word;
      const int64_t g = base * groups + (c0 >> gshift);  // a word never straddles groups (group ≥ 32)
      const float s = load_elem(scales, a.scale_type, g), b = load_elem(biases, a.scale_type, g);
      for (int t = 0; t < T; ++t) {
        if (t >= count) break;
        const float* xt = x + (xrow + t) * a.cols + c0;
        float dot = 0.0f, sum = 0.0f;
        for (int e = 0; e < per_word; ++e) {
          dot += static_cast<float>((word >> (e * a.bits)) & mask) * xt[e];
          sum += xt[e];
        }
        acc[t] += s * dot + b * sum;
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    if (t >= count) break;  // count is the same for every lane of the block
    const float total = warp_sum(acc[t], lanes);
    if (lane == 0 && live) y[(i0 + t) * a.rows + row] = total;
  }
}

}  // namespace

cudaError_t launch_qmatmul(const QMatArgs& a, const float* x, float* y, cudaStream_t s) {
  if (a.n <= 0 || a.rows <= 0) return cudaSuccess;
  const int64_t chunks = a.ids ? a.n : (a.n + kMatTokens - 1) / kMatTokens;  // a.n == 1: one chunk
  // Lanes per row: each lane two or more 16-byte loads where the row allows (4 and 8 bits).
  const int64_t steps = a.bits == 4 || a.bits == 8 ? a.cols * a.bits / 128 : 64;
  const int lanes = steps >= 64 ? 32 : steps >= 32 ? 16 : 8;
  const int64_t rows_per_block = kMatWarps * (32 / lanes);
  const dim3 grid(static_cast<uint32_t>((a.rows + rows_per_block - 1) / rows_per_block), static_cast<uint32_t>(chunks));
  const bool one = a.ids != nullptr || a.n == 1;
  const uint32_t block = kMatWarps * 32;
  if (a.bits == 4 && one) {
    BS_LAUNCH((qmatmul_kernel<4, 1>), grid, block, s)(a, lanes, x, y);
  } else if (a.bits == 4) {
    BS_LAUNCH((qmatmul_kernel<4, kMatTokens>), grid, block, s)(a, lanes, x, y);
  } else if (a.bits == 8 && one) {
    BS_LAUNCH((qmatmul_kernel<8, 1>), grid, block, s)(a, lanes, x, y);
  } else if (a.bits == 8) {
    BS_LAUNCH((qmatmul_kernel<8, kMatTokens>), grid, block, s)(a, lanes, x, y);
  } else {
    BS_LAUNCH((qmatmul_kernel<0, kMatTokens>), grid, block, s)(a, lanes, x, y);
  }
  return cudaGetLastError();
}

}  // namespace bs::BS_CUDA_NS
