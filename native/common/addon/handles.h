// The tagged externals behind the JS handles (models, sessions, adapters), shared by the addon
// files that take them. Each box is owned by its external and freed by its finalizer.
#pragma once
#include <napi.h>

#include <memory>

#include "common/lora.h"
#include "common/model.h"
#include "common/session.h"

namespace bs::addon {

constexpr napi_type_tag kModelTag = {0x6272616e5374656dull, 0x4d6f64656c000001ull};
constexpr napi_type_tag kSessionTag = {0x6272616e5374656dull, 0x53657373696f6e01ull};
constexpr napi_type_tag kAdapterTag = {0x6272616e5374656dull, 0x4c6f526141640001ull};

struct ModelBox {
  std::shared_ptr<Model> model;  // null once disposed
  int64_t context_length = 0;    // default for new sessions
};

struct SessionBox {
  std::shared_ptr<Session> session;  // null once disposed
  bool busy = false;                 // a prefill/decode/truncate is in flight (JS thread only)
  SessionStats stats;                // snapshot after the last completed call
  int64_t n_past = 0;
  uint64_t buffer_bytes = 0;  // the model's slot and layer buffers at that time
  bool on_device = false;     // the session ran on a device decoder at that time
};

struct AdapterBox {
  std::shared_ptr<const LoraAdapter> adapter;  // null once disposed; sessions keep their own reference
};

template <class Box>
Box* unwrap(const Napi::Value& v, const napi_type_tag& tag) {
  if (!v.IsExternal()) return nullptr;
  auto ext = v.As<Napi::External<Box>>();
  return ext.CheckTypeTag(&tag) ? ext.Data() : nullptr;
}

template <class Box>
Napi::Value wrap(Napi::Env env, Box* box, const napi_type_tag& tag) {
  auto ext = Napi::External<Box>::New(env, box, [](Napi::Env, Box* b) { delete b; });
  ext.TypeTag(&tag);
  return ext;
}

}  // namespace bs::addon
