// Safetensors header validation on in-memory images: the valid layout and each malformed one;
// the float conversions and the non-finite scan.
#include <cstring>

#include "common/dtype.h"
#include "common/error.h"
#include "common/safetensors.h"
#include "fixtures.h"

using bs::SafetensorsFile;

namespace {
std::unique_ptr<SafetensorsFile> parse(const std::vector<uint8_t>& img) {
  return SafetensorsFile::parse(img.data(), img.size(), "m.safetensors");
}
}  // namespace

TEST(safetensors_reads_tensors_in_place) {
  std::vector<uint8_t> data(24);
  const float f[2] = {1.5f, -2.0f};
  std::memcpy(data.data(), f, 8);
  const uint32_t u[4] = {1, 2, 3, 0xffffffffu};
  std::memcpy(data.data() + 8, u, 16);
  const auto img = bt::safetensors_image(
      R"({"__metadata__": {"format": "mlx"}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "b": {"dtype": "U32", "shape": [2, 2], "data_offsets": [8, 24]}, "e": {"dtype": "BF16", "shape": [0, 3], "data_offsets": [24, 24]}})",
      data);
  auto f1 = parse(img);
  EXPECT(f1->tensors().size() == 3u);
  EXPECT(f1->metadata().size() == 1u && f1->metadata()[0].second == "mlx");
  const bs::TensorInfo& a = f1->tensors()[0];
  EXPECT(a.name == "a" && a.dtype == bs::DType::F32 && a.numel() == 2 && a.nbytes == 8u);
  EXPECT(bs::load_float(a.data, a.dtype, 1) == -2.0f);
  EXPECT(a.data == img.data() + 8 + (img.size() - 8 - 24)) << "points into the image, not a copy";
  EXPECT(f1->tensors()[1].shape_str() == "[2, 2]");
  EXPECT(f1->tensors()[2].nbytes == 0u);
}

TEST(safetensors_rejects_each_malformation) {
  const std::vector<uint8_t> d16(16);
  const auto img = [&](const std::string& h) { return bt::safetensors_image(h, d16); };
  const std::string ok = R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";

  auto truncated = img(ok);
  truncated.resize(truncated.size() - 4);
  EXPECT_ERROR(parse(truncated), "tensor t: data_offsets [0, 16] run past the data section (12 bytes)");
  EXPECT_ERROR(parse(std::vector<uint8_t>(5)), "file is 5 bytes, too short");
  std::vector<uint8_t> long_header = img(ok);
  long_header[0] = 0xff;
  long_header[1] = 0xff;
  EXPECT_ERROR(parse(long_header), "header length 65535 runs past the end of the file");
  EXPECT_ERROR(parse(img("  {}")), "header does not start with a JSON object");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},})")), "invalid JSON");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}})")), "unknown dtype \"Q4\"");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [5], "data_offsets": [0, 16]}})")),
               "shape [5] of F32 needs 20 bytes but data_offsets [0, 16] hold 16");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})")),
               "shape[0] must be a non-negative integer");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})")),
               "run past the data section");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})")), "end before begin");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})")),
               "data_offsets must be [begin, end]");
  EXPECT_ERROR(
      parse(img(
          R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})")),
      "tensors a and b overlap");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4]}})")), "needs dtype, shape and data_offsets");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16], "x": 1}})")),
               "unexpected field \"x\"");
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 16]}})")),
               "hold 16");
  // 2^61 + 1 elements of 8 bytes wrap to 8 bytes in 64 bits: the dtype counts in the overflow check.
  EXPECT_ERROR(parse(img(R"({"t": {"dtype": "F64", "shape": [2305843009213693953], "data_offsets": [0, 8]}})")),
               "shape [2305843009213693953] of F64 needs more than 2^62 bytes but data_offsets [0, 8] hold 8");
  const auto zero =
      parse(img(R"({"t": {"dtype": "F64", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 0]}})"));
  EXPECT(zero->tensors()[0].nbytes == 0u) << "a zero dimension holds no bytes, however large the others";
  EXPECT_ERROR(parse(img(R"({"__metadata__": {"a": 1}})")), "__metadata__.a must be a string");
}

TEST(safetensors_random_corruption_never_crashes) {
  // Flip bytes of a valid image at seeded positions: every outcome is a parse or a bs::Error.
  const auto base = bt::safetensors_image(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "U8", "shape": [8], "data_offsets": [8, 16]}})",
      std::vector<uint8_t>(16, 7));
  bt::Rng r(42);
  for (int c = 0; c < 2000; ++c) {
    auto img = base;
    const int flips = 1 + static_cast<int>(r.below(4));
    for (int i = 0; i < flips; ++i) img[r.below(static_cast<int64_t>(img.size()))] = static_cast<uint8_t>(r.next());
    if (r.below(4) == 0) img.resize(r.below(static_cast<int64_t>(img.size())));
    try {
      auto f = parse(img);
      for (const bs::TensorInfo& ti : f->tensors()) {
        EXPECT(ti.data + ti.nbytes <= img.data() + img.size()) << "case " << c << " tensor " << ti.name;
      }
    } catch (const bs::Error&) {
    }
  }
}

namespace {

// f32 → f16 written out on the value: the significand rounded to 11 bits (nearest even) by
// nearbyint, subnormals as multiples of 2^-24, overflow from 65520 (the halfway point to 2^16).
uint16_t f16_oracle(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00u;
  if (a >= 65520.0f) return sign | 0x7c00u;
  if (a < std::ldexp(1.0f, -14)) return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  int e;
  const float m = std::frexp(a, &e);
  uint32_t mant = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  int exp = e - 1 + 15;
  if (mant == 2048) {
    mant = 1024;
    exp += 1;
  }
  if (exp >= 31) return sign | 0x7c00u;
  return sign | static_cast<uint16_t>((exp << 10) | (mant & 0x3ffu));
}

}  // namespace

TEST(f32_to_f16_matches_the_explicit_rounding) {
  int wrong = 0;
  auto check = [&](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    const uint16_t got = bs::f32_to_f16(f), want = f16_oracle(f);
    // NaN payloads aside, the bits must agree.
    if (got != want && !(std::isnan(f) && (got & 0x7fffu) == 0x7e00u) && wrong++ < 10) {
      EXPECT(false) << "f32 bits 0x" << std::hex << bits << ": got 0x" << got << " want 0x" << want;
    }
  };
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) check(static_cast<uint32_t>(b));  // ~1M patterns, both signs
  // Every pattern near the edges: overflow (65504..2^16), the normal/subnormal boundary, the
  // smallest subnormal and half of it, 1.0, and infinity/NaN.
  const uint32_t edges[] = {0x477fe000u, 0x38800000u, 0x33800000u, 0x33000000u, 0x3f800000u, 0x7f800000u, 0u};
  for (uint32_t e : edges) {
    for (uint32_t d = 0; d < 0x4000u; ++d) {
      for (uint32_t s : {0u, 0x80000000u}) {
        check(s | (e + d));
        if (e >= d) check(s | (e - d));
      }
    }
  }
  // Ties: the 13 dropped bits exactly half an ulp, odd and even kept bits, across exponents.
  for (uint32_t exp = 103; exp < 143; ++exp) {
    for (uint32_t m = 0; m < 0x400u; m += 7) check((exp << 23) | (m << 13) | 0x1000u);
  }
}

TEST(float_conversions_round_trip) {
  const float vals[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.1f, 3.14159f};
  for (float v : vals) {
    const float h = bs::f16_to_f32(bs::f32_to_f16(v));
    EXPECT(std::fabs(h - v) <= std::fabs(v) * 0x1p-11) << v << " -> " << h;
    const float b = bs::bf16_to_f32(bs::f32_to_bf16(v));
    EXPECT(std::fabs(b - v) <= std::fabs(v) * 0x1p-8) << v << " -> " << b;
  }
  EXPECT(bs::f32_to_f16(1.0f) == 0x3c00);
  EXPECT(bs::f32_to_f16(-2.0f) == 0xc000);
  EXPECT(bs::f32_to_bf16(1.0f) == 0x3f80);
  EXPECT(bs::f16_to_f32(0x0001) == 5.9604645e-08f);
  EXPECT(std::isinf(bs::f16_to_f32(bs::f32_to_f16(1e6f))));
  // Every finite f16 survives f16 → f32 → f16 exactly.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;
    EXPECT(bs::f32_to_f16(bs::f16_to_f32(static_cast<uint16_t>(h))) == h) << "f16 bits " << h;
  }
}

TEST(first_non_finite_finds_the_first_all_ones_exponent) {
  // By hand: the largest finite values pass; Inf and NaN are found at block edges (512 words).
  std::vector<uint16_t> h(1500, 0x7bff);  // f16 max
  auto f16_at = [&]() {
    return bs::first_non_finite(reinterpret_cast<const uint8_t*>(h.data()), bs::DType::F16, h.size());
  };
  EXPECT(f16_at() == -1);
  for (size_t at : {size_t(1499), size_t(1000), size_t(512), size_t(511), size_t(0)}) {
    h[at] = at % 2 ? 0x7c00 : 0xfe01;  // +Inf, a negative NaN
    EXPECT(f16_at() == static_cast<int64_t>(at)) << "f16 at " << at << ": " << f16_at();
  }
  const std::vector<uint16_t> bf = {0x7f7f, 0xff7f, 0x0001, 0x7f80};  // bf16 ±max, a subnormal, Inf
  EXPECT(bs::first_non_finite(reinterpret_cast<const uint8_t*>(bf.data()), bs::DType::BF16, 4) == 3);
  EXPECT(bs::first_non_finite(reinterpret_cast<const uint8_t*>(bf.data()), bs::DType::BF16, 3) == -1);
  // The same bits as F16: 0x7f7f has every f16 exponent bit set.
  EXPECT(bs::first_non_finite(reinterpret_cast<const uint8_t*>(bf.data()), bs::DType::F16, 4) == 0);
  const std::vector<uint32_t> f32 = {0x7f7fffffu, 0x00000001u, 0xff800000u};
  EXPECT(bs::first_non_finite(reinterpret_cast<const uint8_t*>(f32.data()), bs::DType::F32, 3) == 2);
  EXPECT(bs::first_non_finite(reinterpret_cast<const uint8_t*>(f32.data()), bs::DType::I32, 3) == -1);
  // Seeded: random finite words of each float type with one non-finite word at a random place.
  bt::Rng rng(11);
  for (int c = 0; c < 200; ++c) {
    const bool wide = c % 3 == 0;
    const bs::DType dt = wide ? bs::DType::F32 : c % 3 == 1 ? bs::DType::F16 : bs::DType::BF16;
    const uint32_t mask = wide ? 0x7f800000u : dt == bs::DType::F16 ? 0x7c00u : 0x7f80u;
    const size_t n = 1 + static_cast<size_t>(rng.below(3000));
    const int64_t want = rng.below(4) == 0 ? -1 : rng.below(static_cast<int64_t>(n));
    std::vector<uint32_t> w(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t x = static_cast<uint32_t>(rng.next());
      if (!wide) x &= 0xffffu;
      if ((x & mask) == mask) x &= ~(mask & ~(mask >> 1));  // clear the exponent's top bit
      w[i] = x;
    }
    if (want >= 0) w[want] |= mask;
    std::vector<uint8_t> bytes(n * (wide ? 4 : 2));
    for (size_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * (wide ? 4 : 2), &w[i], wide ? 4 : 2);
    const int64_t got = bs::first_non_finite(bytes.data(), dt, n);
    EXPECT(got == want) << bs::dtype_name(dt) << " case " << c << " n " << n << ": want " << want << ", got " << got;
  }
}
