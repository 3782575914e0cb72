// Page-aligned anonymous buffers: slot slabs, whole-layer buffers and the bounce buffers of
// direct (O_DIRECT) reads, which need aligned memory, file offsets and lengths. Whole pages of
// their own (mmap), so a device can wrap one without a copy (Metal's newBufferWithBytesNoCopy
// takes page-aligned, page-sized, VM-allocated memory; pages are 16 KiB on Apple silicon).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

namespace bs {

// Alignment of direct reads: a multiple of every logical block size in use (512, 4096).
constexpr uint64_t kIoAlign = 4096;

inline uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { reset(bytes); }
  ~AlignedBuffer() { release(); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept : p_(o.p_), n_(o.n_), mapped_(o.mapped_) {
    o.p_ = nullptr, o.n_ = 0, o.mapped_ = 0;
  }

  // Replaces the contents with `bytes` zeroed bytes (throws std::bad_alloc).
  void reset(size_t bytes) {
    release();
    if (bytes == 0) return;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t mapped = align_up(align_up(bytes, kIoAlign), page);
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<uint8_t*>(p);
    n_ = bytes;
    mapped_ = mapped;
    std::memset(p_, 0, mapped_);  // touched now, not in the middle of a decode
  }
  uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  // The whole pages held (≥ size()): what a device wraps.
  size_t mapped() const { return mapped_; }

 private:
  void release() {
    if (p_) ::munmap(p_, mapped_);
    p_ = nullptr, n_ = 0, mapped_ = 0;
  }
  uint8_t* p_ = nullptr;
  size_t n_ = 0, mapped_ = 0;
};

}  // namespace bs
