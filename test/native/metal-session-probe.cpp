// `brainstem-native-tests --metal-session DIR TOKENS [MODE]` (session-probe.h's modes): a session whose forward pass
// runs on the whole-token Metal decoder (the msl-shim device here; the system GPU with BRAINSTEM_TEST_METAL=gpu) beside
// a CPU session, through session-probe.h's phases (the injected failure: the next command lists fail).
// test/native/metal-session.test.ts runs it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/session.h"
#include "decode-probe.h"
#include "decoder-compare.h"
#include "metal-shim.h"
#include "metal/metal-backend.h"
#include "metal/metal-decoder.h"
#include "session-probe.h"

namespace bt {

namespace {

// The shim, or the system GPU, with a switch that makes the next command lists fail.
struct Breakable : ShimDevice {
  bs::metal::Device* gpu = nullptr;
  bool broken = false;
  std::string name() const override { return gpu ? gpu->name() : ShimDevice::name(); }
  uint64_t working_set_budget() const override {
    return gpu ? gpu->working_set_budget() : ShimDevice::working_set_budget();
  }
  std::unique_ptr<bs::metal::Buffer> alloc(size_t b) override { return gpu ? gpu->alloc(b) : ShimDevice::alloc(b); }
  std::unique_ptr<bs::metal::Buffer> wrap(void* p, size_t b) override {
    return gpu ? gpu->wrap(p, b) : ShimDevice::wrap(p, b);
  }
  std::unique_ptr<bs::metal::CommandList> begin() override {
    if (broken) bs::fail("command buffer failed (injected by the probe)");
    return gpu ? gpu->begin() : ShimDevice::begin();
  }
};

std::string counters_json(const bs::StreamCounters& c) {
  char out[320];
  std::snprintf(out, sizeof out,
                "{\"slot_hits\": %llu, \"slot_misses\": %llu, \"loads\": %llu, \"prefetch_loads\": %llu, "
                "\"prefetch_misses\": %llu, \"io_bytes\": %llu, \"fallbacks\": %llu, \"drops\": %llu}",
                static_cast<unsigned long long>(c.slot_hits), static_cast<unsigned long long>(c.slot_misses),
                static_cast<unsigned long long>(c.loads), static_cast<unsigned long long>(c.prefetch_loads),
                static_cast<unsigned long long>(c.prefetch_misses), static_cast<unsigned long long>(c.io_bytes),
                static_cast<unsigned long long>(c.fallbacks), static_cast<unsigned long long>(c.drops));
  return out;
}

// Streamed experts: the host's waits per append of a decoder of its own — a 4-token prefill
// chunk, then greedy decode steps.
std::string host_waits(const bs::Model& m, bs::metal::Device& dev) {
  bs::metal::MetalDecoder d(dev, m, 64, 4);
  const bs::DeviceStep step{m.top_k, nullptr};
  const int32_t prompt[4] = {11, 48, 85, 122};
  int32_t token = 0;
  std::string out = "[";
  for (int i = 0; i < 5; ++i) {
    const int64_t before = d.host_waits();
    token = i == 0 ? d.append_greedy(prompt, 4, step) : d.append_greedy(&token, 1, step);
    out += (i ? ", " : "") + std::to_string(d.host_waits() - before);
  }
  return out + "]";
}

// Streamed experts: a weight file that shrinks under a device session fails that append with the
// reason; the session stays on the device at its length and goes on once the file is whole again.
// Hybrid models: a truncation whose replay on the device meets the shrunk file fails with the
// reason and leaves the session at the snapshot the replay began from (4 tokens); once whole, the
// tokens appended there again give a CPU session's logits (the state is not half-advanced).
std::string shrink_check(bs::Session& s, const std::shared_ptr<bs::Model>& m) {
  const std::string path = m->store->files()[0]->path();
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto shrink = [&] {
    if (::truncate(path.c_str(), static_cast<off_t>(bytes.size() / 2)) != 0) bs::fail("cannot truncate ", path);
  };
  auto restore = [&] {
    std::ofstream(path, std::ios::binary | std::ios::in)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  auto reason = [](const std::string& why) { return why.find("shrank") != std::string::npos ? "true" : "false"; };
  std::vector<float> logits(m->cfg.vocab);
  const int32_t prompt[4] = {11, 48, 85, 122}, next = 5;
  s.append(prompt, 4, logits.data());
  shrink();
  std::string message;
  try {
    s.append(&next, 1, logits.data());
  } catch (const bs::Error& e) {
    message = e.what();
  }
  restore();
  const bool kept = s.on_device() && s.n_past() == 4;
  s.append(&next, 1, logits.data());
  const bool continues = s.on_device() && s.n_past() == 5;
  std::string replay;
  if (std::count(m->cfg.linear_layer.begin(), m->cfg.linear_layer.end(), true) > 0) {
    const int32_t more[3] = {7, 9, 13}, again[2] = {next, more[0]};
    s.append(more, 3, logits.data());  // snapshots at 4 and 8
    shrink();
    std::string why;
    try {
      s.truncate(6);  // replays tokens 4, 5 from the snapshot at 4
    } catch (const bs::Error& e) {
      why = e.what();
    }
    restore();
    const bool at_snapshot = s.on_device() && s.n_past() == 4;
    bs::Session cpu(m, 64);
    std::vector<float> want(m->cfg.vocab);
    cpu.append(prompt, 4, want.data());
    cpu.append(again, 2, want.data());
    s.append(again, 2, logits.data());
    const bool same = rel_diff(logits, want) < 1e-4 && argmax_of(logits) == argmax_of(want);
    // A replay whose second MoE layer fails to load (the first layers' states advanced by then):
    // the snapshot is loaded again, so the session goes on from it like the CPU session.
    const int32_t last[2] = {9, 13};
    s.append(last, 2, logits.data());  // snapshots at 6 and 8
    m->streamer->fail_device_run(1);
    std::string midway;
    try {
      s.truncate(7);  // replays token 6 from the snapshot at 6
    } catch (const bs::Error& e) {
      midway = e.what();
    }
    m->streamer->fail_device_run(-1);
    const bool midway_kept = s.on_device() && s.n_past() == 6;
    s.append(last, 1, logits.data());
    cpu.truncate(6);  // drops its predictions, as the device session's truncation did
    cpu.append(last, 1, want.data());
    const bool midway_same = rel_diff(logits, want) < 1e-4 && argmax_of(logits) == argmax_of(want);
    std::fprintf(stderr, "shrunk file under a replay: %s\nload failing halfway through a replay: %s\n", why.c_str(),
                 midway.c_str());
    replay =
        std::string(", \"replay\": {\"failed_with_reason\": ") + reason(why) +
        ", \"at_snapshot\": " + (at_snapshot ? "true" : "false") +
        ", \"continues\": " + (same && s.on_device() ? "true" : "false") +
        ", \"midway\": {\"failed_with_reason\": " + (midway.find("injected") != std::string::npos ? "true" : "false") +
        ", \"at_snapshot\": " + (midway_kept ? "true" : "false") +
        ", \"continues\": " + (midway_same && s.on_device() ? "true" : "false") + "}}";
  }
  s.truncate(0);
  std::fprintf(stderr, "shrunk file: %s\n", message.c_str());
  return std::string("{\"failed_with_reason\": ") + reason(message) + ", \"kept\": " + (kept ? "true" : "false") +
         ", \"continues\": " + (continues ? "true" : "false") + replay + "}";
}

}  // namespace

int metal_session_probe(const char* dir, int tokens, const std::string& mode) {
  auto model = session_probe_model(dir, mode);
  const char* env = std::getenv("BRAINSTEM_TEST_METAL");
  Breakable dev;
  if (env && std::string(env) == "gpu") {
    dev.gpu = bs::metal::system_device();
    if (!dev.gpu) {
      std::fprintf(stderr, "no Metal device: %s\n", bs::metal::system_device_error().c_str());
      return 1;
    }
  }
  bs::metal::use_device(&dev);
  struct Restore {
    ~Restore() { bs::metal::use_device(nullptr); }
  } restore;
  bs::Session cpu(model, kProbeContext), metal(model, kProbeContext);
  metal.use_decoder(bs::metal::session_decoder(*model, kProbeContext));
  if (!metal.on_device()) bs::fail("the Metal session decoder refused the model");
  if (const long long seed = random_seed(mode); seed >= 0) {
    const std::string r = run_session_random(model, cpu, metal, static_cast<uint64_t>(seed), tokens);
    std::printf("{\"device\": \"%s\", %s}\n", dev.name().c_str(), r.c_str());
    return 0;
  }
  // Another session of the model wraps nothing again: the weights are shared per model.
  const int wraps = dev.wraps;
  const bool shared = bs::metal::session_decoder(*model, kProbeContext) != nullptr && dev.wraps == wraps && wraps > 0;
  const std::string io_error = bs::slot_experts(*model) ? shrink_check(metal, model) : "";
  bs::StreamCounters streamed;  // the device session's, before the failure hands it to the CPU
  const SessionPhases r = run_session_phases(model, dir, cpu, metal, tokens, "metal", [&] {
    streamed = metal.stats().stream;
    dev.broken = true;
  });
  std::string stream;
  if (bs::slot_experts(*model)) {
    dev.broken = false;
    stream = ", \"device_stream\": " + counters_json(streamed) +
             ", \"cpu_stream\": " + counters_json(cpu.stats().stream) + ", \"host_waits\": " + host_waits(*model, dev) +
             ", \"io_error\": " + io_error;
  }
  std::printf("{\"device\": \"%s\", %s, \"weights_shared\": %s%s}\n", dev.name().c_str(), r.json.c_str(),
              shared ? "true" : "false", stream.c_str());
  return 0;
}

}  // namespace bt
