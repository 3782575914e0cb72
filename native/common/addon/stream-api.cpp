#include "common/addon/stream-api.h"

#include "common/addon/args.h"
#include "common/experts/streamer.h"
#include "common/prerouter/heads.h"

namespace bs::addon {

std::string stream_options(const Napi::Value& opts, StreamOptions& o) {
  const char* fn = "loadModel";
  std::string prefill, decode, io, prerouter;
  int64_t slots = 0, io_threads = o.io_threads;
  std::string err = string_option(opts, fn, "prefillPath", prefill);
  if (err.empty()) err = string_option(opts, fn, "decodePath", decode);
  if (err.empty()) err = int_option(opts, fn, "slots", 1, 1 << 20, 0, slots);
  if (err.empty()) err = bytes_option(opts, fn, "cacheBytes", o.cache_bytes);
  if (err.empty()) err = int_option(opts, fn, "ioThreads", 1, 64, o.io_threads, io_threads);
  if (err.empty()) err = string_option(opts, fn, "ioMode", io);
  if (err.empty()) err = string_option(opts, fn, "prerouter", prerouter);
  if (err.empty()) err = bool_option(opts, fn, "measureRecall", o.measure_recall);
  if (err.empty()) err = number_option(opts, fn, "wholeLayerShare", 0.0, 1.0, o.whole_layer_share);
  if (err.empty()) err = bytes_option(opts, fn, "deviceExpertBytes", o.device_expert_bytes);
  if (!err.empty()) return err;
  const char* paths = "\"exact\", \"staged\", \"hot\" or \"whole-layer\"";
  if (!prefill.empty() && !parse_path(prefill, o.prefill_path)) {
    return std::string(fn) + ": option prefillPath must be " + paths + ", got \"" + prefill + "\"";
  }
  if (!decode.empty() && !parse_path(decode, o.decode_path)) {
    return std::string(fn) + ": option decodePath must be " + paths + ", got \"" + decode + "\"";
  }
  if (!io.empty() && !parse_io_mode(io, o.io_mode)) {
    return std::string(fn) + ": option ioMode must be \"page-cache\" or \"direct\", got \"" + io + "\"";
  }
  o.slots = static_cast<int>(slots);
  o.io_threads = static_cast<int>(io_threads);
  if (prerouter.empty() || prerouter == "off") {
    o.prerouter = PrerouterMode::Off;
  } else if (prerouter == "on") {
    o.prerouter = PrerouterMode::Zero;
  } else {
    o.prerouter = PrerouterMode::File;
    o.prerouter_file = prerouter;
  }
  return "";
}

Napi::Object stream_summary(Napi::Env env, const Model& m) {
  const StreamOptions& o = m.stream;
  Napi::Object s = Napi::Object::New(env);
  s.Set("prefillPath", path_name(o.prefill_path));
  s.Set("decodePath", path_name(o.decode_path));
  s.Set("slots", m.streamer ? m.streamer->staged_slots() : 0);
  s.Set("hotSlots", m.streamer ? m.streamer->hot_slots() : 0);
  s.Set("ioThreads", o.io_threads);
  s.Set("ioMode", io_mode_name(o.io_mode));
  s.Set("measureRecall", o.measure_recall);
  s.Set("wholeLayerShare", o.whole_layer_share);
  s.Set("deviceExpertBytes", static_cast<double>(o.device_expert_bytes));
  s.Set("prerouter", m.prerouter ? Napi::Value(Napi::String::New(env, m.prerouter->source())) : env.Null());
  const std::vector<int64_t> owners = m.prerouter ? m.prerouter->owners() : std::vector<int64_t>{};
  Napi::Array a = Napi::Array::New(env, owners.size());
  for (size_t i = 0; i < owners.size(); ++i) a.Set(static_cast<uint32_t>(i), static_cast<double>(owners[i]));
  s.Set("prerouterOwners", a);
  return s;
}

Napi::Object stream_stats(Napi::Env env, const SessionStats& st, uint64_t buffer_bytes) {
  const StreamCounters& c = st.stream;
  Napi::Object s = Napi::Object::New(env);
  auto set = [&](const char* k, uint64_t v) { s.Set(k, static_cast<double>(v)); };
  set("blockedNs", c.blocked_ns);
  set("ioBytes", c.io_bytes);
  set("loads", c.loads);
  set("prefetchLoads", c.prefetch_loads);
  set("prefetchBytes", c.prefetch_bytes);
  set("prefetchUnusedBytes", c.prefetch_unused_bytes);
  set("slotHits", c.slot_hits);
  set("slotMisses", c.slot_misses);
  set("fallbacks", c.fallbacks);
  set("drops", c.drops);
  set("layerReads", c.layer_reads);
  set("prefetchMisses", c.prefetch_misses);
  set("readHints", c.read_hints);
  set("warmExperts", c.warm_experts);
  set("warmBytes", c.warm_bytes);
  set("warmHits", c.warm_hits);
  set("predictedLayers", st.predicted_layers);
  set("recallHits", st.recall_hits);
  set("recallTotal", st.recall_total);
  set("bufferBytes", buffer_bytes);
  return s;
}

}  // namespace bs::addon
