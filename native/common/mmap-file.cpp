#include "common/mmap-file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "common/error.h"

namespace bs {

namespace {

struct Live {
  size_t size;
  uint64_t id;
};

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Live> by_begin;
  uint64_t next_id = 1;
};

// Leaked: mappings owned by statics may close after every static is destroyed.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

MappedSpan find_mapping(const void* p, size_t n) {
  Registry& r = registry();
  const auto begin = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_begin.upper_bound(begin);
  if (it == r.by_begin.begin()) return {};
  --it;
  if (begin + n > it->first + it->second.size) return {};
  return {it->second.id, reinterpret_cast<const uint8_t*>(it->first), it->second.size};
}

void register_immutable(const void* p, size_t n) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.by_begin[reinterpret_cast<uintptr_t>(p)] = Live{n, r.next_id++};
}

void unregister_immutable(const void* p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.by_begin.erase(reinterpret_cast<uintptr_t>(p));
}

int open_regular(const std::string& path, int extra, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | extra);
  if (fd < 0) fail("cannot open ", path, ": ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail("cannot stat ", path, ": ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, " is not a regular file (",
         S_ISFIFO(st.st_mode)  ? "a FIFO"
         : S_ISDIR(st.st_mode) ? "a folder"
                               : "a device or socket",
         ")");
  }
  // Regular-file reads never block on O_NONBLOCK; cleared anyway so reads keep their usual meaning.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

void check_unshrunk(int fd, const std::string& path, uint64_t size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) fail("cannot stat ", path, ": ", std::strerror(errno));
  if (static_cast<uint64_t>(st.st_size) < size) {
    fail("model file ", path, " shrank from ", size, " to ", static_cast<uint64_t>(st.st_size),
         " bytes since the model was loaded (truncated or rewritten?); reload the model");
  }
}

std::unique_ptr<MappedFile> MappedFile::open(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular(path, 0, &size);
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->fd_ = fd;
  f->size_ = static_cast<size_t>(size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      fail("cannot mmap ", path, " (", f->size_, " bytes): ", std::strerror(errno));  // ~MappedFile closes fd
    }
    f->data_ = static_cast<const uint8_t*>(p);
    register_immutable(p, f->size_);
  }
  return f;
}

void MappedFile::check_size() const {
  if (fd_ >= 0) check_unshrunk(fd_, path_, size_);
}

MappedFile::~MappedFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!data_) return;
  unregister_immutable(data_);
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace bs
