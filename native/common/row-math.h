// Float row kernels of the linear-attention layers (Gated DeltaNet's delta rule): dot products,
// the decode row update and the chunked form's blocked sums, on four-float SIMD registers
// through the GCC/Clang vector extension (SSE on x86-64, NEON on arm64). Every sum runs in
// a fixed order, so results do not depend on the vector width or the compiler.
#pragma once
#include <cstdint>
#include <cstring>

namespace bs::rows {

// Four floats, loaded and stored unaligned. Accumulators are named values: GCC keeps an array
// of them in memory.
typedef float f32x4 __attribute__((vector_size(16)));
inline f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }

// Partial sums lanes 0–3 (lo) and 4–7 (hi) plus a scalar tail, summed as dot() sums them.
inline float sum8(f32x4 lo, f32x4 hi, const float* a, const float* b, int64_t i, int64_t n) {
  if (i == n) {
    const f32x4 v = lo + hi;  // (p0 + p4, p1 + p5, p2 + p6, p3 + p7)
    return (v[0] + v[1]) + (v[2] + v[3]);
  }
  float p[8];
  store4(p, lo);
  store4(p + 4, hi);
  for (; i < n; ++i) p[i % 8] += a[i] * b[i];
  return ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
}

// Eight partial sums (lanes i mod 8), added pairwise at the end: independent chains where one
// running sum is a chain of n dependent adds.
inline float dot(const float* a, const float* b, int64_t n) {
  f32x4 lo = {}, hi = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lo += load4(a + i) * load4(b + i);
    hi += load4(a + i + 4) * load4(b + i + 4);
  }
  return sum8(lo, hi, a, b, i, n);
}

// row ← a·row + d·k, returning the new row's dot with q, in one pass (summed as dot sums it).
inline float decay_update_dot(float* row, float a, float d, const float* k, const float* q, int64_t n) {
  f32x4 lo = {}, hi = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const f32x4 r0 = load4(row + i) * a + load4(k + i) * d, r1 = load4(row + i + 4) * a + load4(k + i + 4) * d;
    store4(row + i, r0);
    store4(row + i + 4, r1);
    lo += r0 * load4(q + i);
    hi += r1 * load4(q + i + 4);
  }
  for (int64_t t = i; t < n; ++t) row[t] = a * row[t] + d * k[t];
  return sum8(lo, hi, row, q, i, n);
}

// dot(r0, a), dot(r0, b), dot(r1, a), dot(r1, b), each summed exactly as dot() sums it, in one
// pass: four independent sets of partial sums where one dot is a chain of adds.
inline void dots_2x2(const float* r0, const float* r1, const float* a, const float* b, int64_t n, float* out) {
  f32x4 p[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const f32x4 a0 = load4(a + i), a1 = load4(a + i + 4), b0 = load4(b + i), b1 = load4(b + i + 4);
    const f32x4 x0 = load4(r0 + i), x1 = load4(r0 + i + 4), z0 = load4(r1 + i), z1 = load4(r1 + i + 4);
    p[0] += x0 * a0;
    p[1] += x1 * a1;
    p[2] += x0 * b0;
    p[3] += x1 * b1;
    p[4] += z0 * a0;
    p[5] += z1 * a1;
    p[6] += z0 * b0;
    p[7] += z1 * b1;
  }
  out[0] = sum8(p[0], p[1], r0, a, i, n);
  out[1] = sum8(p[2], p[3], r0, b, i, n);
  out[2] = sum8(p[4], p[5], r1, a, i, n);
  out[3] = sum8(p[6], p[7], r1, b, i, n);
}

// y[e] = y[e]·s + Σ_j c[j]·x_j[e] over j < m in order (x_j = x + j·stride), e < n: 32 outputs
// held in registers across the sum (eight chains of adds), where an axpy per j reloads and
// stores all of y.
inline void scale_add_rows(float* y, float s, const float* c, const float* x, int64_t stride, int64_t m, int64_t n) {
  int64_t e = 0;
  for (; e + 32 <= n; e += 32) {
    // Named accumulators: GCC keeps an f32x4 array of them in memory.
    f32x4 a0 = load4(y + e) * s, a1 = load4(y + e + 4) * s, a2 = load4(y + e + 8) * s, a3 = load4(y + e + 12) * s;
    f32x4 a4 = load4(y + e + 16) * s, a5 = load4(y + e + 20) * s, a6 = load4(y + e + 24) * s,
          a7 = load4(y + e + 28) * s;
    for (int64_t j = 0; j < m; ++j) {
      const float* xj = x + j * stride + e;
      const float cj = c[j];
      a0 += cj * load4(xj);
      a1 += cj * load4(xj + 4);
      a2 += cj * load4(xj + 8);
      a3 += cj * load4(xj + 12);
      a4 += cj * load4(xj + 16);
      a5 += cj * load4(xj + 20);
      a6 += cj * load4(xj + 24);
      a7 += cj * load4(xj + 28);
    }
    const f32x4 out[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    for (int l = 0; l < 8; ++l) store4(y + e + 4 * l, out[l]);
  }
  for (; e < n; ++e) {
    float acc = y[e] * s;
    for (int64_t j = 0; j < m; ++j) acc += c[j] * x[j * stride + e];
    y[e] = acc;
  }
}

}  // namespace bs::rows
