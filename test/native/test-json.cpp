// Strict JSON parser: accepted documents and every rejected form with its message.
#include <clocale>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/json.h"
#include "harness.h"

using bs::Json;

TEST(json_parses_nested_values) {
  const Json j =
      Json::parse(R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "x\"y\\n\u00e9\ud83d\ude00"}} )", "t");
  EXPECT(j.is_object());
  const Json& a = *j.find("a");
  EXPECT(a.items().size() == 5u);
  EXPECT(a.items()[0].is_int() && a.items()[0].as_int() == 1);
  EXPECT(!a.items()[1].is_int() && a.items()[1].as_double() == -2500.0);
  EXPECT(a.items()[2].as_bool() && !a.items()[3].as_bool() && a.items()[4].is_null());
  EXPECT(j.find("b")->find("c")->as_string() == "x\"y\\n\xc3\xa9\xf0\x9f\x98\x80")
      << j.find("b")->find("c")->as_string();
  EXPECT(j.find("missing") == nullptr);
}

TEST(json_integers_are_exact_to_int64) {
  const Json j = Json::parse("[9007199254740993, 9223372036854775807, 9223372036854775808, 1e2]", "t");
  EXPECT(j.items()[0].as_int() == 9007199254740993ll);
  EXPECT(j.items()[1].is_int());
  EXPECT(!j.items()[2].is_int()) << "out of int64 range is a plain number";
  EXPECT(!j.items()[3].is_int()) << "an exponent makes a non-integer literal";
}

// Doubles round to nearest (checked bit for bit), subnormals are kept, and what overflows or
// underflows to zero is an error, whatever LC_NUMERIC says (a comma locale where installed).
TEST(json_numbers_round_to_nearest_in_any_locale) {
  const char* saved = std::setlocale(LC_NUMERIC, nullptr);
  const std::string restore = saved ? saved : "C";
  const bool comma = std::setlocale(LC_NUMERIC, "de_DE.UTF-8") || std::setlocale(LC_NUMERIC, "fr_FR.UTF-8");
  const Json j = Json::parse("[0.1, 1.7976931348623157e308, 4.9e-324, 1e-310, 0e999, -0.0, 2.5]", "t");
  std::setlocale(LC_NUMERIC, restore.c_str());
  const auto bits = [&](size_t i) {
    const double d = j.items()[i].as_double();
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  };
  EXPECT(bits(0) == 0x3FB999999999999Aull) << std::hex << bits(0);
  EXPECT(bits(1) == 0x7FEFFFFFFFFFFFFFull) << std::hex << bits(1);
  EXPECT(bits(2) == 1ull) << "the smallest subnormal, got " << std::hex << bits(2);
  EXPECT(j.items()[3].as_double() > 0 && j.items()[3].as_double() < 2.2250738585072014e-308);
  EXPECT(bits(4) == 0 && bits(5) == 0x8000000000000000ull);
  EXPECT(j.items()[6].as_double() == 2.5) << (comma ? "under a comma locale" : "");
  for (const char* bad : {"1e-400", "-1e400", "2.4e-324", "1.7976931348623159e308"}) {
    EXPECT_ERROR(Json::parse(bad, "t"), "number out of range");
  }
}

TEST(json_rejects_malformed_input_with_position) {
  const std::pair<const char*, const char*> bad[] = {
      {"{\"a\": 1,}", "expected a string key"},
      {"[1, 2,]", "expected a value"},
      {"{\"a\": 1} // c", "unexpected characters after"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\""},
      {"\"\\x\"", "unknown escape"},
      {"\"\\ud800\"", "high surrogate without a low surrogate"},
      {"\"\\udc00\"", "lone low surrogate"},
      {"\"a\tb\"", "control character"},
      {"01", "unexpected characters after"},
      {"1.", "expected a digit after '.'"},
      {"-", "expected a digit"},
      {"\"abc", "unterminated string"},
      {"{\"a\" 1}", "expected ':'"},
      {"[1 2]", "expected ',' or ']'"},
      {"", "unexpected end of input"},
      {"tru", "expected a value"},
      {"\"\xff\"", "invalid UTF-8"},
      {"1e999", "number out of range"},
  };
  for (const auto& [text, needle] : bad) {
    EXPECT_ERROR(Json::parse(text, "doc.json"), needle);
    EXPECT_ERROR(Json::parse(text, "doc.json"), "doc.json: invalid JSON at byte ");
  }
  EXPECT_ERROR(Json::parse("{\n  \"a\": x}", "f"), "(line 2, column 8)");
}

TEST(json_limits_nesting_depth) {
  EXPECT_ERROR(Json::parse(std::string(200, '[') + std::string(200, ']'), "t"), "nesting deeper than 128");
  const Json ok = Json::parse(std::string(100, '[') + std::string(100, ']'), "t");
  EXPECT(ok.is_array());
}
