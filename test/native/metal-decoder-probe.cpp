// `brainstem-native-tests --metal-decoder DIR TOKENS`: greedy decode of a model folder through
// the whole-token Metal decoder (the msl-shim device here; the system GPU with
// BRAINSTEM_TEST_METAL=gpu) beside the CPU reference kernels: the same 8-token prompt as one
// prefill chunk, then greedy steps. JSON: both token lists and the largest logit difference while
// they agree, relative to the largest |logit|. test/native/metal-decoder.test.ts runs it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/model.h"
#include "common/session.h"
#include "decode-probe.h"
#include "metal-shim.h"
#include "metal/metal-decoder.h"

namespace bt {

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-6, diff = 0.0;
  for (size_t j = 0; j < a.size(); ++j) {
    scale = std::max(scale, static_cast<double>(std::fabs(a[j])));
    diff = std::max(diff, static_cast<double>(std::fabs(a[j] - b[j])));
  }
  return diff / scale;
}

int32_t argmax_of(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

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
  std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  for (int32_t& t : prompt) t %= static_cast<int32_t>(model->cfg.vocab);
  const int64_t P = static_cast<int64_t>(prompt.size());
  bs::Session cpu(model, 0);
  bs::metal::MetalDecoder metal(*dev, *model, P + tokens, P);
  const bs::DeviceStep step{model->top_k, nullptr};
  const size_t V = static_cast<size_t>(model->cfg.vocab);
  std::vector<float> a(V), b(V);
  std::vector<int32_t> out_cpu, out_metal;
  double worst = 0.0;
  auto compare = [&] { worst = std::max(worst, rel_diff(a, b)); };

  // The prompt as one prefill chunk on both, then greedy steps while the tokens agree.
  cpu.append(prompt.data(), P, a.data());
  metal.append(prompt.data(), P, step, b.data());
  compare();
  int64_t appends = 1;
  for (int i = 0; i < tokens; ++i) {
    out_cpu.push_back(argmax_of(a));
    out_metal.push_back(argmax_of(b));
    if (out_cpu.back() != out_metal.back()) break;
    cpu.append(&out_cpu.back(), 1, a.data());
    metal.append(&out_metal.back(), 1, step, b.data());
    ++appends;
    compare();
  }
  auto list = [](const std::vector<int32_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::printf(
      "{\"device\": \"%s\", \"appends\": %lld, \"commits\": %lld, \"dispatches\": %d, \"tokens_cpu\": %s, "
      "\"tokens_metal\": %s, \"max_rel_logit_diff\": %.3e}\n",
      dev->name().c_str(), static_cast<long long>(appends), static_cast<long long>(metal.commits()), shim.dispatches,
      list(out_cpu).c_str(), list(out_metal).c_str(), worst);
  return 0;
}

}  // namespace bt
