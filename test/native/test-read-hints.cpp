// The read-hint gate by hand: hints stay on while storage is read, go off after `patience`
// quiet passes, come back at the first read, and wait twice as long before the next switch-off.
// range_resident on pages this test touched, and on an address range nothing maps.
#include "common/io/read-hints.h"

#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

namespace {

// Steps g with `n` passes that read nothing (the counter stays at `at`).
void quiet(bs::HintGate& g, uint64_t at, int n) {
  for (int i = 0; i < n; ++i) bs::hint_gate_step(g, at);
}

// qemu-user (the arm64 check) accepts every madvise advice and does nothing, so a populate
// there neither faults pages in nor notices an unmapped range; a real kernel refuses a page
// just unmapped (ENOMEM).
bool madvise_is_a_no_op(size_t page) {
#if defined(MADV_POPULATE_READ)
  void* q = ::mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) return false;
  ::munmap(q, page);
  return ::madvise(q, page, MADV_POPULATE_READ) == 0;
#else
  return false;
#endif
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

TEST(range_resident_sees_touched_pages_and_refuses_unmapped_ranges) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(p != MAP_FAILED);
  auto* b = static_cast<unsigned char*>(p);
  std::vector<unsigned char> pages;
  for (size_t i = 0; i < 4 * page; i += page) b[i] = 1;
  EXPECT(bs::range_resident(b + 100, 3 * page, pages)) << "touched pages, unaligned start";
  EXPECT(bs::range_resident(b, 0, pages)) << "an empty range";
  ::munmap(b + 2 * page, 2 * page);
  EXPECT(!bs::range_resident(b, 4 * page, pages)) << "half the range is not mapped: the caller must read";
  ::munmap(b, 2 * page);
}

TEST(populate_read_maps_a_range_and_refuses_unmapped_ones) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(p != MAP_FAILED);
  auto* b = static_cast<unsigned char*>(p);
  if (!bs::populate_read(b + 10, 2 * page)) {
    ::munmap(b, 4 * page);
    t.skip("MADV_POPULATE_READ is not available (Linux 5.14+): warms read through the bounce buffer");
    return;
  }
  if (madvise_is_a_no_op(page)) {
    ::munmap(b, 4 * page);
    t.skip("madvise succeeds on an unmapped page here: an emulator (qemu-user) that ignores madvise");
    return;
  }
  std::vector<unsigned char> pages;
  EXPECT(bs::range_resident(b + 10, 2 * page, pages)) << "populated pages are resident";
  ::munmap(b + 2 * page, 2 * page);
  EXPECT(!bs::populate_read(b, 4 * page)) << "half the range is not mapped";
  ::munmap(b, 2 * page);
}
