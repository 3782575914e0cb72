// The engine's N-API surface (typed in daemon/native/binding.ts): model and session handles
// are tagged externals; every slow call returns a promise; bad input rejects with a message.
#include <memory>
#include <string>
#include <vector>

#include "common/addon/args.h"
#include "common/addon/async.h"
#include "common/addon/exports.h"
#include "common/addon/handles.h"
#include "common/addon/stream-api.h"
#include "common/error.h"
#include "common/io/prefaulter.h"
#include "common/logits.h"

namespace bs::addon {

namespace {

// engine.context_length's maximum (daemon/engine/config.ts CONTEXT): no session holds more tokens.
constexpr size_t kMaxPrefillTokens = size_t{1} << 24;

Napi::Object summary(Napi::Env env, const Model& m, int64_t context_length) {
  const ModelConfig& c = m.cfg;
  Napi::Object o = Napi::Object::New(env);
  o.Set("arch", c.arch);
  o.Set("vocabSize", static_cast<double>(c.vocab));
  o.Set("hiddenSize", static_cast<double>(c.hidden));
  o.Set("layers", static_cast<double>(c.n_layers));
  int64_t moe = 0;
  for (bool b : c.moe_layer) moe += b;
  o.Set("moeLayers", static_cast<double>(moe));
  o.Set("heads", static_cast<double>(c.n_heads));
  o.Set("kvHeads", static_cast<double>(c.n_kv_heads));
  o.Set("headDim", static_cast<double>(c.head_dim));
  o.Set("experts", c.router.n_experts);
  o.Set("topK", m.top_k);
  o.Set("configTopK", c.router.top_k);
  o.Set("routing", c.router.family == RoutingFamily::SoftmaxTopK ? "softmax_topk" : "sigmoid_group");
  o.Set("maxPositions", static_cast<double>(c.max_positions));
  o.Set("contextLength", static_cast<double>(context_length));
  o.Set("tieEmbeddings", c.tie_embeddings);
  Napi::Array eos = Napi::Array::New(env, c.eos_token_ids.size());
  for (size_t i = 0; i < c.eos_token_ids.size(); ++i) eos.Set(i, static_cast<double>(c.eos_token_ids[i]));
  o.Set("eosTokenIds", eos);
  o.Set("bosTokenId", c.bos_token_id < 0 ? env.Null() : Napi::Number::New(env, static_cast<double>(c.bos_token_id)));
  o.Set("files", static_cast<double>(m.store->files().size()));
  o.Set("fileBytes", static_cast<double>(m.store->total_bytes()));
  o.Set("matrixBytes", static_cast<double>(m.matrix_bytes));
  o.Set("expertBytes", static_cast<double>(m.expert_bytes));
  o.Set("backend", m.dispatch().backend().name);
  o.Set("threads", m.threads());
  o.Set("kvCache", m.kv_f16() ? "f16" : "f32");
  o.Set("activationBits", m.activation_bits());
  o.Set("prefillChunk", static_cast<double>(m.prefill_chunk));
  o.Set("prefault", m.prefaulter != nullptr);
  o.Set("stream", stream_summary(env, m));
  return o;
}

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) return rejected(env, "loadModel: dir must be a string (a model folder path)");
  const std::string dir = info[0].As<Napi::String>().Utf8Value();
  LoadOptions opts;
  int64_t threads = 1, top_k = 0, ctx = 0, activation_bits = 16, prefill_chunk = 128;
  std::string err = int_option(info[1], "loadModel", "threads", 1, 256, 1, threads);
  if (err.empty()) err = int_option(info[1], "loadModel", "topK", 1, 1 << 20, 0, top_k);
  if (err.empty()) err = int_option(info[1], "loadModel", "contextLength", 1, 1ll << 31, 0, ctx);
  if (err.empty()) err = string_option(info[1], "loadModel", "backend", opts.backend);
  std::string kv_cache = "f32";
  if (err.empty()) err = string_option(info[1], "loadModel", "kvCache", kv_cache);
  if (err.empty() && kv_cache != "f32" && kv_cache != "f16") {
    err = "loadModel: kvCache must be \"f32\" or \"f16\", got \"" + kv_cache + "\"";
  }
  if (err.empty()) err = int_option(info[1], "loadModel", "activationBits", 8, 24, 16, activation_bits);
  if (err.empty() && activation_bits != 8 && activation_bits != 16 && activation_bits != 24) {
    err = "loadModel: activationBits must be 8, 16 or 24, got " + std::to_string(activation_bits);
  }
  if (err.empty()) err = int_option(info[1], "loadModel", "prefillChunk", 1, 4096, 128, prefill_chunk);
  if (err.empty()) err = stream_options(info[1], opts.stream);
  if (err.empty()) err = bool_option(info[1], "loadModel", "profile", opts.profile);
  if (err.empty()) err = bool_option(info[1], "loadModel", "prefault", opts.prefault);
  if (!err.empty()) return rejected(env, err);
  opts.prefill_chunk = static_cast<int>(prefill_chunk);
  opts.activation_bits = static_cast<int>(activation_bits);
  opts.kv_f16 = kv_cache == "f16";
  opts.threads = static_cast<int>(threads);
  opts.top_k = static_cast<int>(top_k);
  auto result = std::make_shared<std::shared_ptr<Model>>();
  return run_async(
      env, [=] { *result = load_model(dir, opts); },
      [=](Napi::Env e) -> Napi::Value {
        const Model& m = **result;
        const int64_t context = ctx > 0 ? ctx : m.cfg.max_positions;
        Napi::Object o = Napi::Object::New(e);
        o.Set("handle", wrap(e, new ModelBox{*result, context}, kModelTag));
        o.Set("summary", summary(e, m, context));
        return o;
      });
}

Napi::Value DisposeModel(const Napi::CallbackInfo& info) {
  ModelBox* box = unwrap<ModelBox>(info[0], kModelTag);
  if (!box) throw Napi::TypeError::New(info.Env(), "disposeModel: argument is not a model handle");
  box->model.reset();  // sessions still holding the model keep its mappings until they go
  return info.Env().Undefined();
}

// The background mapping of a model's weights (LoadOptions::prefault): null when off.
Napi::Value ModelPrefault(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelBox* box = unwrap<ModelBox>(info[0], kModelTag);
  if (!box) throw Napi::TypeError::New(env, "modelPrefault: argument is not a model handle");
  if (!box->model || !box->model->prefaulter) return env.Null();
  const Prefaulter::Status st = box->model->prefaulter->status();
  Napi::Object o = Napi::Object::New(env);
  o.Set("state", prefault_state_name(st.state));
  o.Set("doneBytes", static_cast<double>(st.done_bytes));
  o.Set("totalBytes", static_cast<double>(st.total_bytes));
  o.Set("expertsChecked", static_cast<double>(st.after_done));
  return o;
}

Napi::Value CreateSession(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModelBox* box = unwrap<ModelBox>(info[0], kModelTag);
  if (!box) return rejected(env, "createSession: first argument is not a model handle");
  if (!box->model) return rejected(env, "createSession: the model was disposed; load it again");
  int64_t ctx = 0;
  const std::string err = int_option(info[1], "createSession", "contextLength", 1, 1ll << 31, box->context_length, ctx);
  if (!err.empty()) return rejected(env, err);
  auto model = box->model;
  auto session = std::make_shared<std::shared_ptr<Session>>();
  return run_async(
      env, [=] { *session = std::make_shared<Session>(model, ctx); },
      [=](Napi::Env e) -> Napi::Value {
        return wrap(e, new SessionBox{*session, false, {}, 0, 0, (*session)->on_device()}, kSessionTag);
      });
}

// Shared path of prefill / decode / truncate: checks the handle and the busy flag, runs
// `work` on a worker thread, snapshots stats and builds the result on the JS thread.
Napi::Value session_call(const Napi::CallbackInfo& info, const char* fn, std::function<std::string(Session&)> check,
                         std::function<void(Session&)> work, Done done) {
  Napi::Env env = info.Env();
  SessionBox* box = unwrap<SessionBox>(info[0], kSessionTag);
  if (!box) return rejected(env, std::string(fn) + ": first argument is not a session handle");
  if (!box->session) return rejected(env, std::string(fn) + ": the session was disposed");
  if (box->busy) {
    return rejected(env, std::string(fn) + ": the session is busy with another call; await it before the next");
  }
  const std::string err = check(*box->session);
  if (!err.empty()) return rejected(env, err);
  auto session = box->session;
  box->busy = true;
  // The box outlives the call: the external holding it is referenced by the caller's handle
  // object, and the finalizer runs only after every pending call has settled.
  Napi::Reference<Napi::Value> keep = Napi::Persistent(info[0]);
  auto keep_ptr = std::make_shared<Napi::Reference<Napi::Value>>(std::move(keep));
  return run_async(
      env, [=] { work(*session); }, std::move(done),
      [=] {
        box->busy = false;
        box->stats = session->stats();
        box->n_past = session->n_past();
        box->on_device = session->on_device();
        const Model& m = session->model();
        box->buffer_bytes = m.streamer ? m.streamer->buffer_bytes() : 0;
        keep_ptr->Reset();
      });
}

Napi::Value logits_value(Napi::Env env, const std::vector<float>& logits) {
  Napi::Float32Array out = Napi::Float32Array::New(env, logits.size());
  std::copy(logits.begin(), logits.end(), out.Data());
  return out;
}

// prefill's optional third argument {embeds, rows, deepstack?, positions?} (see MultimodalInput).
struct MultimodalArgs {
  bool given = false;
  std::vector<float> embeds, deepstack;
  std::vector<int64_t> rows;
  std::vector<int32_t> positions;
};

template <typename A, typename T>
bool typed_field(const Napi::Object& o, const char* key, napi_typedarray_type type, std::vector<T>& out) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return true;
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) return false;
  A a = v.As<A>();
  out.assign(a.Data(), a.Data() + a.ElementLength());
  return true;
}

std::string multimodal_args(const Napi::Value& v, int64_t n, MultimodalArgs& out) {
  if (v.IsUndefined() || v.IsNull()) return "";
  if (!v.IsObject()) return "prefill: multimodal must be an object {embeds, rows, deepstack?, positions?}";
  const Napi::Object o = v.As<Napi::Object>();
  out.given = true;
  if (!typed_field<Napi::Float32Array>(o, "embeds", napi_float32_array, out.embeds)) {
    return "prefill: multimodal.embeds must be a Float32Array";
  }
  if (!typed_field<Napi::Float32Array>(o, "deepstack", napi_float32_array, out.deepstack)) {
    return "prefill: multimodal.deepstack must be a Float32Array";
  }
  std::vector<int32_t> rows;
  if (!typed_field<Napi::Int32Array>(o, "rows", napi_int32_array, rows)) {
    return "prefill: multimodal.rows must be an Int32Array of token indices";
  }
  out.rows.assign(rows.begin(), rows.end());
  if (!typed_field<Napi::Int32Array>(o, "positions", napi_int32_array, out.positions)) {
    return "prefill: multimodal.positions must be an Int32Array [3 × tokens]";
  }
  if (!out.positions.empty() && static_cast<int64_t>(out.positions.size()) != 3 * n) {
    return "prefill: multimodal.positions must hold 3 × " + std::to_string(n) + " positions, got " +
           std::to_string(out.positions.size());
  }
  return "";
}

Napi::Value Prefill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    return rejected(env, "prefill: tokens must be an Int32Array of token ids");
  }
  Napi::Int32Array arr = info[1].As<Napi::Int32Array>();
  // Refused before the copy: no context holds more (engine.context_length's maximum), and a copy of
  // hundreds of millions of ids on the JS thread could fail with bad_alloc there.
  if (arr.ElementLength() > kMaxPrefillTokens) {
    return rejected(env, "prefill: tokens holds " + std::to_string(arr.ElementLength()) +
                             " ids, more than any context (" + std::to_string(kMaxPrefillTokens) + ")");
  }
  auto tokens = std::make_shared<std::vector<int32_t>>(arr.Data(), arr.Data() + arr.ElementLength());
  auto logits = std::make_shared<std::vector<float>>();
  auto mm = std::make_shared<MultimodalArgs>();
  std::string err = multimodal_args(info[2], static_cast<int64_t>(tokens->size()), *mm);
  return session_call(
      info, "prefill",
      [=](Session& s) {
        if (!err.empty() || !mm->given) return err;
        const int64_t H = s.model().cfg.hidden, rows = static_cast<int64_t>(mm->rows.size());
        if (static_cast<int64_t>(mm->embeds.size()) != rows * H) {
          return "prefill: multimodal.embeds must hold rows.length × hidden_size = " + std::to_string(rows * H) +
                 " floats, got " + std::to_string(mm->embeds.size());
        }
        if (rows == 0 ? !mm->deepstack.empty() : mm->deepstack.size() % (rows * H) != 0) {
          return std::string("prefill: multimodal.deepstack must hold a whole number of [rows, hidden_size] blocks");
        }
        return std::string();
      },
      [=](Session& s) {
        logits->resize(s.model().cfg.vocab);
        MultimodalInput in;
        if (mm->given) {
          const int64_t H = s.model().cfg.hidden;
          in.n_rows = static_cast<int64_t>(mm->rows.size());
          in.rows = mm->rows.data();
          in.embeds = mm->embeds.data();
          in.n_deep = in.n_rows > 0 ? static_cast<int64_t>(mm->deepstack.size()) / (in.n_rows * H) : 0;
          in.deepstack = mm->deepstack.data();
          in.positions = mm->positions.empty() ? nullptr : mm->positions.data();
        }
        s.append(tokens->data(), static_cast<int64_t>(tokens->size()), logits->data(), mm->given ? &in : nullptr);
      },
      [=](Napi::Env e) { return logits_value(e, *logits); });
}

Napi::Value Decode(const Napi::CallbackInfo& info) {
  int64_t token = 0;
  const std::string err = int_arg(info[1], "decode: token", 0, INT32_MAX, token);
  auto logits = std::make_shared<std::vector<float>>();
  return session_call(
      info, "decode", [=](Session&) { return err; },
      [=](Session& s) {
        const int32_t t = static_cast<int32_t>(token);
        logits->resize(s.model().cfg.vocab);
        s.append(&t, 1, logits->data());
      },
      [=](Napi::Env e) { return logits_value(e, *logits); });
}

// decode without the logits: the session's argmax over ids below `vocab` (a device decoder
// returns only that token); resolves to the id, or -1 when no logit is above -Infinity.
Napi::Value DecodeGreedy(const Napi::CallbackInfo& info) {
  int64_t token = 0, vocab = 0;
  std::string err = int_arg(info[1], "decodeGreedy: token", 0, INT32_MAX, token);
  if (err.empty() && !info[2].IsUndefined()) err = int_arg(info[2], "decodeGreedy: vocabSize", 1, INT32_MAX, vocab);
  auto next = std::make_shared<int32_t>(0);
  return session_call(
      info, "decodeGreedy", [=](Session&) { return err; },
      [=](Session& s) {
        const int32_t t = static_cast<int32_t>(token);
        *next = s.append_greedy(&t, 1, vocab);
      },
      [=](Napi::Env e) { return Napi::Number::New(e, *next); });
}

Napi::Value Truncate(const Napi::CallbackInfo& info) {
  int64_t n = 0;
  const std::string err = int_arg(info[1], "truncate: nTokens", 0, INT32_MAX, n);
  return session_call(
      info, "truncate", [=](Session&) { return err; }, [=](Session& s) { s.truncate(n); },
      [](Napi::Env e) { return e.Undefined(); });
}

// Synchronous like setAdapter: it only changes what later calls run with.
Napi::Value SetTopK(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SessionBox* box = unwrap<SessionBox>(info[0], kSessionTag);
  if (!box) throw Napi::TypeError::New(env, "setTopK: first argument is not a session handle");
  int64_t k = 0;
  const std::string err = int_arg(info[1], "setTopK: topK", 1, INT32_MAX, k);
  if (!err.empty()) throw Napi::RangeError::New(env, err);
  if (!box->session) throw Napi::Error::New(env, "setTopK: the session was disposed");
  if (box->busy) throw Napi::Error::New(env, "setTopK: the session is busy with another call; await it first");
  try {
    box->session->set_top_k(static_cast<int>(k));
  } catch (const Error& e) {
    throw Napi::RangeError::New(env, std::string("setTopK: ") + e.what());
  }
  return env.Undefined();
}

// Totals since the session began: stages by name, each {ns, loops, waitNs}.
Napi::Object profile_value(Napi::Env env, const StepProfile& p) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("steps", static_cast<double>(p.steps));
  o.Set("stepNs", static_cast<double>(p.step_ns));
  o.Set("loops", static_cast<double>(p.loops_total));
  o.Set("waitNs", static_cast<double>(p.wait_ns_total));
  Napi::Object stages = Napi::Object::New(env);
  for (int i = 0; i < StepProfile::kStages; ++i) {
    Napi::Object s = Napi::Object::New(env);
    s.Set("ns", static_cast<double>(p.ns[i]));
    s.Set("loops", static_cast<double>(p.loops[i]));
    s.Set("waitNs", static_cast<double>(p.wait_ns[i]));
    stages.Set(stage_name(static_cast<Stage>(i)), s);
  }
  o.Set("stages", stages);
  return o;
}

Napi::Value SessionInfo(const Napi::CallbackInfo& info) {
  SessionBox* box = unwrap<SessionBox>(info[0], kSessionTag);
  if (!box) throw Napi::TypeError::New(info.Env(), "sessionInfo: argument is not a session handle");
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("disposed", !box->session);
  o.Set("busy", box->busy);
  o.Set("nPast", static_cast<double>(box->n_past));
  o.Set("contextLength", box->session ? static_cast<double>(box->session->context_length()) : 0.0);
  o.Set("tokens", static_cast<double>(box->stats.tokens));
  o.Set("weightBytes", static_cast<double>(box->stats.weight_bytes));
  o.Set("expertsComputed", static_cast<double>(box->stats.experts_computed));
  o.Set("stateBytes", box->session && !box->busy ? static_cast<double>(box->session->state_bytes()) : 0.0);
  o.Set("stream", stream_stats(info.Env(), box->stats, box->buffer_bytes));
  const LoraAdapter* adapter = box->session ? box->session->adapter().get() : nullptr;
  o.Set("topK", box->session ? box->session->top_k() : 0);
  o.Set("onDevice", box->session && box->on_device);
  o.Set("adapter", adapter ? Napi::Value(Napi::String::New(info.Env(), adapter->name())) : info.Env().Null());
  if (box->stats.profile.steps > 0) o.Set("profile", profile_value(info.Env(), box->stats.profile));
  return o;
}

Napi::Value DisposeSession(const Napi::CallbackInfo& info) {
  SessionBox* box = unwrap<SessionBox>(info[0], kSessionTag);
  if (!box) throw Napi::TypeError::New(info.Env(), "disposeSession: argument is not a session handle");
  box->session.reset();  // an in-flight call keeps its own reference until it settles
  return info.Env().Undefined();
}

Napi::Value Argmax(const Napi::CallbackInfo& info) {
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    throw Napi::TypeError::New(info.Env(), "argmax: logits must be a Float32Array");
  }
  Napi::Float32Array a = info[0].As<Napi::Float32Array>();
  return Napi::Number::New(info.Env(),
                           static_cast<double>(argmax_f32(a.Data(), static_cast<int64_t>(a.ElementLength()))));
}

Napi::Value ExpShifted(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    throw Napi::TypeError::New(env, "expShifted: logits must be a Float32Array");
  }
  if (!info[1].IsNumber() || !info[2].IsNumber() || !(info[2].As<Napi::Number>().DoubleValue() > 0)) {
    throw Napi::TypeError::New(env, "expShifted: max must be a number and temperature a number above 0");
  }
  Napi::Float32Array x = info[0].As<Napi::Float32Array>();
  if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[3].As<Napi::Float64Array>().ElementLength() < x.ElementLength()) {
    throw Napi::TypeError::New(env, "expShifted: out must be a Float64Array at least as long as the logits");
  }
  const double sum =
      exp_shifted(x.Data(), static_cast<int64_t>(x.ElementLength()), info[1].As<Napi::Number>().DoubleValue(),
                  info[2].As<Napi::Number>().DoubleValue(), info[3].As<Napi::Float64Array>().Data());
  return Napi::Number::New(env, sum);
}

}  // namespace

std::shared_ptr<Model> model_of(const Napi::Value& handle, const char* fn, std::string& err) {
  ModelBox* box = unwrap<ModelBox>(handle, kModelTag);
  if (!box) {
    err = std::string(fn) + ": first argument is not a model handle";
  } else if (!box->model) {
    err = std::string(fn) + ": the model was disposed; load it again";
  }
  return box ? box->model : nullptr;
}

void register_engine(Napi::Env env, Napi::Object exports) {
  exports.Set("loadModel", Napi::Function::New(env, LoadModel, "loadModel"));
  exports.Set("disposeModel", Napi::Function::New(env, DisposeModel, "disposeModel"));
  exports.Set("modelPrefault", Napi::Function::New(env, ModelPrefault, "modelPrefault"));
  exports.Set("createSession", Napi::Function::New(env, CreateSession, "createSession"));
  exports.Set("prefill", Napi::Function::New(env, Prefill, "prefill"));
  exports.Set("decode", Napi::Function::New(env, Decode, "decode"));
  exports.Set("decodeGreedy", Napi::Function::New(env, DecodeGreedy, "decodeGreedy"));
  exports.Set("truncate", Napi::Function::New(env, Truncate, "truncate"));
  exports.Set("setTopK", Napi::Function::New(env, SetTopK, "setTopK"));
  exports.Set("sessionInfo", Napi::Function::New(env, SessionInfo, "sessionInfo"));
  exports.Set("disposeSession", Napi::Function::New(env, DisposeSession, "disposeSession"));
  exports.Set("argmax", Napi::Function::New(env, Argmax, "argmax"));
  exports.Set("expShifted", Napi::Function::New(env, ExpShifted, "expShifted"));
}

}  // namespace bs::addon
