// Promise-returning async work for the addon: the work runs on a libuv worker thread and
// every C++ exception becomes a rejected promise with its message.
#pragma once
#include <napi.h>

#include <functional>
#include <string>

namespace bs::addon {

using Work = std::function<void()>;                  // worker thread; may throw
using Done = std::function<Napi::Value(Napi::Env)>;  // JS thread; builds the resolved value
using Finally = std::function<void()>;               // JS thread; runs on success and failure

// Queues `work` and returns the promise it settles.
Napi::Promise run_async(Napi::Env env, Work work, Done done, Finally finally = {});
// A promise already rejected with Error(message).
Napi::Promise rejected(Napi::Env env, const std::string& message);

}  // namespace bs::addon
