// `brainstem-native-tests --metal-session DIR TOKENS [f16|zero|heads]`: a session whose forward pass runs on
// the whole-token Metal decoder (the msl-shim device here; the system GPU with
// BRAINSTEM_TEST_METAL=gpu) beside a CPU session, through session-probe.h's phases (the injected
// failure: the next command lists fail). test/native/metal-session.test.ts runs it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/session.h"
#include "decode-probe.h"
#include "metal-shim.h"
#include "metal/metal-backend.h"
#include "session-probe.h"

namespace bt {

namespace {

// The shim, or the system GPU, with a switch that makes the next command lists fail.
struct Breakable : ShimDevice {
  bs::metal::Device* gpu = nullptr;
  bool broken = false;
  std::string name() const override { return gpu ? gpu->name() : ShimDevice::name(); }
  std::unique_ptr<bs::metal::Buffer> alloc(size_t b) override { return gpu ? gpu->alloc(b) : ShimDevice::alloc(b); }
  std::unique_ptr<bs::metal::Buffer> wrap(void* p, size_t b) override {
    return gpu ? gpu->wrap(p, b) : ShimDevice::wrap(p, b);
  }
  std::unique_ptr<bs::metal::CommandList> begin() override {
    if (broken) bs::fail("command buffer failed (injected by the probe)");
    return gpu ? gpu->begin() : ShimDevice::begin();
  }
};

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
  bs::Session cpu(model, 64), metal(model, 64);
  metal.use_decoder(bs::metal::session_decoder(*model, 64));
  if (!metal.on_device()) bs::fail("the Metal session decoder refused the model");
  // Another session of the model wraps nothing again: the weights are shared per model.
  const int wraps = dev.wraps;
  const bool shared = bs::metal::session_decoder(*model, 64) != nullptr && dev.wraps == wraps && wraps > 0;
  const SessionPhases r = run_session_phases(model, dir, cpu, metal, tokens, "metal", [&] { dev.broken = true; });
  std::printf("{\"device\": \"%s\", %s, \"weights_shared\": %s}\n", dev.name().c_str(), r.json.c_str(),
              shared ? "true" : "false");
  return 0;
}

}  // namespace bt
