// MLX affine dequantisation: hand-computed cases (LSB-first codes, negative scales, group
// boundaries) and the quantization config with per-module overrides.
#include <cstring>

#include "common/error.h"
#include "common/json.h"
#include "common/quant.h"
#include "fixtures.h"

using bs::DType;

TEST(dequant_4bit_hand_computed) {
  // One row of 32 inputs, group 32. Word 0 = 0x76543210 holds codes 0..7 LSB-first;
  // word 1 = 0xfedcba98 holds 8..15; words 2,3 = 0x0000000f: code 15 then zeros.
  bt::OwnedMatrix o;
  o.w.resize(16);
  const uint32_t words[4] = {0x76543210u, 0xfedcba98u, 0x0000000fu, 0x0000000fu};
  std::memcpy(o.w.data(), words, 16);
  o.scales.resize(2);
  o.biases.resize(2);
  bt::store_float(o.scales.data(), DType::BF16, 0, -0.5f);  // negative scale
  bt::store_float(o.biases.data(), DType::BF16, 0, 2.0f);
  bs::WeightMatrix& m = o.m;
  m = {bs::WFormat::Affine, DType::BF16, 4, 32, 1, 1, 32, o.w.data(), o.scales.data(), o.biases.data()};
  for (int c = 0; c < 16; ++c) {
    EXPECT(bs::q_code(m, 0, 0, c) == static_cast<uint32_t>(c)) << "col " << c;
    EXPECT(bs::dequant(m, 0, 0, c) == -0.5f * c + 2.0f) << "col " << c;
  }
  EXPECT(bs::q_code(m, 0, 0, 16) == 15u && bs::q_code(m, 0, 0, 17) == 0u);
  EXPECT(bs::dequant(m, 0, 0, 16) == -5.5f);
  EXPECT(bs::dequant(m, 0, 0, 24) == -5.5f && bs::dequant(m, 0, 0, 31) == 2.0f);
  // Byte view: byte b holds elements 2b (low nibble) and 2b+1 (high nibble).
  EXPECT(o.w[0] == 0x10 && o.w[1] == 0x32);
}

TEST(dequant_8bit_and_group_boundaries) {
  // Two rows × 64 inputs, group 32, F16 scales: row r, col c has code (c + r) % 256.
  bt::OwnedMatrix o;
  bs::WeightMatrix& m = o.m;
  m = {bs::WFormat::Affine, DType::F16, 8, 32, 1, 2, 64, nullptr, nullptr, nullptr};
  o.w.resize(2 * 64);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 64; ++c) o.w[r * 64 + c] = static_cast<uint8_t>(c * 3 + r);
  o.scales.resize(8);
  o.biases.resize(8);
  const float sc[4] = {0.25f, -1.0f, 2.0f, -0.125f}, bi[4] = {1.0f, 0.0f, -3.0f, 0.5f};
  for (int g = 0; g < 4; ++g) {
    bt::store_float(o.scales.data(), DType::F16, g, sc[g]);
    bt::store_float(o.biases.data(), DType::F16, g, bi[g]);
  }
  m.w = o.w.data();
  m.scales = o.scales.data();
  m.biases = o.biases.data();
  EXPECT(bs::dequant(m, 0, 0, 31) == 0.25f * 93 + 1.0f);
  EXPECT(bs::dequant(m, 0, 0, 32) == -1.0f * 96);
  EXPECT(bs::dequant(m, 0, 1, 0) == 2.0f * 1 - 3.0f);
  EXPECT(bs::dequant(m, 0, 1, 63) == -0.125f * static_cast<float>((63 * 3 + 1) % 256) + 0.5f);
}

TEST(dequant_row_matches_element_spec) {
  bt::Rng r(7);
  for (int bits : {4, 8}) {
    for (int group : {32, 64, 128}) {
      for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
        auto o = bt::random_affine(r, 3, 5, group * 3, bits, group, dt);
        std::vector<float> row(o.m.cols);
        for (int64_t mat = 0; mat < 3; ++mat) {
          for (int64_t rr = 0; rr < 5; ++rr) {
            bs::dequant_row(o.m, mat, rr, row.data());
            for (int64_t c = 0; c < o.m.cols; ++c) {
              EXPECT(row[c] == bs::dequant(o.m, mat, rr, c))
                  << "bits " << bits << " group " << group << " mat " << mat << " row " << rr << " col " << c;
            }
          }
        }
      }
    }
  }
  EXPECT(bt::random_affine(r, 1, 4, 64, 4, 64, DType::BF16).m.mat_bytes() == 4u * 32 + 2 * 4 * 2)
      << "4 rows × 64 inputs at 4 bits = 128 B of codes + 2 × 4 scales/biases of 2 B";
}

TEST(quant_config_overrides_and_errors) {
  const bs::Json cfg = bs::Json::parse(
      R"({"quantization": {"group_size": 64, "bits": 4, "mode": "affine",
          "model.layers.0.mlp.gate": {"group_size": 64, "bits": 8}, "lm_head": false},
          "quantization_config": {"group_size": 32, "bits": 8}})",
      "c");
  const bs::QuantConfig q = bs::QuantConfig::from_config(cfg, "config.json");
  EXPECT(q.for_module("model.layers.0.mlp.gate")->bits == 8);
  EXPECT(q.for_module("model.layers.1.mlp.gate")->bits == 4);
  EXPECT(q.for_module("model.layers.1.mlp.gate")->group == 64) << "quantization wins over quantization_config";
  EXPECT(!q.for_module("lm_head").has_value());
  const bs::QuantConfig fallback = bs::QuantConfig::from_config(
      bs::Json::parse(R"({"quantization_config": {"group_size": 32, "bits": 8}})", "c"), "c");
  EXPECT(fallback.for_module("x")->group == 32);
  EXPECT(!bs::QuantConfig::from_config(bs::Json::parse("{}", "c"), "c").present());

  const auto bad = [](const char* text) {
    return bs::QuantConfig::from_config(bs::Json::parse(text, "c"), "config.json");
  };
  EXPECT_ERROR(bad(R"({"quantization": {"group_size": 64, "bits": 3}})"),
               "config.json: quantization.bits must be 4 or 8 (MLX affine quantisation this engine runs), got 3");
  EXPECT_ERROR(bad(R"({"quantization": {"group_size": 48, "bits": 4}})"), "group_size must be 32, 64 or 128, got 48");
  EXPECT_ERROR(bad(R"({"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}})"), "mode must be \"affine\"");
  EXPECT_ERROR(bad(R"({"quantization": {"group_size": 64, "bits": 4, "a.b": {"bits": 2}}})"),
               "quantization[\"a.b\"].bits must be 4 or 8");
  EXPECT_ERROR(bad(R"({"quantization": {"group_size": 64, "bits": 4, "a.b": 7}})"),
               "must be an object {bits, group_size} or a boolean, got 7");
  EXPECT_ERROR(bad(R"({"quantization": {"bits": 4}})"), "quantization.group_size is missing");
}
