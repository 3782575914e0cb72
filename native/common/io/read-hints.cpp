#include "common/io/read-hints.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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

bool populate_read(const void* p, uint64_t len) {
#if defined(MADV_POPULATE_READ)
  if (len == 0) return true;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t lo = reinterpret_cast<uint64_t>(p) / page * page;
  return ::madvise(reinterpret_cast<void*>(lo), reinterpret_cast<uint64_t>(p) + len - lo, MADV_POPULATE_READ) == 0;
#else
  (void)p;
  (void)len;
  return false;
#endif
}

void advise_willneed(const void* p, uint64_t len) {
  if (len == 0) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t lo = reinterpret_cast<uint64_t>(p) / page * page;
  ::madvise(reinterpret_cast<void*>(lo), reinterpret_cast<uint64_t>(p) + len - lo, MADV_WILLNEED);
}

bool range_resident(const void* p, uint64_t len, std::vector<unsigned char>& pages) {
  if (len == 0) return true;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t lo = reinterpret_cast<uint64_t>(p) / page * page;
  const uint64_t span = reinterpret_cast<uint64_t>(p) + len - lo;
  pages.resize((span + page - 1) / page);
#if defined(__APPLE__)
  char* vec = reinterpret_cast<char*>(pages.data());  // macOS declares the vector as char*
#else
  unsigned char* vec = pages.data();
#endif
  if (::mincore(reinterpret_cast<void*>(lo), span, vec) != 0) return false;
  return std::all_of(pages.begin(), pages.end(), [](unsigned char v) { return (v & 1) != 0; });
}

}  // namespace bs
