// N-API entry: exports the native surface typed in daemon/native/binding.ts.
// Every export catches C++ exceptions and turns them into JS errors or rejections.
#include <napi.h>

#include <string>

#include "common/addon/async.h"
#include "common/addon/exports.h"
#include "common/backend.h"
#include "common/cpu-features.h"
#include "common/model.h"
#include "metal/metal-backend.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda/cuda-backend.h"
#endif

namespace {

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("version", "0.1.0");
  out.Set("cpuFeatures", bs::cpu_features_string());
  // Devices (cpu, later metal / cuda) and the kernel tables compiled for them.
  Napi::Array sets = Napi::Array::New(env);
  std::string cpu_sets;
  uint32_t i = 0;
  for (const bs::Backend* b : bs::compiled_backends()) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", b->name);
    o.Set("usable", b->usable());
    o.Set("detail", b->detail);
    o.Set("auto", b == &bs::best_backend());
    sets.Set(i++, o);
    if (std::string(b->name).rfind("cpu", 0) == 0) {
      cpu_sets += (cpu_sets.empty() ? "" : ", ") + std::string(b->name) +
                  (b == &bs::best_backend() ? " (auto)"
                   : b->usable()            ? ""
                                            : " (not usable on this CPU)");
    }
  }
  out.Set("kernelSets", sets);
  // One entry per device: cpu (all cpu-* kernel sets), and cuda / metal whether compiled or not,
  // so `doctor` can say what this build lacks.
  Napi::Array backends = Napi::Array::New(env);
  auto device = [&](const char* name, bool compiled, bool usable, const std::string& detail) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", name);
    o.Set("compiled", compiled);
    o.Set("usable", usable);
    o.Set("detail", detail);
    backends.Set(backends.Length(), o);
  };
  device("cpu", true, true, "kernel sets: " + cpu_sets);
  for (const char* gpu : {"cuda", "metal"}) {
    const bs::Backend* b = bs::find_backend(gpu);
    if (b) {
      // Metal and CUDA name their GPU and memory budget, or why they cannot run.
      std::string detail = std::string(gpu) == "metal" ? bs::metal::describe() : b->detail;
#ifdef BRAINSTEM_WITH_CUDA
      if (std::string(gpu) == "cuda") detail = bs::cuda::describe();
#endif
      device(gpu, true, b->usable(), detail + (b->usable() ? "" : " (no usable device found)"));
    } else {
      device(gpu, false, false, "not compiled into this build");
    }
  }
  out.Set("backends", backends);
  Napi::Array archs = Napi::Array::New(env);
  i = 0;
  for (const std::string& a : bs::supported_architectures()) archs.Set(i++, a);
  out.Set("architectures", archs);
  return out;
}

// The GPU probes (driver, device and the smoke test backend auto runs), cached once run, on a
// worker thread: the first info() would otherwise run them on the JS thread (seconds on a Jetson).
Napi::Value ProbeDevices(const Napi::CallbackInfo& info) {
  return bs::addon::run_async(
      info.Env(),
      [] {
        bs::best_backend();
        bs::metal::describe();
#ifdef BRAINSTEM_WITH_CUDA
        bs::cuda::describe();
#endif
      },
      [](Napi::Env env) { return env.Undefined(); });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("probeDevices", Napi::Function::New(env, ProbeDevices, "probeDevices"));
  bs::addon::register_engine(env, exports);
  bs::addon::register_bench(env, exports);
  bs::addon::register_prerouter(env, exports);
  bs::addon::register_adapters(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(brainstem, Init)
