// `brainstem-native-tests --metal-decoder DIR TOKENS [f16]`: greedy decode of a model folder
// through the whole-token Metal decoder (the msl-shim device here; the system GPU with
// BRAINSTEM_TEST_METAL=gpu) beside the CPU reference kernels (decoder-compare.h), float32 or f16
// KV caches. JSON: both token lists, the largest logit difference while they agree (relative to
// the largest |logit|), and on the shim the dispatches by kernel of the prompt's append and of
// the last decode step.
// test/native/metal-decoder.test.ts runs it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/model.h"
#include "decode-probe.h"
#include "decoder-compare.h"
#include "metal-shim.h"
#include "metal/metal-decoder.h"

namespace bt {

int metal_decoder_probe(const char* dir, int tokens, bool kv_f16) {
  bs::LoadOptions opts;
  opts.backend = "cpu-ref";
  opts.kv_f16 = kv_f16;
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
  std::vector<std::map<std::string, int>> by_append;  // each append's dispatches by kernel
  const GreedyCompare r = compare_greedy(model, tokens, [&](const int32_t* t, int64_t n, float* logits) {
    const std::map<std::string, int> before = shim.by_kernel;
    metal.append(t, n, step, logits);
    by_append.push_back(shim.by_kernel);
    for (auto& [name, count] : by_append.back()) count -= before.count(name) ? before.at(name) : 0;
    return static_cast<int32_t>(std::max_element(logits, logits + model->cfg.vocab) - logits);
  });
  auto json = [](const std::map<std::string, int>& counts) {
    std::string s;
    for (const auto& [name, count] : counts) {
      if (count > 0) s += (s.empty() ? "\"" : ", \"") + name + "\": " + std::to_string(count);
    }
    return "{" + s + "}";
  };
  std::printf(
      "{\"device\": \"%s\", \"appends\": %lld, \"commits\": %lld, \"dispatches\": %d, \"tokens_cpu\": %s, "
      "\"tokens_metal\": %s, \"max_rel_logit_diff\": %.3e, \"layers\": %lld, \"prefill_kernels\": %s, "
      "\"step_kernels\": %s}\n",
      dev->name().c_str(), static_cast<long long>(r.appends), static_cast<long long>(metal.commits()), shim.dispatches,
      json_list(r.cpu).c_str(), json_list(r.device).c_str(), r.max_rel_logit_diff,
      static_cast<long long>(model->cfg.n_layers), json(by_append.front()).c_str(), json(by_append.back()).c_str());
  return 0;
}

}  // namespace bt
