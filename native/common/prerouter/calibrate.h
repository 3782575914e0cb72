// `prerouter calibrate` and `prerouter eval`: record the teacher's routing over a text, train
// the heads of a range of owner layers from the zero-training head, and report each head's
// top-k recall against the true router before and after (on the text's first part and on the
// held-out tail). Eval reports the recall of a heads file next to the zero-training heads.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/prerouter/trainer.h"

namespace bs {

struct CalibrateOptions {
  int64_t first_owner = -1, last_owner = -1;  // -1: every owner the model has
  double held_out = 0.1;                      // fraction of the tokens kept for evaluation
  int threads = 1;                            // optimiser threads
  TrainOptions train;
};

struct HeadReport {
  int64_t owner = 0;
  int64_t train_samples = 0, held_out_samples = 0;
  double loss_before = 0, loss_after = 0;      // cross-entropy on the training samples
  double recall_before = 0, recall_after = 0;  // on the training samples
  double held_out_recall_before = 0, held_out_recall_after = 0;
};

struct Calibration {
  int64_t tokens = 0;
  std::vector<HeadReport> reports;
  std::vector<HeadFloats> heads;  // trained, rounded to fp16
};

// phase "record" (done = tokens) or "train" (done = steps over all heads; loss of the last batch).
using CalibrationProgress =
    std::function<void(const char* phase, int64_t done, int64_t total, int64_t owner, double loss)>;

Calibration calibrate(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens,
                      const CalibrateOptions& o, const CalibrationProgress& progress);

struct EvalReport {
  int64_t owner = 0, samples = 0;
  double recall = 0, zero_training_recall = 0;
};

// Recall of the heads in `heads_path` and of the zero-training heads over every token of `tokens`.
std::vector<EvalReport> evaluate_heads(const std::shared_ptr<const Model>& m, const std::vector<int32_t>& tokens,
                                       const std::string& heads_path, const CalibrationProgress& progress);

}  // namespace bs
