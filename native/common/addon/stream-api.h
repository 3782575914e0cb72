// The expert-streaming part of the N-API surface: loadModel's profile options, the summary of
// the executor, and the counters sessionInfo reports.
#pragma once
#include <napi.h>

#include <string>

#include "common/model.h"
#include "common/session.h"

namespace bs::addon {

// Reads prefillPath, decodePath, slots, cacheBytes, ioThreads, ioMode, prerouter and
// measureRecall from loadModel's options; returns an error message or "".
std::string stream_options(const Napi::Value& opts, StreamOptions& out);
// summary.stream: the profile as loaded.
Napi::Object stream_summary(Napi::Env env, const Model& m);
// sessionInfo.stream: the executor's counters over the session's forward passes.
Napi::Object stream_stats(Napi::Env env, const SessionStats& s, uint64_t buffer_bytes);

}  // namespace bs::addon
