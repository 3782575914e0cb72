#include "common/addon/args.h"

#include <cmath>

namespace bs::addon {

namespace {
const char* type_name(const Napi::Value& v) {
  switch (v.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return "boolean";
    case napi_number: return "number";
    case napi_string: return "string";
    case napi_symbol: return "symbol";
    case napi_function: return "function";
    case napi_bigint: return "bigint";
    default: return "object";
  }
}
}  // namespace

std::string int_arg(const Napi::Value& v, const std::string& what, int64_t lo, int64_t hi, int64_t& out) {
  const std::string rule = " must be an integer between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (!v.IsNumber()) return what + rule + ", got a " + type_name(v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
    return what + rule + ", got " + v.ToString().Utf8Value();
  }
  out = static_cast<int64_t>(d);
  return "";
}

std::string int_option(const Napi::Value& opts, const char* fn, const char* key, int64_t lo, int64_t hi, int64_t def,
                       int64_t& out) {
  out = def;
  if (opts.IsUndefined() || opts.IsNull()) return "";
  if (!opts.IsObject()) return std::string(fn) + ": options must be an object";
  const Napi::Value v = opts.As<Napi::Object>().Get(key);
  if (v.IsUndefined()) return "";
  return int_arg(v, std::string(fn) + ": option " + key, lo, hi, out);
}

std::string string_option(const Napi::Value& opts, const char* fn, const char* key, std::string& out) {
  if (opts.IsUndefined() || opts.IsNull()) return "";
  if (!opts.IsObject()) return std::string(fn) + ": options must be an object";
  const Napi::Value v = opts.As<Napi::Object>().Get(key);
  if (v.IsUndefined()) return "";
  if (!v.IsString()) return std::string(fn) + ": option " + key + " must be a string";
  out = v.As<Napi::String>().Utf8Value();
  return "";
}

std::string number_option(const Napi::Value& opts, const char* fn, const char* key, double lo, double hi, double& out) {
  if (opts.IsUndefined() || opts.IsNull()) return "";
  if (!opts.IsObject()) return std::string(fn) + ": options must be an object";
  const Napi::Value v = opts.As<Napi::Object>().Get(key);
  if (v.IsUndefined()) return "";
  const std::string rule = std::string(fn) + ": option " + key + " must be a number between " + std::to_string(lo) +
                           " and " + std::to_string(hi);
  if (!v.IsNumber()) return rule + ", got a " + type_name(v);
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < lo || d > hi) return rule + ", got " + v.ToString().Utf8Value();
  out = d;
  return "";
}

std::string bool_option(const Napi::Value& opts, const char* fn, const char* key, bool& out) {
  if (opts.IsUndefined() || opts.IsNull()) return "";
  if (!opts.IsObject()) return std::string(fn) + ": options must be an object";
  const Napi::Value v = opts.As<Napi::Object>().Get(key);
  if (v.IsUndefined()) return "";
  if (!v.IsBoolean()) return std::string(fn) + ": option " + key + " must be true or false, got a " + type_name(v);
  out = v.As<Napi::Boolean>().Value();
  return "";
}

std::string bytes_option(const Napi::Value& opts, const char* fn, const char* key, uint64_t& out) {
  int64_t v = static_cast<int64_t>(out);
  const std::string err = int_option(opts, fn, key, 0, 1ll << 53, v, v);
  if (err.empty()) out = static_cast<uint64_t>(v);
  return err;
}

}  // namespace bs::addon
