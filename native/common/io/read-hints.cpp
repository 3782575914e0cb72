#include "common/io/read-hints.h"

#include <sys/resource.h>

#include <algorithm>

namespace bs {

void hint_gate_step(HintGate& g, uint64_t storage_reads) {
  const bool read = storage_reads != g.last;
  g.last = storage_reads;
  if (!g.primed) {  // the first sample has nothing to compare with
    g.primed = true;
    return;
  }
  if (read) {
    // Reads came back while hints were off (pages evicted since): the next quiet spell must
    // be longer before they go off again, so a model on the edge of memory keeps its hints.
    if (!g.on) g.patience = std::min(2 * g.patience, HintGate::kMaxPatience);
    g.on = true;
    g.quiet = 0;
    return;
  }
  if (g.on && ++g.quiet >= g.patience) g.on = false;
}

bool process_storage_reads(uint64_t& out) {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return false;
  out = static_cast<uint64_t>(u.ru_inblock) + static_cast<uint64_t>(u.ru_majflt);
  return true;
}

}  // namespace bs
