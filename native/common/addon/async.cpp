#include "common/addon/async.h"

#include <new>

#include "common/error.h"

namespace bs::addon {

namespace {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, Work work, Done done, Finally finally)
      : Napi::AsyncWorker(env, "brainstem"),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        done_(std::move(done)),
        finally_(std::move(finally)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      work_();
    } catch (const std::bad_alloc&) {
      SetError("out of memory; use a smaller contextLength or model");
    } catch (const Error& e) {
      option_ = e.option;
      detail_ = e.detail;
      SetError(e.what());
    } catch (const std::exception& e) {
      SetError(e.what());
    } catch (...) {
      SetError("internal error in the native engine");
    }
  }

  // A completion also runs while a worker thread's environment is torn down: JS cannot run then,
  // so Resolve/Reject throw, and an exception escaping here aborts the whole process.
  void OnOK() override {
    run_finally();
    try {
      try {
        deferred_.Resolve(done_(Env()));
      } catch (const Napi::Error& e) {
        deferred_.Reject(e.Value());
      } catch (const std::exception& e) {
        deferred_.Reject(Napi::Error::New(Env(), e.what()).Value());
      }
    } catch (...) {
    }
  }

  void OnError(const Napi::Error& e) override {
    run_finally();
    try {
      Napi::Object err = e.Value();
      if (!option_.empty()) {
        err.Set("option", option_);
        err.Set("detail", detail_);
      }
      deferred_.Reject(err);
    } catch (...) {
    }
  }

 private:
  std::string option_, detail_;
  void run_finally() noexcept {
    try {
      if (finally_) finally_();
    } catch (...) {
    }
  }

  Napi::Promise::Deferred deferred_;
  Work work_;
  Done done_;
  Finally finally_;
};

}  // namespace

Napi::Promise run_async(Napi::Env env, Work work, Done done, Finally finally) {
  auto* w = new PromiseWorker(env, std::move(work), std::move(done), std::move(finally));
  Napi::Promise p = w->promise();
  w->Queue();  // the worker deletes itself after OnOK / OnError
  return p;
}

Napi::Promise rejected(Napi::Env env, const std::string& message) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(Napi::Error::New(env, message).Value());
  return d.Promise();
}

}  // namespace bs::addon
