// LoRA adapters on the N-API surface (typed in daemon/native/binding.ts): loadAdapter reads a
// plan's tensors for a model on a worker thread; setAdapter picks a session's adapter (sync,
// between calls); disposeAdapter drops the handle (sessions using it keep their own reference).
#include <cmath>
#include <memory>
#include <string>

#include "common/addon/async.h"
#include "common/addon/exports.h"
#include "common/addon/handles.h"
#include "common/error.h"

namespace bs::addon {

namespace {

// Reads spec[key] as a string; an error message naming the field, or "".
std::string string_field(const Napi::Object& o, const std::string& where, const char* key, bool non_empty,
                         std::string& out) {
  const Napi::Value v = o.Get(key);
  if (!v.IsString()) return where + "." + key + " must be a string";
  out = v.As<Napi::String>().Utf8Value();
  if (non_empty && out.empty()) return where + "." + key + " must not be empty";
  return "";
}

// The LoraSpec of a JS plan {name, file, modules: [{module, a, b, transposed, scale}]}.
std::string parse_spec(const Napi::Value& v, LoraSpec& spec) {
  const std::string where = "loadAdapter: spec";
  if (!v.IsObject()) return where + " must be an object {name, file, modules}";
  const Napi::Object o = v.As<Napi::Object>();
  std::string err = string_field(o, where, "name", true, spec.name);
  if (err.empty()) err = string_field(o, where, "file", true, spec.file);
  if (!err.empty()) return err;
  const Napi::Value mods = o.Get("modules");
  if (!mods.IsArray()) return where + ".modules must be an array";
  const Napi::Array arr = mods.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    const std::string mw = where + ".modules[" + std::to_string(i) + "]";
    const Napi::Value mv = arr.Get(i);
    if (!mv.IsObject()) return mw + " must be an object {module, a, b, transposed, scale}";
    const Napi::Object m = mv.As<Napi::Object>();
    LoraModuleSpec ms;
    err = string_field(m, mw, "module", true, ms.module);
    if (err.empty()) err = string_field(m, mw, "a", true, ms.a_tensor);
    if (err.empty()) err = string_field(m, mw, "b", true, ms.b_tensor);
    if (!err.empty()) return err;
    const Napi::Value t = m.Get("transposed");
    if (!t.IsUndefined() && !t.IsBoolean()) return mw + ".transposed must be a boolean";
    ms.transposed = t.IsBoolean() && t.As<Napi::Boolean>().Value();
    const Napi::Value s = m.Get("scale");
    if (!s.IsNumber() || !std::isfinite(s.As<Napi::Number>().DoubleValue())) {
      return mw + ".scale must be a finite number";
    }
    ms.scale = s.As<Napi::Number>().DoubleValue();
    spec.modules.push_back(std::move(ms));
  }
  return "";
}

Napi::Object adapter_summary(Napi::Env env, const LoraAdapter& a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", a.name());
  o.Set("bytes", static_cast<double>(a.bytes()));
  Napi::Array mods = Napi::Array::New(env, a.modules().size());
  uint32_t i = 0;
  for (const auto& m : a.modules()) {
    Napi::Object mo = Napi::Object::New(env);
    mo.Set("module", m->path);
    mo.Set("rank", static_cast<double>(m->w.a.rows));
    mo.Set("scale", m->w.scale);
    mo.Set("dtype", dtype_name(m->w.a.dtype));
    mods.Set(i++, mo);
  }
  o.Set("modules", mods);
  return o;
}

Napi::Value LoadAdapter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelBox* box = unwrap<ModelBox>(info[0], kModelTag);
  if (!box) return rejected(env, "loadAdapter: first argument is not a model handle");
  if (!box->model) return rejected(env, "loadAdapter: the model was disposed; load it again");
  auto spec = std::make_shared<LoraSpec>();
  const std::string err = parse_spec(info[1], *spec);
  if (!err.empty()) return rejected(env, err);
  auto model = box->model;
  auto result = std::make_shared<std::shared_ptr<const LoraAdapter>>();
  return run_async(
      env, [=] { *result = load_lora(*model, *spec); },
      [=](Napi::Env e) -> Napi::Value {
        Napi::Object o = Napi::Object::New(e);
        o.Set("handle", wrap(e, new AdapterBox{*result}, kAdapterTag));
        o.Set("summary", adapter_summary(e, **result));
        return o;
      });
}

Napi::Value DisposeAdapter(const Napi::CallbackInfo& info) {
  AdapterBox* box = unwrap<AdapterBox>(info[0], kAdapterTag);
  if (!box) throw Napi::TypeError::New(info.Env(), "disposeAdapter: argument is not an adapter handle");
  box->adapter.reset();
  return info.Env().Undefined();
}

Napi::Value SetAdapter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SessionBox* sb = unwrap<SessionBox>(info[0], kSessionTag);
  if (!sb) throw Napi::TypeError::New(env, "setAdapter: first argument is not a session handle");
  std::shared_ptr<const LoraAdapter> adapter;
  if (!info[1].IsNull() && !info[1].IsUndefined()) {
    AdapterBox* ab = unwrap<AdapterBox>(info[1], kAdapterTag);
    if (!ab) throw Napi::TypeError::New(env, "setAdapter: second argument is not an adapter handle or null");
    if (!ab->adapter) throw Napi::Error::New(env, "setAdapter: the adapter was disposed; load it again");
    adapter = ab->adapter;
  }
  if (!sb->session) throw Napi::Error::New(env, "setAdapter: the session was disposed");
  if (sb->busy) throw Napi::Error::New(env, "setAdapter: the session is busy with another call; await it first");
  try {
    sb->session->set_adapter(std::move(adapter));
  } catch (const Error& e) {
    throw Napi::Error::New(env, std::string("setAdapter: ") + e.what());
  }
  return env.Undefined();
}

}  // namespace

void register_adapters(Napi::Env env, Napi::Object exports) {
  exports.Set("loadAdapter", Napi::Function::New(env, LoadAdapter, "loadAdapter"));
  exports.Set("disposeAdapter", Napi::Function::New(env, DisposeAdapter, "disposeAdapter"));
  exports.Set("setAdapter", Napi::Function::New(env, SetAdapter, "setAdapter"));
}

}  // namespace bs::addon
