// Page-aligned anonymous buffers: slot slabs, whole-layer buffers and the bounce buffers of
// direct (O_DIRECT) reads, which need aligned memory, file offsets and lengths.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
  ~AlignedBuffer() { std::free(p_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }

  // Replaces the contents with `bytes` zeroed bytes (throws std::bad_alloc).
  void reset(size_t bytes) {
    std::free(p_);
    p_ = nullptr;
    n_ = 0;
    if (bytes == 0) return;
    void* p = nullptr;
    if (posix_memalign(&p, kIoAlign, align_up(bytes, kIoAlign)) != 0) throw std::bad_alloc();
    p_ = static_cast<uint8_t*>(p);
    n_ = bytes;
    std::memset(p_, 0, align_up(bytes, kIoAlign));
  }
  uint8_t* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace bs
