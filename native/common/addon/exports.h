// Each addon source file adds its functions to the module's exports.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

namespace bs {
class Model;
}

namespace bs::addon {

void register_engine(Napi::Env env, Napi::Object exports);
void register_bench(Napi::Env env, Napi::Object exports);
void register_prerouter(Napi::Env env, Napi::Object exports);

// The live model behind a model handle, or null with `err` naming `fn` and the problem.
std::shared_ptr<Model> model_of(const Napi::Value& handle, const char* fn, std::string& err);
void register_adapters(Napi::Env env, Napi::Object exports);

}  // namespace bs::addon
