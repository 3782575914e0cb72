// The body of `--cuda-decoder`, over the emulated decoder (cuda-decoder-probe.cpp) or the real one
// (cuda-decoder-device.cpp): include after that file's CUDA headers. Compare mode: greedy tokens
// and logits beside the CPU (decoder-compare.h); bench mode: warm decode steps timed with and
// without the CUDA graph, only the greedy token coming back, and the weight bytes they read per
// second (weight_gb_s: active bytes per token × tokens/s, against the device's bandwidth).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "common/function-ref.h"
#include "common/model.h"
#include "decoder-compare.h"

namespace bt {

// The expert slots' counters as JSON members (", \"slots\": {...}"), or "" without slots.
template <class Decoder>
std::string slot_json(const Decoder& d) {
  if (!d.slots()) return "";
  const auto& s = d.slots()->stats();
  return ", \"slots\": {\"hits\": " + std::to_string(s.hits) + ", \"misses\": " + std::to_string(s.misses) +
         ", \"copies\": " + std::to_string(s.copies) + ", \"prefetches\": " + std::to_string(s.prefetches) +
         ", \"slot_bytes\": " + std::to_string(s.slot_bytes) + "}";
}

// Running totals. syncs: the host synchronisations (the emulation's own count; on a device the
// library's); waits: the library's count of its host waits (device-context.cuh's host_waits);
// read_back: the library's count of bytes copied to the host (bytes_to_host); uploads: the host →
// device copies (the emulation's own count; on a device the library's copies_to_device).
struct DeviceCounters {
  bs::FunctionRef<int64_t()> syncs, waits;
  bs::FunctionRef<uint64_t()> read_back, uploads;
};

template <class Decoder>
int cuda_decoder_run(const std::shared_ptr<const bs::Model>& model, int tokens, bool bench, int slots,
                     const std::string& device, DeviceCounters k) {
  const std::vector<int32_t> prompt = probe_prompt(*model);
  const int64_t P = static_cast<int64_t>(prompt.size());
  if (!bench) {
    Decoder cuda(*model, P + tokens, P, true, slots);
    const int64_t before = k.syncs(), waited = k.waits();
    const GreedyCompare r = compare_greedy(
        model, tokens, [&](const int32_t* t, int64_t n, float* logits) { return cuda.append(t, n, logits); });
    const int64_t synced = k.syncs() - before;
    std::printf(
        "{\"device\": \"%s\", \"appends\": %lld, \"syncs\": %lld, \"host_waits\": %lld, \"graph_launches\": %lld, "
        "\"graph_builds\": %lld, \"graph_replays\": %lld, "
        "\"weight_bytes\": %zu, \"tokens_cpu\": %s, \"tokens_cuda\": %s, \"max_rel_logit_diff\": %.3e%s}\n",
        device.c_str(), static_cast<long long>(r.appends), static_cast<long long>(synced),
        static_cast<long long>(k.waits() - waited), static_cast<long long>(cuda.stats().graph_launches),
        static_cast<long long>(cuda.stats().graph_builds), static_cast<long long>(cuda.stats().graph_replays),
        cuda.stats().weight_bytes, json_list(r.cpu).c_str(), json_list(r.device).c_str(), r.max_rel_logit_diff,
        slot_json(cuda).c_str());
    return 0;
  }
  std::printf("{\"device\": \"%s\", \"tokens\": %d", device.c_str(), tokens);
  for (const bool graph : {true, false}) {
    Decoder cuda(*model, P + tokens + 1, P, graph, slots);
    int32_t next = cuda.append(prompt.data(), P);
    next = cuda.append(&next, 1);  // warm: the graph's first instantiation
    const int64_t synced = k.syncs();
    const uint64_t read = k.read_back(), uploaded = k.uploads();
    const auto t0 = std::chrono::steady_clock::now();
    const int steps = std::max(1, tokens - 1);
    for (int i = 0; i < steps; ++i) next = cuda.append(&next, 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double tok_s = steps / s;
    // Per timed step: the host synchronisations, the bytes back (the token; routed ids with
    // slots) and the copies up (the step's inputs; slot tables and fills with slots).
    std::printf(
        ", \"%s\": {\"tok_s\": %.2f, \"ms_per_token\": %.3f, \"weight_gb_s\": %.1f, \"graph_builds\": %lld, "
        "\"syncs_per_token\": %.2f, \"d2h_bytes_per_token\": %.1f, \"h2d_copies_per_token\": %.2f}",
        graph ? "graph" : "stream", tok_s, 1e3 / tok_s, tok_s * cuda.stats().active_bytes / 1e9,
        static_cast<long long>(cuda.stats().graph_builds), static_cast<double>(k.syncs() - synced) / steps,
        static_cast<double>(k.read_back() - read) / steps, static_cast<double>(k.uploads() - uploaded) / steps);
    if (graph)
      std::printf(", \"weight_bytes\": %zu, \"active_bytes\": %zu%s", cuda.stats().weight_bytes,
                  cuda.stats().active_bytes, slot_json(cuda).c_str());
  }
  std::printf("}\n");
  return 0;
}

}  // namespace bt
