// N-API entry: exports the native surface typed in daemon/native/binding.ts.
// Every export catches C++ exceptions and turns them into JS errors or rejections.
#include <napi.h>

#include "common/cpu-features.h"

namespace {

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("version", "0.1.0");
  out.Set("cpuFeatures", bs::cpu_features_string());
  Napi::Array backends = Napi::Array::New(env);
  Napi::Object cpu = Napi::Object::New(env);
  cpu.Set("name", "cpu");
  cpu.Set("compiled", true);
  cpu.Set("usable", true);
  cpu.Set("detail", "scalar reference kernels");
  backends.Set(0u, cpu);
  out.Set("backends", backends);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  return exports;
}

}  // namespace

NODE_API_MODULE(brainstem, Init)
