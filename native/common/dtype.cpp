#include "common/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace bs {

namespace {
struct Entry {
  DType t;
  const char* name;
  size_t size;
};
constexpr Entry kTypes[] = {
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1},           {DType::I8, "I8", 1},           {DType::U16, "U16", 2},
    {DType::I16, "I16", 2},   {DType::F16, "F16", 2},         {DType::BF16, "BF16", 2},       {DType::U32, "U32", 4},
    {DType::I32, "I32", 4},   {DType::F32, "F32", 4},         {DType::U64, "U64", 8},         {DType::I64, "I64", 8},
    {DType::F64, "F64", 8},   {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
};
}  // namespace

namespace {
// Words of W whose exponent bits (mask) are all set, in blocks of 512: a full block's test has
// no early exit, so it vectorises (a model's first use scans ~2 GB of scales on 35B); only a
// block that holds one is searched word by word.
template <class W>
int64_t first_all_ones(const uint8_t* p, size_t n, W mask) {
  constexpr size_t kBlock = 512;
  auto at = [&](size_t i) {
    W w;
    std::memcpy(&w, p + sizeof(W) * i, sizeof(W));
    return (w & mask) == mask;
  };
  for (size_t b = 0; b < n; b += kBlock) {
    if (n - b >= kBlock) {
      unsigned any = 0;
      for (size_t i = 0; i < kBlock; ++i) any |= at(b + i);
      if (!any) continue;
    }
    for (size_t i = b; i < std::min(n, b + kBlock); ++i) {
      if (at(i)) return static_cast<int64_t>(i);
    }
  }
  return -1;
}
}  // namespace

int64_t first_non_finite(const uint8_t* p, DType t, size_t n) {
  // Non-finite exactly when every exponent bit is set (the bits are tested, no conversion).
  if (t == DType::F32) return first_all_ones<uint32_t>(p, n, 0x7f800000u);
  if (t == DType::F16) return first_all_ones<uint16_t>(p, n, 0x7c00);
  if (t == DType::BF16) return first_all_ones<uint16_t>(p, n, 0x7f80);
  return -1;
}

size_t dtype_size(DType t) { return kTypes[static_cast<int>(t)].size; }
const char* dtype_name(DType t) { return kTypes[static_cast<int>(t)].name; }

bool parse_dtype(std::string_view s, DType& out) {
  for (const Entry& e : kTypes) {
    if (s == e.name) {
      out = e.t;
      return true;
    }
  }
  return false;
}

const char* dtype_list() { return "BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2"; }

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t f32_to_f16(float f) {
  // Round to nearest even on the bits (the F16 KV cache writes 2 × kv_dim values per layer and
  // token: frexp/ldexp/nearbyint took ~20 µs a layer). Tested against an explicit rounding of
  // the value over sampled bit patterns and every boundary.
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u >= 0x47800000u) return sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u);  // ≥ 2^16, inf, NaN
  if (u < 0x38800000u) {
    // Below 2^-14 (subnormal or zero): adding 0.5f leaves m·2^-24 in the low mantissa bits,
    // rounded to nearest even by the float addition itself.
    float a;
    std::memcpy(&a, &u, 4);
    a += 0.5f;
    std::memcpy(&u, &a, 4);
    return sign | static_cast<uint16_t>(u - 0x3f000000u);
  }
  // Normal: rebias the exponent, add half an f16 ulp minus one plus the kept bit's parity
  // (ties to even); a carry moves into the exponent, up to infinity at 65520.
  u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u);
  return sign | static_cast<uint16_t>(u >> 13);
}

}  // namespace bs
