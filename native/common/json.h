// A small strict JSON (RFC 8259) parser for safetensors headers, index files and
// config.json: no comments, no trailing commas, no duplicate keys, depth ≤ 128.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bs {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }
  // True when the literal was an integer (no fraction or exponent) that fits int64.
  bool is_int() const { return kind_ == Kind::Number && is_int_; }

  bool as_bool() const { return bool_; }
  double as_double() const { return num_; }
  int64_t as_int() const { return int_; }
  const std::string& as_string() const { return str_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  // Member lookup (objects only); nullptr when absent.
  const Json* find(std::string_view key) const;

  // Short rendering for error messages, e.g. `"abc"`, `12`, `[...]`.
  std::string brief() const;
  static const char* kind_name(Kind k);

  // Parses `text` completely; throws bs::Error "<what>: invalid JSON at byte N (line L, column C): ...".
  static Json parse(std::string_view text, const std::string& what);

 private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool is_int_ = false;
  double num_ = 0;
  int64_t int_ = 0;
  std::string str_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace bs
