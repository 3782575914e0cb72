// The GPU as the Metal kernel set sees it, behind opaque handles: plain C++, so the engine stays
// platform-free. metal-device.mm implements it over Metal on macOS; the native tests implement it
// over msl-shim.h, running the same kernel sources as C++ on the CPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bs::metal {

// Memory the CPU and the GPU share (Apple silicon's unified memory).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint8_t* contents() = 0;
  virtual size_t size() const = 0;
};

// One kernel argument, bound at [[buffer(i)]] for its index i in the list: a buffer at an
// offset, or a small parameter block copied into the command (`bytes`).
struct Arg {
  Buffer* buf = nullptr;
  size_t offset = 0;
  const void* bytes = nullptr;
  size_t len = 0;
};

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

// One command buffer: dispatches run in order (each sees the previous ones' writes) once
// committed; nothing runs before commit.
class CommandList {
 public:
  virtual ~CommandList() = default;
  // `kernel` names a kernel function of the embedded sources; `threads` per threadgroup (1-D).
  virtual void dispatch(const char* kernel, Grid groups, uint32_t threads, const std::vector<Arg>& args) = 0;
  // Runs the dispatches and waits; throws bs::Error with the device's message on failure.
  virtual void commit_and_wait() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // Bytes the GPU may keep resident (recommendedMaxWorkingSetSize): the memory budget on a Mac.
  virtual uint64_t working_set_budget() const = 0;
  virtual std::unique_ptr<Buffer> alloc(size_t bytes) = 0;
  // A buffer over existing memory without a copy (weights in the mmapped files): `p` and
  // `bytes` page-aligned. nullptr when the device refuses the range.
  virtual std::unique_ptr<Buffer> wrap(void* p, size_t bytes) = 0;
  virtual std::unique_ptr<CommandList> begin() = 0;
};

// The system's GPU (macOS builds with BRAINSTEM_WITH_METAL), created on first use; nullptr
// elsewhere or when it fails, with the reason in system_device_error().
Device* system_device();
const std::string& system_device_error();

// The kernel sources embedded at build time (params.h, prelude.metal, then the kernel files).
struct Source {
  const char* name;
  const char* text;
};
const std::vector<Source>& embedded_sources();
// All of them as one compilation unit (what newLibraryWithSource compiles).
std::string library_source();

}  // namespace bs::metal
