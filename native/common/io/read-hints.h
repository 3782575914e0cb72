// Whether the expert executor sends the OS read-ahead hints (WILLNEED) for routed experts.
// A hint is one syscall per tensor range (9 per expert) that walks the page cache even when
// every page is there: ~1.5 ms of a 25 ms moe-small token. It only pays while experts come
// from storage, so the gate watches the process's storage reads, once per forward pass.
#pragma once
#include <cstdint>
#include <vector>

namespace bs {

struct HintGate {
  static constexpr int kFirstPatience = 16;  // quiet passes before the first switch-off
  static constexpr int kMaxPatience = 4096;
  bool on = true;                 // hints are sent in the coming pass
  bool primed = false;            // `last` holds a sample
  uint64_t last = 0;              // storage reads at the previous sample
  int quiet = 0;                  // passes in a row without storage reads
  int patience = kFirstPatience;  // doubles each time reads resume after a switch-off
};

// One sample of the process's storage reads, taken at the start of a forward pass: any read
// since the last sample turns hints on; `patience` quiet passes in a row turn them off.
void hint_gate_step(HintGate& g, uint64_t storage_reads);

// Blocks this process read from storage plus its major page faults so far (getrusage); false
// when they cannot be read (the caller then keeps hints on).
bool process_storage_reads(uint64_t& out);

// Whether every page of [p, p + len) of a file mapping is in the page cache (mincore; `pages`
// is scratch). False when it cannot tell, so the caller reads the range to be sure.
bool range_resident(const void* p, uint64_t len, std::vector<unsigned char>& pages);

// Maps [p, p + len) of a file mapping into this process's page tables, reading pages that are
// not cached (MADV_POPULATE_READ, Linux 5.14+), so compute touching it later takes no page
// faults. False where the OS has no such call or the range cannot be read (a file cut short:
// an error, never a signal); the caller then reads the range explicitly.
bool populate_read(const void* p, uint64_t len);

// MADV_WILLNEED over [p, p + len) of a file mapping: the OS reads what the page cache lacks in
// large requests, in the background, whatever the mapping's own readahead (MADV_RANDOM) says.
// Nothing is touched, so a file cut short cannot raise SIGBUS here.
void advise_willneed(const void* p, uint64_t len);

}  // namespace bs
