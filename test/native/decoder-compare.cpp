#include "decoder-compare.h"

#include <algorithm>
#include <cmath>

#include "common/session.h"

namespace bt {

std::vector<int32_t> probe_prompt(const bs::Model& m) {
  std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  for (int32_t& t : prompt) t %= static_cast<int32_t>(m.cfg.vocab);
  return prompt;
}

GreedyCompare compare_greedy(const std::shared_ptr<const bs::Model>& m, int tokens,
                             bs::FunctionRef<int32_t(const int32_t*, int64_t, float*)> append) {
  const std::vector<int32_t> prompt = probe_prompt(*m);
  bs::Session cpu(m, 0);
  const size_t V = static_cast<size_t>(m->cfg.vocab);
  std::vector<float> a(V), b(V);
  GreedyCompare r;
  auto compare = [&] { r.max_rel_logit_diff = std::max(r.max_rel_logit_diff, rel_diff(a, b)); };
  cpu.append(prompt.data(), static_cast<int64_t>(prompt.size()), a.data());
  int32_t next = append(prompt.data(), static_cast<int64_t>(prompt.size()), b.data());
  r.appends = 1;
  compare();
  for (int i = 0; i < tokens; ++i) {
    r.cpu.push_back(argmax_of(a));
    r.device.push_back(next);
    if (r.cpu.back() != r.device.back()) break;
    cpu.append(&r.cpu.back(), 1, a.data());
    next = append(&r.device.back(), 1, b.data());
    ++r.appends;
    compare();
  }
  return r;
}

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

std::string json_list(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace bt
