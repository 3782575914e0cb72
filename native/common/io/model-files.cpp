#include "common/io/model-files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/mmap-file.h"

namespace bs {

const char* io_mode_name(IoMode m) { return m == IoMode::PageCache ? "page-cache" : "direct"; }

namespace {

// Reads until `need` bytes are in dst (or `len`, whichever is larger is asked for); returns
// the bytes read. A direct read may legally come back short only at the end of the file.
uint64_t pread_some(int fd, uint64_t offset, uint64_t len, uint8_t* dst, uint64_t need, const std::string& path,
                    const std::string& what) {
  uint64_t done = 0;
  while (done < len) {
    const ssize_t got = ::pread(fd, dst + done, len - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("I/O error reading ", what, " from ", path, " at offset ", offset + done, ": ", std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<uint64_t>(got);
    if (done < len && static_cast<uint64_t>(got) % kIoAlign != 0) break;  // short read: end of file
  }
  if (done < need) {
    fail("I/O error reading ", what, " from ", path, ": the file ends at byte ", offset + done, " but ", offset + need,
         " bytes are needed; it is shorter than when the model was loaded (truncated or "
         "replaced?); reload the model");
  }
  return done;
}

}  // namespace

ModelFiles::ModelFiles(const std::vector<std::string>& paths, const std::vector<uint64_t>& sizes, IoMode mode)
    : mode_(mode) {
  files_.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    File f;
    f.path = paths[i];
    f.size = sizes[i];
    f.fd = open_regular(f.path);
    files_.push_back(f);
#if defined(POSIX_FADV_RANDOM)
    // Expert reads hop around the file: kernel readahead would read the neighbours too.
    ::posix_fadvise(files_.back().fd, 0, 0, POSIX_FADV_RANDOM);
#elif defined(__APPLE__)
    ::fcntl(files_.back().fd, F_RDAHEAD, 0);  // macOS has no posix_fadvise: readahead off per descriptor
#endif
    if (mode == IoMode::Direct) {
#if defined(__APPLE__)
      // No O_DIRECT on macOS: F_NOCACHE keeps this descriptor's reads out of the buffer cache.
      const int fd = open_regular(f.path);
      if (::fcntl(fd, F_NOCACHE, 1) != 0) {
        const int e = errno;
        ::close(fd);
        fail("direct I/O is not available for ", f.path, " (fcntl F_NOCACHE: ", std::strerror(e),
             "); use ioMode \"page-cache\"");
      }
#elif defined(O_DIRECT)
      const int fd = ::open(f.path.c_str(), O_RDONLY | O_DIRECT | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        fail("direct I/O is not available for ", f.path,
             " on this filesystem (open with O_DIRECT: ", std::strerror(errno), "); use ioMode \"page-cache\"");
      }
#else
      const int fd = -1;
      fail("direct I/O is not supported on this OS; use ioMode \"page-cache\"");
#endif
      // Both opens must name one file: a path swapped between them is refused.
      struct stat a, b;
      if (::fstat(files_.back().fd, &a) != 0 || ::fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        ::close(fd);
        fail("model file ", f.path, " changed while it was being opened; reload the model");
      }
      files_.back().direct_fd = fd;
    }
  }
}

ModelFiles::~ModelFiles() {
  for (File& f : files_) {
    if (f.fd >= 0) ::close(f.fd);
    if (f.direct_fd >= 0) ::close(f.direct_fd);
  }
}

void ModelFiles::read(int fi, uint64_t offset, uint64_t len, uint8_t* dst, ReadScratch& s,
                      const std::string& what) const {
  const File& f = files_[fi];
  if (mode_ == IoMode::PageCache) {
    pread_some(f.fd, offset, len, dst, len, f.path, what);
    return;
  }
  const uint64_t end = offset + len;
  const uint64_t lo = std::min(align_up(offset, kIoAlign), end), hi = std::max(align_down(end, kIoAlign), lo);
  const bool in_place = hi > lo && reinterpret_cast<uintptr_t>(dst + (lo - offset)) % kIoAlign == 0;
  uint8_t* b = s.bounce.data();
  if (in_place) {
    pread_some(f.direct_fd, lo, hi - lo, dst + (lo - offset), hi - lo, f.path, what);
    if (offset < lo) {
      pread_some(f.direct_fd, lo - kIoAlign, kIoAlign, b, kIoAlign, f.path, what);
      std::memcpy(dst, b + (offset - (lo - kIoAlign)), lo - offset);
    }
    if (hi < end) {
      pread_some(f.direct_fd, hi, kIoAlign, b, end - hi, f.path, what);
      std::memcpy(dst + (hi - offset), b, end - hi);
    }
    return;
  }
  // dst does not share the file's block alignment: every block goes through the bounce buffer.
  const uint64_t chunk = s.bounce.size();
  for (uint64_t c = align_down(offset, kIoAlign); c < end; c += chunk) {
    const uint64_t want = std::min(chunk, align_up(end, kIoAlign) - c);
    const uint64_t need = std::min(want, end - c);
    pread_some(f.direct_fd, c, want, b, need, f.path, what);
    const uint64_t from = std::max(c, offset), to = std::min(c + want, end);
    std::memcpy(dst + (from - offset), b + (from - c), to - from);
  }
}

void ModelFiles::warm(int fi, uint64_t offset, uint64_t len, ReadScratch& s, const std::string& what) const {
  const File& f = files_[fi];
  willneed(fi, offset, len);
  const uint64_t chunk = s.bounce.size();
  for (uint64_t c = 0; c < len; c += chunk) {
    const uint64_t n = std::min(chunk, len - c);
    pread_some(f.fd, offset + c, n, s.bounce.data(), n, f.path, what);
  }
}

void ModelFiles::willneed(int fi, uint64_t offset, uint64_t len) const {
#if defined(POSIX_FADV_WILLNEED)
  ::posix_fadvise(files_[fi].fd, static_cast<off_t>(offset), static_cast<off_t>(len), POSIX_FADV_WILLNEED);
#elif defined(__APPLE__)
  // F_RDADVISE takes an int count: longer ranges in pieces.
  for (uint64_t done = 0; done < len;) {
    const uint64_t piece = std::min<uint64_t>(len - done, 1u << 30);
    radvisory ra{static_cast<off_t>(offset + done), static_cast<int>(piece)};
    ::fcntl(files_[fi].fd, F_RDADVISE, &ra);
    done += piece;
  }
#endif
}

void drop_page_cache(const std::string& path) {
#if defined(POSIX_FADV_DONTNEED)
  const int fd = open_regular(path);
  ::fdatasync(fd);
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (rc != 0) fail("cannot drop the cached pages of ", path, ": ", std::strerror(rc));
#else
  fail("dropping a file's cached pages is not supported on this OS (", path, ")");
#endif
}

}  // namespace bs
