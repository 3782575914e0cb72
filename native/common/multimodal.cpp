// The multimodal part of Session::append: checks a MultimodalInput, splices its embeddings into
// the chunk's rows, adds DeepStack features after early layers and keeps the RoPE position
// shift that decode continues from.
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

}  // namespace bs
