// Calibration of prerouter heads: each head imitates the next layer's router one token ahead,
// trained with Adam on the cross-entropy between softmax(head logits) and the teacher's top-k
// of layer N+1 at t+1 (uniform over the k), starting from the zero-training head. The batch
// gradient is split over threads (one accumulator each), the update over parameters.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "common/prerouter/heads.h"
#include "common/prerouter/routing-trace.h"

namespace bs {

class ThreadPool;

struct TrainOptions {
  int64_t units = 512;  // fc1 outputs (Edge0's heads: 512)
  int steps = 300;      // minibatch steps per head
  int batch = 32;
  double lr = 1e-3;
  uint64_t seed = 1;
};

// Sample times t of owner N: features at t, target = layer N+1's top-k at t+1.
std::vector<int64_t> head_samples(const RoutingTrace& trace, int64_t begin, int64_t end);

// Trains h in place; progress(step, batch loss) after every step.
void train_head(HeadFloats& h, const RoutingTrace& trace, const std::vector<int64_t>& samples, int64_t experts,
                const TrainOptions& o, ThreadPool* pool, const std::function<void(int, double)>& progress);

// Mean cross-entropy of h over the samples.
double head_loss(const HeadFloats& h, const RoutingTrace& trace, const std::vector<int64_t>& samples, int64_t experts);

// Mean top-k recall of p's head `owner` over the samples: |route_{N+1}(head logits) ∩ teacher
// top-k of N+1 at t+1| / k, through the runtime head and layer N+1's routing function.
double head_recall(const Model& m, const Prerouter& p, int64_t owner, const RoutingTrace& trace,
                   const std::vector<int64_t>& samples);

// Rounds every weight to fp16, the precision of a heads file.
void round_to_f16(HeadFloats& h);

}  // namespace bs
