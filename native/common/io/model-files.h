// The model's weight files opened a second time for explicit reads of expert bytes (pread),
// next to their read-only mappings. Explicit reads never fault: a file that shrank under a
// running model gives a read error for that request instead of a SIGBUS, and each read can
// bypass the page cache (direct mode) or carry readahead hints (page-cache mode).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/io/aligned-buffer.h"

namespace bs {

enum class IoMode : uint8_t {
  PageCache,  // buffered reads with readahead off (POSIX_FADV_RANDOM); the page cache keeps hot experts
  Direct,     // O_DIRECT (Linux) / F_NOCACHE (macOS): reads bypass the page cache
};
const char* io_mode_name(IoMode m);

// Per-thread scratch of a reader: aligned bounce space for the partial blocks of direct reads.
struct ReadScratch {
  AlignedBuffer bounce{1 << 20};
  std::vector<unsigned char> pages;  // page-cache residency of a range (mincore)
};

class ModelFiles {
 public:
  // Opens each path (size = its size at load); throws bs::Error naming the file and the OS error.
  ModelFiles(const std::vector<std::string>& paths, const std::vector<uint64_t>& sizes, IoMode mode);
  ~ModelFiles();
  ModelFiles(const ModelFiles&) = delete;
  ModelFiles& operator=(const ModelFiles&) = delete;

  IoMode mode() const { return mode_; }
  size_t count() const { return files_.size(); }
  const std::string& path(int f) const { return files_[f].path; }

  // Reads [offset, offset + len) of file f into dst. Direct mode reads the block-aligned
  // interior straight into dst when dst has the file's alignment, and the partial blocks at the
  // ends through the bounce buffer. Throws bs::Error naming `what`, the file, the offset and
  // the cause (OS error, or the file ending early).
  void read(int f, uint64_t offset, uint64_t len, uint8_t* dst, ReadScratch& s, const std::string& what) const;
  // Brings [offset, offset + len) into the page cache (reads it through the bounce buffer);
  // returns when it is there. Throws like read().
  void warm(int f, uint64_t offset, uint64_t len, ReadScratch& s, const std::string& what) const;
  // Asks the OS to start reading the range in the background (POSIX_FADV_WILLNEED); no error.
  void willneed(int f, uint64_t offset, uint64_t len) const;

 private:
  struct File {
    std::string path;
    uint64_t size = 0;
    int fd = -1;         // buffered, POSIX_FADV_RANDOM
    int direct_fd = -1;  // direct mode only
  };
  std::vector<File> files_;
  IoMode mode_;
};

// Drops the clean page-cache pages of a whole file (POSIX_FADV_DONTNEED), so the next reads
// come from the disk (benchmarks with a cold cache). Throws bs::Error where the OS has no way.
void drop_page_cache(const std::string& path);

}  // namespace bs
