// The read-hint gate by hand: hints stay on while storage is read, go off after `patience`
// quiet passes, come back at the first read, and wait twice as long before the next switch-off.
#include "common/io/read-hints.h"
#include "harness.h"

namespace {

// Steps g with `n` passes that read nothing (the counter stays at `at`).
void quiet(bs::HintGate& g, uint64_t at, int n) {
  for (int i = 0; i < n; ++i) bs::hint_gate_step(g, at);
}

}  // namespace

TEST(read_hints_go_off_after_quiet_passes_and_back_on_at_a_read) {
  bs::HintGate g;
  bs::hint_gate_step(g, 1000);  // first sample: nothing to compare with
  EXPECT(g.on && g.primed && g.last == 1000);
  quiet(g, 1000, 15);
  EXPECT(g.on) << "off after 15 quiet passes (quiet " << g.quiet << ")";
  quiet(g, 1000, 1);
  EXPECT(!g.on) << "still on after 16 quiet passes";
  bs::hint_gate_step(g, 1008);  // pages evicted: the pass read 8 blocks
  EXPECT(g.on && g.quiet == 0 && g.patience == 32)
      << "on " << g.on << " quiet " << g.quiet << " patience " << g.patience;
  quiet(g, 1008, 31);
  EXPECT(g.on);
  quiet(g, 1008, 1);
  EXPECT(!g.on) << "patience 32 not kept";
}

TEST(read_hints_reads_while_on_reset_the_quiet_count_without_growing_patience) {
  bs::HintGate g;
  bs::hint_gate_step(g, 0);
  quiet(g, 0, 10);
  bs::hint_gate_step(g, 5);
  EXPECT(g.on && g.quiet == 0 && g.patience == bs::HintGate::kFirstPatience);
  quiet(g, 5, 15);
  EXPECT(g.on) << "the quiet count restarted at the read";
}

TEST(read_hints_patience_is_capped) {
  bs::HintGate g;
  uint64_t reads = 0;
  bs::hint_gate_step(g, reads);
  for (int cycle = 0; cycle < 12; ++cycle) {
    quiet(g, reads, g.patience);
    EXPECT(!g.on) << "cycle " << cycle << ": on after " << g.patience << " quiet passes";
    bs::hint_gate_step(g, ++reads);
  }
  EXPECT(g.patience == bs::HintGate::kMaxPatience) << "patience " << g.patience;
}
