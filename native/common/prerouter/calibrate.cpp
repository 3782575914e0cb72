#include "common/prerouter/calibrate.h"

#include <algorithm>

#include "common/error.h"
#include "cpu/thread-pool.h"

namespace bs {

namespace {

std::vector<int64_t> owners_in(const Model& m, int64_t first, int64_t last) {
  std::vector<int64_t> all = possible_owners(m), out;
  if (all.empty()) fail("prerouter: this model has no two consecutive MoE layers; there is nothing to predict");
  if (first < 0) first = all.front();
  if (last < 0) last = all.back();
  for (int64_t o : all) {
    if (o >= first && o <= last) out.push_back(o);
  }
  if (out.empty()) {
    fail("prerouter: no head owner in layers ", first, "..", last, " (owners are layers ", all.front(), "..",
         all.back(), " whose next layer is MoE as well)");
  }
  return out;
}

RoutingTrace record(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens,
                    const std::vector<int64_t>& owners, const CalibrationProgress& progress) {
  return record_routing(m, tokens, owners.front(), owners.back() + 1, [&](int64_t done, int64_t total) {
    if (progress) progress("record", done, total, -1, 0);
  });
}

}  // namespace

Calibration calibrate(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens,
                      const CalibrateOptions& o, const CalibrationProgress& progress) {
  if (!(o.held_out >= 0 && o.held_out < 1)) fail("heldOut must be in [0, 1), got ", o.held_out);
  if (o.train.units < 1 || o.train.steps < 0 || o.train.batch < 1 || !(o.train.lr > 0)) {
    fail("calibration needs units ≥ 1, steps ≥ 0, batch ≥ 1 and lr > 0");
  }
  const std::vector<int64_t> owners = owners_in(*m, o.first_owner, o.last_owner);
  const RoutingTrace trace = record(m, tokens, owners, progress);
  const int64_t T = trace.tokens();
  const int64_t split = std::max<int64_t>(2, static_cast<int64_t>(T * (1 - o.held_out)));
  const std::vector<int64_t> train = head_samples(trace, 0, split - 1), held = head_samples(trace, split, T);
  const int64_t E = m->cfg.router.n_experts;
  std::unique_ptr<ThreadPool> pool = o.threads > 1 ? std::make_unique<ThreadPool>(o.threads) : nullptr;
  const auto zero = Prerouter::zero_training(*m);
  Calibration out;
  out.tokens = T;
  const int64_t total_steps = static_cast<int64_t>(owners.size()) * o.train.steps;
  for (size_t i = 0; i < owners.size(); ++i) {
    const int64_t owner = owners[i];
    HeadReport r;
    r.owner = owner;
    r.train_samples = static_cast<int64_t>(train.size());
    r.held_out_samples = static_cast<int64_t>(held.size());
    r.recall_before = head_recall(*m, *zero, owner, trace, train);
    r.held_out_recall_before = head_recall(*m, *zero, owner, trace, held);
    HeadFloats h = zero_training_floats(*m, owner, o.train.units, o.train.seed);
    r.loss_before = head_loss(h, trace, train, E);
    train_head(h, trace, train, E, o.train, pool.get(), [&](int step, double loss) {
      if (progress) progress("train", static_cast<int64_t>(i) * o.train.steps + step, total_steps, owner, loss);
    });
    round_to_f16(h);
    r.loss_after = head_loss(h, trace, train, E);
    std::vector<HeadFloats> one{h};
    const auto trained = Prerouter::from_floats(*m, std::move(one), "calibration");
    r.recall_after = head_recall(*m, *trained, owner, trace, train);
    r.held_out_recall_after = head_recall(*m, *trained, owner, trace, held);
    out.reports.push_back(r);
    out.heads.push_back(std::move(h));
  }
  return out;
}

std::vector<EvalReport> evaluate_heads(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens,
                                       const std::string& heads_path, const CalibrationProgress& progress) {
  const auto heads = Prerouter::from_file(*m, heads_path);
  const std::vector<int64_t> owners = heads->owners();
  const RoutingTrace trace = record(m, tokens, owners, progress);
  const std::vector<int64_t> all = head_samples(trace, 0, trace.tokens());
  const auto zero = Prerouter::zero_training(*m);
  std::vector<EvalReport> out;
  for (int64_t owner : owners) {
    EvalReport r;
    r.owner = owner;
    r.samples = static_cast<int64_t>(all.size());
    r.recall = head_recall(*m, *heads, owner, trace, all);
    r.zero_training_recall = head_recall(*m, *zero, owner, trace, all);
    out.push_back(r);
  }
  return out;
}

}  // namespace bs
