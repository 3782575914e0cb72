// `brainstem-native-tests --metal-decoder DIR TOKENS`: greedy decode of a model folder through
// the whole-token Metal decoder (the msl-shim device here; the system GPU with
// BRAINSTEM_TEST_METAL=gpu) beside the CPU reference kernels (decoder-compare.h). JSON: both
// token lists and the largest logit difference while they agree, relative to the largest |logit|.
// test/native/metal-decoder.test.ts runs it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/model.h"
#include "decode-probe.h"
#include "decoder-compare.h"
#include "metal-shim.h"
#include "metal/metal-decoder.h"

namespace bt {

int metal_decoder_probe(const char* dir, int tokens) {
  bs::LoadOptions opts;
  opts.backend = "cpu-ref";
  auto model = bs::load_model(dir, opts);
  const char* env = std::getenv("BRAINSTEM_TEST_METAL");
  const bool gpu = env && std::string(env) == "gpu";
  ShimDevice shim;
  bs::metal::Device* dev = gpu ? bs::metal::system_device() : &shim;
  if (!dev) {
    std::fprintf(stderr, "no Metal device: %s\n", bs::metal::system_device_error().c_str());
    return 1;
  }
  const int64_t P = static_cast<int64_t>(probe_prompt(*model).size());
  bs::metal::MetalDecoder metal(*dev, *model, P + tokens, P);
  const bs::DeviceStep step{model->top_k, nullptr};
  const GreedyCompare r = compare_greedy(model, tokens, [&](const int32_t* t, int64_t n, float* logits) {
    metal.append(t, n, step, logits);
    return static_cast<int32_t>(std::max_element(logits, logits + model->cfg.vocab) - logits);
  });
  std::printf(
      "{\"device\": \"%s\", \"appends\": %lld, \"commits\": %lld, \"dispatches\": %d, \"tokens_cpu\": %s, "
      "\"tokens_metal\": %s, \"max_rel_logit_diff\": %.3e}\n",
      dev->name().c_str(), static_cast<long long>(r.appends), static_cast<long long>(metal.commits()), shim.dispatches,
      json_list(r.cpu).c_str(), json_list(r.device).c_str(), r.max_rel_logit_diff);
  return 0;
}

}  // namespace bt
