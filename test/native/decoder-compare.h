// Greedy decode through a whole-token GPU decoder (Metal, CUDA) beside the CPU reference kernels:
// the same 8-token prompt as one prefill chunk, then greedy steps while the tokens agree. The
// probes (metal-decoder-probe.cpp, cuda-decoder-probe.cpp) print the result as JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/function-ref.h"
#include "common/model.h"

namespace bt {

struct GreedyCompare {
  int64_t appends = 0;
  std::vector<int32_t> cpu, device;
  double max_rel_logit_diff = 0.0;  // the largest |difference| relative to the largest |logit|
};

// The probe's prompt, folded into the model's vocabulary.
std::vector<int32_t> probe_prompt(const bs::Model& m);
// append(tokens, n, logits): the decoder's append, filling logits [vocab] and returning its
// greedy token.
GreedyCompare compare_greedy(const std::shared_ptr<const bs::Model>& m, int tokens,
                             bs::FunctionRef<int32_t(const int32_t*, int64_t, float*)> append);
std::string json_list(const std::vector<int32_t>& v);
// The probes' comparisons: the largest |a - b| relative to the largest |a|, and the first argmax.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b);
int32_t argmax_of(const std::vector<float>& v);

}  // namespace bt
