// A file mapped read-only into memory. Its pages are file-backed (they count as RssFile
// and the OS may drop them), so weights are never copied into anonymous memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace bs {

// Opens `path` read-only as a regular file (fd, close-on-exec) or throws naming the path. Opened
// non-blocking, so a FIFO or device swapped in after the daemon's checks fails here at once
// instead of blocking a worker thread; `extra` adds flags such as O_DIRECT; `size` gets its bytes.
int open_regular(const std::string& path, int extra = 0, uint64_t* size = nullptr);
// Throws bs::Error when the file open as `fd` is now shorter than `size`, its bytes at load: its
// mapping would fault (SIGBUS) past the new end.
void check_unshrunk(int fd, const std::string& path, uint64_t size);

class MappedFile {
 public:
  // Throws bs::Error naming the path and the OS error.
  static std::unique_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Throws bs::Error when the file shrank since it was mapped (see check_unshrunk).
  void check_size() const;

 private:
  MappedFile() = default;
  std::string path_;
  int fd_ = -1;  // kept open: fstat sees the mapped file even after a rename over its path
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The live mapping that holds [p, p + n) (id 0 when none): a mapping's bytes never change while
// it lives, so a device copy of them stays valid exactly as long as the same id answers.
struct MappedSpan {
  uint64_t id = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
};
MappedSpan find_mapping(const void* p, size_t n);
// Other memory whose bytes stay unchanged until unregistered (benchmarks' weights) joins the
// same registry, so device backends keep copies of it as of mapped files.
void register_immutable(const void* p, size_t n);
void unregister_immutable(const void* p);

}  // namespace bs
