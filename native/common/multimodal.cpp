// The multimodal part of Session::append: checks a MultimodalInput, splices its embeddings into
// the chunk's rows, adds DeepStack features after early layers and keeps the RoPE position
// shift that decode continues from; for hybrid models, keeps image rows and positions so a
// truncation's replay runs them again.
#include <algorithm>

#include "common/error.h"
#include "common/session.h"

namespace bs {

void Session::check_multimodal(const MultimodalInput& mm, int64_t n) const {
  const ModelConfig& c = model_->cfg;
  if (mm.n_rows < 0 || (mm.n_rows > 0 && (!mm.embeds || !mm.rows))) fail("multimodal: embeddings or rows missing");
  for (int64_t r = 0; r < mm.n_rows; ++r) {
    if (mm.rows[r] < 0 || mm.rows[r] >= n || (r > 0 && mm.rows[r] <= mm.rows[r - 1])) {
      fail("multimodal: rows[", r, "] = ", mm.rows[r], " must be ascending token indices in [0, ", n, ")");
    }
  }
  if (mm.n_deep < 0 || mm.n_deep > c.n_layers || (mm.n_deep > 0 && !mm.deepstack)) {
    fail("multimodal: ", mm.n_deep, " deepstack layers given; the model has ", c.n_layers, " layers");
  }
  if (mm.n_deep > 0 && !rec_.empty()) {
    fail("multimodal: ", mm.n_deep, " deepstack layers given; ", c.arch,
         " (recurrent layers, replayed on truncation) takes image rows without DeepStack features");
  }
  if (!mm.positions) return;
  if (c.mrope_section.empty()) fail("multimodal: 3-D positions given but ", c.arch, " has no multimodal RoPE");
  for (int64_t i = 0; i < 3 * n; ++i) {
    if (mm.positions[i] < 0) fail("multimodal: position ", mm.positions[i], " at index ", i, " is negative");
  }
}

void Session::splice_embeddings() {
  const MultimodalInput& in = *mm_->in;
  const int64_t H = model_->cfg.hidden;
  for (int64_t r = mm_->r0; r < mm_->r1; ++r) {
    std::copy_n(in.embeds + r * H, H, x_.data() + (in.rows[r] - mm_->start) * H);
  }
}

void Session::add_deepstack(int64_t layer) {
  const MultimodalInput& in = *mm_->in;
  const int64_t H = model_->cfg.hidden;
  for (int64_t r = mm_->r0; r < mm_->r1; ++r) {
    const float* f = in.deepstack + (layer * in.n_rows + r) * H;
    float* x = x_.data() + (in.rows[r] - mm_->start) * H;
    for (int64_t j = 0; j < H; ++j) x[j] += f[j];
  }
}

void Session::record_positions(int64_t n) {
  const bool mrope = mm_ && mm_->in->positions;
  if (!mrope && shift_.empty()) return;  // text only so far: positions are rows
  if (static_cast<int64_t>(shift_.size()) < n_past_ + n) shift_.resize(n_past_ + n, 0);
  int64_t next = n_past_ + rope_shift(n_past_);  // position after the cached rows
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = n_past_ + t;
    if (mrope) {
      const int32_t* p = mm_->in->positions + mm_->start + t;
      next = std::max<int64_t>(next, std::max({p[0], p[mm_->total], p[2 * mm_->total]}) + 1);
    } else {
      ++next;
    }
    shift_[row] = static_cast<int32_t>(next - (row + 1));
  }
}

void Session::keep_inputs(int64_t n) {
  if (rec_.empty() || replaying_) return;  // text model, or a replay of kept rows
  drop_kept(n_past_);                      // a failed replay may have left rows past the cache
  const int64_t H = model_->cfg.hidden;
  const bool mrope = mm_ && mm_->in->positions;
  if (mrope && kept_pos_.empty()) {
    // Rows so far were text: position = row + shift (time = height = width).
    for (int64_t r = 0; r < n_past_; ++r) kept_pos_.insert(kept_pos_.end(), 3, static_cast<int32_t>(r + rope_shift(r)));
  }
  if (mrope || !kept_pos_.empty()) {  // empty before: the first append, at row 0
    for (int64_t t = 0; t < n; ++t) {
      for (int a = 0; a < 3; ++a) {
        kept_pos_.push_back(mrope ? mm_->in->positions[a * mm_->total + mm_->start + t]
                                  : static_cast<int32_t>(n_past_ + t + rope_shift(n_past_)));
      }
    }
  }
  for (int64_t r = mm_ ? mm_->r0 : 0; mm_ && r < mm_->r1; ++r) {
    kept_rows_.push_back(n_past_ + mm_->in->rows[r] - mm_->start);
    kept_embeds_.insert(kept_embeds_.end(), mm_->in->embeds + r * H, mm_->in->embeds + (r + 1) * H);
  }
}

void Session::drop_kept(int64_t n) {
  if (kept_rows_.empty() && kept_pos_.empty()) return;  // text only: nothing kept
  const size_t rows = std::lower_bound(kept_rows_.begin(), kept_rows_.end(), n) - kept_rows_.begin();
  kept_rows_.resize(rows);
  kept_embeds_.resize(rows * model_->cfg.hidden);
  kept_pos_.resize(std::min<size_t>(kept_pos_.size(), 3 * n));
}

const MultimodalInput* Session::replay_input(int64_t from, int64_t n) {
  const int64_t H = model_->cfg.hidden, len = n - from;
  const int64_t r0 = std::lower_bound(kept_rows_.begin(), kept_rows_.end(), from) - kept_rows_.begin();
  const int64_t r1 = std::lower_bound(kept_rows_.begin(), kept_rows_.end(), n) - kept_rows_.begin();
  if (r0 == r1 && kept_pos_.empty()) return nullptr;
  replay_rows_.resize(r1 - r0);
  for (int64_t r = r0; r < r1; ++r) replay_rows_[r - r0] = kept_rows_[r] - from;
  replay_pos_.resize(kept_pos_.empty() ? 0 : 3 * len);
  for (int64_t t = 0; t < len && !kept_pos_.empty(); ++t) {
    for (int a = 0; a < 3; ++a) replay_pos_[a * len + t] = kept_pos_[3 * (from + t) + a];
  }
  replay_mm_ = {};
  replay_mm_.embeds = kept_embeds_.data() + r0 * H;
  replay_mm_.rows = replay_rows_.data();
  replay_mm_.n_rows = r1 - r0;
  replay_mm_.positions = replay_pos_.empty() ? nullptr : replay_pos_.data();
  return &replay_mm_;
}

}  // namespace bs
