// Argument checks for the N-API surface: each returns an error message naming the function,
// the argument and the rule, or an empty string when the value is acceptable.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace bs::addon {

// Reads option `key` of `opts` (undefined → def) as an integer in [lo, hi].
std::string int_option(const Napi::Value& opts, const char* fn, const char* key, int64_t lo, int64_t hi, int64_t def,
                       int64_t& out);
// `v` as an integer in [lo, hi]; `what` names it ("decode: token").
std::string int_arg(const Napi::Value& v, const std::string& what, int64_t lo, int64_t hi, int64_t& out);
// Reads string option `key` of `opts` (undefined → def).
std::string string_option(const Napi::Value& opts, const char* fn, const char* key, std::string& out);
// Reads number option `key` of `opts` as a finite number in [lo, hi] (undefined → out unchanged).
std::string number_option(const Napi::Value& opts, const char* fn, const char* key, double lo, double hi, double& out);
// Reads boolean option `key` of `opts` (undefined → out unchanged).
std::string bool_option(const Napi::Value& opts, const char* fn, const char* key, bool& out);
// Reads number option `key` of `opts` as a byte count: an integer in [0, 2^53] (undefined → out unchanged).
std::string bytes_option(const Napi::Value& opts, const char* fn, const char* key, uint64_t& out);

}  // namespace bs::addon
