// Element types of safetensors files and the float conversions the kernels need.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace bs {

static_assert(sizeof(float) == 4, "float must be IEEE binary32");

enum class DType : uint8_t { BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2 };

// Bytes per element.
size_t dtype_size(DType t);
// The safetensors spelling ("BF16", "U32", ...).
const char* dtype_name(DType t);
// Parses a safetensors dtype string; false when unknown.
bool parse_dtype(std::string_view s, DType& out);
// The accepted spellings, comma separated (for error messages).
const char* dtype_list();
// True for F16, BF16 and F32: the types weights, scales and norms may have.
inline bool is_float_weight(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Index of the first NaN or ±Inf among n elements of a float buffer (F16, BF16, F32), or -1;
// -1 for every other dtype (integer codes have no non-finite values).
int64_t first_non_finite(const uint8_t* p, DType t, size_t n);

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Reads element i of a float-typed buffer (F16, BF16 or F32); unaligned pointers are fine.
inline float load_float(const uint8_t* p, DType t, size_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

}  // namespace bs
