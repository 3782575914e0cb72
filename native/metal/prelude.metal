// Helpers every kernel uses. The host compiles params.h, this file and the kernel files as one
// source; on Linux, msl-shim.h compiles the same files as C++ (no metal_stdlib there).
#ifdef __METAL_VERSION__
#include <metal_stdlib>
using namespace metal;
// A helper's pointer into its kernel's threadgroup memory (the shim's `threadgroup` declares
// statics, which a parameter cannot be; so does the dialect check's, which defines its own).
#ifndef BS_TG_PTR
#define BS_TG_PTR threadgroup
#endif
#else
#define BS_TG_PTR
#endif

// Element i of a float-typed buffer (F32, F16 or BF16) starting `off` bytes into p.
inline float bs_load(device const uchar* p, uint off, uint type, uint i) {
  if (type == BS_T_F32) return ((device const float*)(p + off))[i];
  const ushort h = ((device const ushort*)(p + off))[i];
  return type == BS_T_F16 ? float(as_type<half>(h)) : as_type<float>(uint(h) << 16);
}

// erf by Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5e-7): Metal's standard library has none.
inline float bs_erf(float x) {
  const float a = fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.0f - poly * exp(-a * a);
  return x < 0.0f ? -y : y;
}

// SiLU(g)·u, as bs_silu_mul writes it and a gated bs_qmatmul reads its x.
inline float bs_silu_gate(float g, float u) { return g / (1.0f + exp(-g)) * u; }

inline float bs_gelu_erf(float x) { return 0.5f * x * (1.0f + bs_erf(x * 0.70710678118654752f)); }

// The larger of two (value, index) candidates: ties go to the lower index (the routing order).
inline bool bs_better(float v, uint i, float best_v, uint best_i) { return v > best_v || (v == best_v && i < best_i); }

// Across the simdgroup: the best (value, index) of every lane's candidate; all lanes get it.
inline uint bs_simd_argmax(float v, uint i, thread float& best_v) {
  best_v = simd_max(v);
  return simd_min(v == best_v ? i : 0xffffffffu);
}
