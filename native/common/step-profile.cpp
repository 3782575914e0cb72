#include "common/step-profile.h"

namespace bs {

const char* stage_name(Stage s) {
  static const char* names[] = {
      "embed",       "norms_residual", "attn_proj", "attention", "linear_proj", "linear_recurrence", "router",
      "expert_sort", "gate_up",        "silu_mul",  "down",      "combine",     "dense_mlp",         "lm_head"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Stage::Count));
  return names[static_cast<int>(s)];
}

}  // namespace bs
