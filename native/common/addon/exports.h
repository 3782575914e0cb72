// Each addon source file adds its functions to the module's exports.
#pragma once
#include <napi.h>

namespace bs::addon {

void register_engine(Napi::Env env, Napi::Object exports);
void register_bench(Napi::Env env, Napi::Object exports);
void register_adapters(Napi::Env env, Napi::Object exports);

}  // namespace bs::addon
