// The device-session probes' random mode (session-probe.h): seeded calls on a device session
// beside a CPU session, compared call by call.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/multimodal.h"
#include "decoder-compare.h"
#include "harness.h"
#include "session-probe.h"

namespace bt {

long long random_seed(const std::string& mode) {
  const size_t at = ("," + mode).find(",random=");
  return at == std::string::npos ? -1 : std::atoll(mode.c_str() + at + 7);
}

std::string run_session_random(const std::shared_ptr<bs::Model>& model, bs::Session& cpu, bs::Session& dev,
                               uint64_t seed, int ops) {
  const bs::ModelConfig& c = model->cfg;
  const int32_t V = static_cast<int32_t>(c.vocab);
  const int64_t H = c.hidden, room = dev.context_length() - 4;
  const bool hybrid = std::count(c.linear_layer.begin(), c.linear_layer.end(), true) > 0;
  const bool images = !c.mrope_section.empty();
  const int64_t n_deep = images && !hybrid ? 2 : 0;  // DeepStack only where no replay needs it
  Rng r(seed);
  std::vector<float> a(V), b(V);
  std::vector<int32_t> top;  // per cached row: its largest RoPE position
  std::string log;
  double worst = 0.0;
  int64_t tokens = 0, greedy = 0, mismatches = 0;
  const auto pick = [&](int64_t n) { return static_cast<int64_t>(r.below(static_cast<uint64_t>(n))); };
  const auto token = [&] { return static_cast<int32_t>(1 + pick(V - 1)); };
  const auto next = [&] { return top.empty() ? 0 : *std::max_element(top.begin(), top.end()) + 1; };

  for (int op = 0; op < ops; ++op) {
    const int64_t past = cpu.n_past();
    int kind = past == 0 ? static_cast<int>(pick(2)) : static_cast<int>(pick(4));
    // A decode run of 33 crosses a hybrid's decode snapshot (every 32 steps); else 1–8 steps.
    const int64_t steps = pick(4) == 0 ? 33 : 1 + pick(8);
    if ((kind == 2 && past + steps > room) || past + 12 > room) kind = 3;
    if (kind == 3) {
      const int64_t keep = pick(past + 1);
      cpu.truncate(keep);
      dev.truncate(keep);
      top.resize(keep);
      log += " t" + std::to_string(keep);
    } else if (kind == 2) {
      for (int64_t i = 0; i < steps; ++i) {
        const int32_t t = token();
        cpu.append(&t, 1, a.data());
        if (i % 3 == 2) {
          ++greedy;
          mismatches += dev.append_greedy(&t, 1) != argmax_of(a);
        } else {
          dev.append(&t, 1, b.data());
          worst = std::max(worst, rel_diff(a, b));
        }
        top.push_back(next());
      }
      tokens += steps;
      log += " d" + std::to_string(steps);
    } else {
      // Text; or (multimodal RoPE) text, an image grid of gh × gw rows at base p, text.
      const int64_t before = pick(3), gh = kind == 1 && images ? 1 + pick(2) : 0, gw = 1 + pick(3);
      const int64_t after = kind == 1 && images ? pick(3) : 1 + pick(6);
      const int64_t n = before + gh * gw + after, span = gh > 0 ? std::max(gh, gw) : 0;
      std::vector<int32_t> ids(n), pos(3 * n);
      std::vector<int64_t> rows;
      const int32_t p0 = next(), base = p0 + static_cast<int32_t>(before);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t g = i - before;
        const bool image = g >= 0 && g < gh * gw;
        const int32_t p = image   ? base
                          : g < 0 ? p0 + static_cast<int32_t>(i)
                                  : base + static_cast<int32_t>(span + g - gh * gw);
        ids[i] = image ? 5 : token();
        pos[i] = p;
        pos[n + i] = image ? base + static_cast<int32_t>(g / gw) : p;
        pos[2 * n + i] = image ? base + static_cast<int32_t>(g % gw) : p;
        if (image) rows.push_back(i);
        top.push_back(std::max({pos[i], pos[n + i], pos[2 * n + i]}));
      }
      std::vector<float> embeds(rows.size() * H), deep(n_deep * rows.size() * H);
      for (float& x : embeds) x = static_cast<float>(r.uniform(-1.0, 1.0));
      for (float& x : deep) x = static_cast<float>(r.uniform(-0.5, 0.5));
      const bs::MultimodalInput mm{
          embeds.data(), rows.data(), static_cast<int64_t>(rows.size()), n_deep ? deep.data() : nullptr,
          n_deep,        pos.data()};
      const bs::MultimodalInput* in = gh > 0 ? &mm : nullptr;
      cpu.append(ids.data(), n, a.data(), in);
      dev.append(ids.data(), n, b.data(), in);
      worst = std::max(worst, rel_diff(a, b));
      tokens += n;
      log += gh > 0 ? " i" + std::to_string(before) + ":" + std::to_string(gh) + "x" + std::to_string(gw) + ":" +
                          std::to_string(after)
                    : " p" + std::to_string(n);
    }
    if (cpu.n_past() != dev.n_past() || !dev.on_device()) break;
  }
  char out[400];
  std::snprintf(out, sizeof out,
                "\"random\": {\"seed\": %llu, \"tokens\": %lld, \"greedy_steps\": %lld, \"greedy_mismatches\": %lld, "
                "\"n_past\": [%lld, %lld], \"on_device\": %s, \"max_rel_logit_diff\": %.3e, \"calls\": \"",
                static_cast<unsigned long long>(seed), static_cast<long long>(tokens), static_cast<long long>(greedy),
                static_cast<long long>(mismatches), static_cast<long long>(cpu.n_past()),
                static_cast<long long>(dev.n_past()), dev.on_device() ? "true" : "false", worst);
  return out + log.substr(log.empty() ? 0 : 1) + "\"}";
}

}  // namespace bt
