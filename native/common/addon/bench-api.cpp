// Benchmark primitives exposed to `brainstem bench`: the native memory read loop.
#include "common/addon/args.h"
#include "common/addon/async.h"
#include "common/addon/exports.h"
#include "common/io/model-files.h"
#include "cpu/membw.h"

namespace bs::addon {

namespace {

Napi::Value Membw(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t threads = 1, mib = 256, passes = 3;
  std::string err = int_option(info[0], "membw", "threads", 1, 1024, 1, threads);
  if (err.empty()) err = int_option(info[0], "membw", "mib", 1, 1 << 16, 256, mib);
  if (err.empty()) err = int_option(info[0], "membw", "passes", 1, 100, 3, passes);
  if (!err.empty()) return rejected(env, err);
  auto r = std::make_shared<MembwResult>();
  return run_async(
      env, [=] { *r = measure_read_bandwidth(static_cast<int>(threads), static_cast<uint64_t>(mib) << 20, passes); },
      [=](Napi::Env e) -> Napi::Value {
        Napi::Object o = Napi::Object::New(e);
        o.Set("threads", r->threads);
        o.Set("bytes", static_cast<double>(r->bytes));
        o.Set("seconds", r->seconds);
        o.Set("readGbS", r->read_gb_s);
        return o;
      });
}

Napi::Value DropPageCache(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) return rejected(env, "dropPageCache: paths must be an array of file paths");
  auto paths = std::make_shared<std::vector<std::string>>();
  Napi::Array a = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) {
    if (!a.Get(i).IsString()) return rejected(env, "dropPageCache: paths[" + std::to_string(i) + "] must be a string");
    paths->push_back(a.Get(i).As<Napi::String>().Utf8Value());
  }
  return run_async(
      env,
      [=] {
        for (const std::string& p : *paths) drop_page_cache(p);
      },
      [](Napi::Env e) -> Napi::Value { return e.Undefined(); });
}

}  // namespace

void register_bench(Napi::Env env, Napi::Object exports) {
  exports.Set("membw", Napi::Function::New(env, Membw, "membw"));
  exports.Set("dropPageCache", Napi::Function::New(env, DropPageCache, "dropPageCache"));
}

}  // namespace bs::addon
