#include "common/config-reader.h"

#include <cmath>

#include "common/error.h"

namespace bs {

ConfigReader::ConfigReader(const Json& root, std::string what, std::string arch)
    : root_(root), what_(std::move(what)), arch_(std::move(arch)) {
  if (!root_.is_object()) fail(what_, ": must be a JSON object");
}

bool ConfigReader::has(const char* key) const {
  const Json* v = root_.find(key);
  return v && !v->is_null();
}

const Json* ConfigReader::get(const char* key, bool required) const {
  const Json* v = root_.find(key);
  if ((!v || v->is_null()) && required) fail(what_, ": field ", key, " is missing (", arch_, " needs it)");
  return v && !v->is_null() ? v : nullptr;
}

std::vector<std::string> ConfigReader::string_list(const char* key, std::vector<std::string> def) const {
  const Json* v = get(key, false);
  if (!v) return def;
  if (!v->is_array()) error(key, "must be a list of strings");
  std::vector<std::string> out;
  for (const Json& item : v->items()) {
    if (!item.is_string()) error(key, "must be a list of strings");
    out.push_back(item.as_string());
  }
  return out;
}

ConfigReader ConfigReader::sub(const char* key) const {
  const Json* v = get(key, true);
  if (!v->is_object()) error(key, "must be a JSON object");
  return ConfigReader(*v, what_ + " " + key, arch_);
}

void ConfigReader::error(const char* key, const std::string& rule) const {
  const Json* v = root_.find(key);
  fail(what_, ": field ", key, " ", rule, ", got ", v ? v->brief() : std::string("nothing"));
}

int64_t ConfigReader::integer(const char* key, int64_t min, std::optional<int64_t> def) const {
  const Json* v = get(key, !def);
  if (!v) return *def;
  if (!v->is_int() || v->as_int() < min || v->as_int() > kMaxConfigInt) {
    error(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(kMaxConfigInt) + "]");
  }
  return v->as_int();
}

double ConfigReader::number(const char* key, double above, std::optional<double> def) const {
  const Json* v = get(key, !def);
  if (!v) return *def;
  if (!v->is_number() || !std::isfinite(v->as_double()) || !(v->as_double() > above)) {
    std::ostringstream rule;
    rule << "must be a finite number > " << above;
    error(key, rule.str());
  }
  return v->as_double();
}

bool ConfigReader::boolean(const char* key, std::optional<bool> def) const {
  const Json* v = get(key, !def);
  if (!v) return *def;
  if (!v->is_bool()) error(key, "must be true or false");
  return v->as_bool();
}

std::string ConfigReader::string(const char* key, std::optional<std::string> def) const {
  const Json* v = get(key, !def);
  if (!v) return *def;
  if (!v->is_string()) error(key, "must be a string");
  return v->as_string();
}

std::vector<int64_t> ConfigReader::int_list(const char* key, std::vector<int64_t> def) const {
  const Json* v = get(key, false);
  if (!v) return def;
  const auto ok = [](const Json& j) { return j.is_int() && j.as_int() >= 0 && j.as_int() <= kMaxConfigInt; };
  const std::string rule = "must be a list of integers in [0, " + std::to_string(kMaxConfigInt) + "]";
  if (ok(*v)) return {v->as_int()};
  if (!v->is_array()) error(key, rule);
  std::vector<int64_t> out;
  for (const Json& item : v->items()) {
    if (!ok(item)) error(key, rule);
    out.push_back(item.as_int());
  }
  return out;
}

}  // namespace bs
