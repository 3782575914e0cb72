// Benchmark primitives exposed to `brainstem bench`: the native memory read loop.
#include "common/addon/args.h"
#include "common/addon/async.h"
#include "common/addon/exports.h"
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

}  // namespace

void register_bench(Napi::Env env, Napi::Object exports) {
  exports.Set("membw", Napi::Function::New(env, Membw, "membw"));
}

}  // namespace bs::addon
