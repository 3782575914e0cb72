// prerouterCalibrate / prerouterEval: calibration and evaluation of prerouter heads on a
// loaded model, in an async worker, with progress reported to an optional JS callback.
#include <memory>
#include <string>
#include <vector>

#include "common/addon/args.h"
#include "common/addon/async.h"
#include "common/addon/exports.h"
#include "common/prerouter/calibrate.h"

namespace bs::addon {

namespace {

struct ProgressEvent {
  std::string phase;
  double done, total, owner, loss;
};

// Progress from the worker thread to a JS callback (none when the callback is absent).
class Progress {
 public:
  Progress(Napi::Env env, const Napi::Value& cb) {
    if (cb.IsFunction())
      tsfn_ = Napi::ThreadSafeFunction::New(env, cb.As<Napi::Function>(), "brainstem-progress", 0, 1);
  }
  CalibrationProgress callback() {
    if (!tsfn_) return nullptr;
    return [this](const char* phase, int64_t done, int64_t total, int64_t owner, double loss) {
      // At most ~200 updates per phase, plus the last one.
      const int64_t every = std::max<int64_t>(1, total / 200);
      if (done % every != 0 && done != total) return;
      auto* ev = new ProgressEvent{phase, double(done), double(total), double(owner), loss};
      const napi_status st = tsfn_.BlockingCall(ev, [](Napi::Env env, Napi::Function fn, ProgressEvent* raw) {
        const std::unique_ptr<ProgressEvent> e(raw);
        // Progress is advisory: a throwing callback, or an environment being torn down, ends here.
        try {
          Napi::Object o = Napi::Object::New(env);
          o.Set("phase", e->phase);
          o.Set("done", e->done);
          o.Set("total", e->total);
          o.Set("owner", e->owner < 0 ? env.Null() : Napi::Number::New(env, e->owner));
          o.Set("loss", e->loss);
          fn.Call({o});
        } catch (...) {
        }
      });
      if (st != napi_ok) delete ev;
    };
  }
  void release() {
    if (tsfn_) tsfn_.Release();
  }

 private:
  Napi::ThreadSafeFunction tsfn_;
};

std::string tokens_arg(const Napi::Value& v, const char* fn, std::vector<int32_t>& out) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    return std::string(fn) + ": tokens must be an Int32Array of token ids";
  }
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  out.assign(a.Data(), a.Data() + a.ElementLength());
  return "";
}

Napi::Float32Array floats(Napi::Env env, const std::vector<float>& v) {
  Napi::Float32Array a = Napi::Float32Array::New(env, v.size());
  std::copy(v.begin(), v.end(), a.Data());
  return a;
}

Napi::Value Calibrate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "prerouterCalibrate";
  std::string err;
  std::shared_ptr<Model> model = model_of(info[0], fn, err);
  auto tokens = std::make_shared<std::vector<int32_t>>();
  if (err.empty()) err = tokens_arg(info[1], fn, *tokens);
  CalibrateOptions o;
  int64_t first = -1, last = -1, units = o.train.units, steps = o.train.steps, batch = o.train.batch, threads = 1,
          seed = 1;
  const Napi::Value opts = info[2];
  if (err.empty()) err = int_option(opts, fn, "firstLayer", 0, 1 << 20, -1, first);
  if (err.empty()) err = int_option(opts, fn, "lastLayer", 0, 1 << 20, -1, last);
  if (err.empty()) err = int_option(opts, fn, "units", 1, 1 << 16, units, units);
  if (err.empty()) err = int_option(opts, fn, "steps", 0, 1 << 24, steps, steps);
  if (err.empty()) err = int_option(opts, fn, "batch", 1, 1 << 16, batch, batch);
  if (err.empty()) err = int_option(opts, fn, "threads", 1, 256, threads, threads);
  if (err.empty()) err = int_option(opts, fn, "seed", 0, 1ll << 52, seed, seed);
  if (err.empty()) err = number_option(opts, fn, "lr", 1e-9, 10, o.train.lr);
  if (err.empty()) err = number_option(opts, fn, "heldOut", 0, 0.9, o.held_out);
  if (!err.empty()) return rejected(env, err);
  o.first_owner = first;
  o.last_owner = last;
  o.threads = static_cast<int>(threads);
  o.train.units = units;
  o.train.steps = static_cast<int>(steps);
  o.train.batch = static_cast<int>(batch);
  o.train.seed = static_cast<uint64_t>(seed);
  auto progress = std::make_shared<Progress>(env, info[3]);
  auto result = std::make_shared<Calibration>();
  return run_async(
      env, [=] { *result = calibrate(model, *tokens, o, progress->callback()); },
      [=](Napi::Env e) -> Napi::Value {
        Napi::Object out = Napi::Object::New(e);
        out.Set("tokens", static_cast<double>(result->tokens));
        Napi::Array reports = Napi::Array::New(e, result->reports.size());
        Napi::Array heads = Napi::Array::New(e, result->heads.size());
        for (size_t i = 0; i < result->reports.size(); ++i) {
          const HeadReport& r = result->reports[i];
          Napi::Object x = Napi::Object::New(e);
          x.Set("owner", static_cast<double>(r.owner));
          x.Set("trainSamples", static_cast<double>(r.train_samples));
          x.Set("heldOutSamples", static_cast<double>(r.held_out_samples));
          x.Set("lossBefore", r.loss_before);
          x.Set("lossAfter", r.loss_after);
          x.Set("recallBefore", r.recall_before);
          x.Set("recallAfter", r.recall_after);
          x.Set("heldOutRecallBefore", r.held_out_recall_before);
          x.Set("heldOutRecallAfter", r.held_out_recall_after);
          reports.Set(static_cast<uint32_t>(i), x);
          const HeadFloats& h = result->heads[i];
          Napi::Object w = Napi::Object::New(e);
          w.Set("owner", static_cast<double>(h.owner));
          w.Set("units", static_cast<double>(h.units));
          w.Set("fc1", floats(e, h.fc1));
          w.Set("fc2", floats(e, h.fc2));
          w.Set("linear", floats(e, h.linear));
          heads.Set(static_cast<uint32_t>(i), w);
        }
        out.Set("reports", reports);
        out.Set("heads", heads);
        return out;
      },
      [=] { progress->release(); });
}

Napi::Value Eval(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fn = "prerouterEval";
  std::string err;
  std::shared_ptr<Model> model = model_of(info[0], fn, err);
  auto tokens = std::make_shared<std::vector<int32_t>>();
  if (err.empty()) err = tokens_arg(info[1], fn, *tokens);
  if (err.empty() && !info[2].IsString()) err = std::string(fn) + ": heads must be a path to a heads .safetensors file";
  if (!err.empty()) return rejected(env, err);
  const std::string path = info[2].As<Napi::String>().Utf8Value();
  auto progress = std::make_shared<Progress>(env, info[3]);
  auto result = std::make_shared<std::vector<EvalReport>>();
  return run_async(
      env, [=] { *result = evaluate_heads(model, *tokens, path, progress->callback()); },
      [=](Napi::Env e) -> Napi::Value {
        Napi::Array out = Napi::Array::New(e, result->size());
        for (size_t i = 0; i < result->size(); ++i) {
          const EvalReport& r = (*result)[i];
          Napi::Object x = Napi::Object::New(e);
          x.Set("owner", static_cast<double>(r.owner));
          x.Set("samples", static_cast<double>(r.samples));
          x.Set("recall", r.recall);
          x.Set("zeroTrainingRecall", r.zero_training_recall);
          out.Set(static_cast<uint32_t>(i), x);
        }
        return out;
      },
      [=] { progress->release(); });
}

}  // namespace

void register_prerouter(Napi::Env env, Napi::Object exports) {
  exports.Set("prerouterCalibrate", Napi::Function::New(env, Calibrate, "prerouterCalibrate"));
  exports.Set("prerouterEval", Napi::Function::New(env, Eval, "prerouterEval"));
}

}  // namespace bs::addon
