// Where a forward step's time goes (`bench decode --breakdown`): the calling thread's wall time
// per stage, the thread-pool loops each stage started and how long the caller waited at their
// ends for another thread's last ranges. Off unless the model was loaded with profiling
// (LoadOptions::profile); then a stage scope is one branch.
#pragma once
#include <chrono>
#include <cstdint>

#include "cpu/thread-pool.h"

namespace bs {

enum class Stage : uint8_t {
  Embed,
  NormsResidual,     // the layers' input and post-attention norms and residual adds
  AttnProj,          // q/k/v and o projections
  Attention,         // q/k norms, RoPE, the KV write, attention over the cache
  LinearProj,        // linear-attention layers' input and output projections
  LinearRecurrence,  // their causal conv, q/k norms, recurrence over the state and output gate
  Router,            // router logits and top-k
  ExpertSort,        // routed rows sorted by expert and their first-use checks
  GateUp,            // the routed experts' gate and up matmuls
  SiluMul,
  Down,
  Combine,   // weighted sum of the routed experts' outputs
  DenseMlp,  // shared experts and dense layers' MLPs
  LmHead,    // final norm and lm_head
  Count
};
const char* stage_name(Stage s);

struct StepProfile {
  static constexpr int kStages = static_cast<int>(Stage::Count);
  uint64_t steps = 0, step_ns = 0;  // forward steps and their wall time
  uint64_t ns[kStages] = {}, loops[kStages] = {}, wait_ns[kStages] = {};
  uint64_t loops_total = 0, wait_ns_total = 0;  // every pool loop of the steps
  ThreadPool* pool = nullptr;                   // whose counters the stages read
};

inline uint64_t profile_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Adds the scope's time and pool loops to `p`'s stage (nothing when p is null). Scopes of one
// step do not nest, so the stages add up to at most the step.
class StageScope {
 public:
  StageScope(StepProfile* p, Stage s) : p_(p), s_(static_cast<int>(s)) {
    if (!p_) return;
    if (p_->pool) c0_ = p_->pool->counters();
    t0_ = profile_now_ns();
  }
  ~StageScope() {
    if (!p_) return;
    p_->ns[s_] += profile_now_ns() - t0_;
    if (!p_->pool) return;
    const ThreadPool::Counters c = p_->pool->counters();
    p_->loops[s_] += c.loops - c0_.loops;
    p_->wait_ns[s_] += c.wait_ns - c0_.wait_ns;
  }
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;

 private:
  StepProfile* p_;
  int s_;
  uint64_t t0_ = 0;
  ThreadPool::Counters c0_{};
};

}  // namespace bs
