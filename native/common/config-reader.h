// Typed, validated reads of config.json fields; every error names the file, the field, the
// rule and the value found.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace bs {

// Every integer field fits 32 bits (no model needs more), so no caller truncates one silently.
constexpr int64_t kMaxConfigInt = INT32_MAX;

class ConfigReader {
 public:
  // `what` names the file in messages, `arch` the architecture that needs the fields.
  ConfigReader(const Json& root, std::string what, std::string arch);

  bool has(const char* key) const;
  // An integer in [min, kMaxConfigInt].
  int64_t integer(const char* key, int64_t min, std::optional<int64_t> def = std::nullopt) const;
  // A finite number > `above` (exclusive).
  double number(const char* key, double above, std::optional<double> def = std::nullopt) const;
  bool boolean(const char* key, std::optional<bool> def = std::nullopt) const;
  std::string string(const char* key, std::optional<std::string> def = std::nullopt) const;
  // A list of integers in [0, kMaxConfigInt], or a single integer as a one-element list; def when absent or null.
  std::vector<int64_t> int_list(const char* key, std::vector<int64_t> def = {}) const;

  // A list of strings; def when absent or null.
  std::vector<std::string> string_list(const char* key, std::vector<std::string> def = {}) const;
  // The object at `key` (e.g. Qwen3.5's "text_config") read the same way; errors name it as
  // "<file> <key>". Throws when it is missing or not an object.
  ConfigReader sub(const char* key) const;

  [[noreturn]] void error(const char* key, const std::string& rule) const;
  const std::string& what() const { return what_; }

 private:
  const Json* get(const char* key, bool required) const;
  const Json& root_;
  std::string what_, arch_;
};

}  // namespace bs
