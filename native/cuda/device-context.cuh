// The host side's hold on one CUDA device: a stream, grow-only scratch buffers for the
// operands of a call, and weights kept on the device across calls. Weight ranges inside live
// mapped files (common/mmap-file.h) are uploaded once through pinned staging buffers and kept
// (least recently used first out when over the budget), or on an integrated device (Jetson) the
// file's pages are registered and read in place; any other range is copied per call. Not
// thread-safe: the backend calls it under one lock.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda-api.h"

namespace bs::BS_CUDA_NS {

// Throws bs::Error naming the call and CUDA's message when e is not cudaSuccess.
void check(cudaError_t e, const char* what);

// Every host wait on the device (a stream or an event) and every copy between host and device
// go through these, so host_waits(), bytes_to_host() and copies_to_device() say on a real device
// what the emulation counts itself: the synchronisations, the bytes read back and the uploads
// (each a runtime call of a few µs) per append.
cudaError_t wait_stream(cudaStream_t s);
cudaError_t wait_event(cudaEvent_t e);
cudaError_t copy_to_host(void* host, const void* dev, size_t bytes, cudaStream_t s);
cudaError_t copy_to_device(void* dev, const void* host, size_t bytes, cudaStream_t s);
uint64_t host_waits();
uint64_t bytes_to_host();
uint64_t copies_to_device();

// A captured graph into *exec: updated in place where its topology allows, else instantiated
// anew (*built: true). CUDA 11 (Jetson's JetPack 5) and 12 spell both calls differently.
cudaError_t update_or_instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, bool* built);

// The first device as probed once: present, or the reason it is not usable.
struct DeviceInfo {
  bool usable = false;
  std::string why;  // when not usable: no driver, no device, capability below 7.2
  std::string name;
  int major = 0, minor = 0;
  int sms = 0;              // streaming multiprocessors (launch shapes aim for enough blocks)
  bool integrated = false;  // shares memory with the CPU (Jetson)
  size_t total_bytes = 0, free_bytes = 0;
};
// reprobe: look again (the tests' emulated device changes).
const DeviceInfo& device_info(bool reprobe = false);

class Context {
 public:
  Context();  // throws bs::Error when the device cannot be set up
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }

  // One call: begin(), operands, launches, finish() (queued copies back, one host sync).
  void begin();
  void* scratch(size_t bytes);
  template <class T>
  T* in(const T* host, size_t count) {
    return static_cast<T*>(upload(host, count * sizeof(T)));
  }
  template <class T>
  T* out(T* host, size_t count) {
    void* d = scratch(count * sizeof(T));
    outs_.push_back({host, d, count * sizeof(T)});
    return static_cast<T*>(d);
  }
  template <class T>
  T* inout(T* host, size_t count) {
    T* d = in(host, count);
    outs_.push_back({host, d, count * sizeof(T)});
    return d;
  }
  void finish();

  // A weight range on the device (see the file comment); valid until the next begin().
  const uint8_t* weight(const void* host, size_t bytes);
  // Kept on the device for the context's life, outside the budget (a decoder's weights, caches
  // and activations): keep() reads a range in place on an integrated device when it lies in a
  // mapped file, else copies it once through the staging buffers; hold() is uninitialised.
  const uint8_t* keep(const void* host, size_t bytes);
  void* hold(size_t bytes);
  // Frees a hold() before the context ends (a grown cache's old rows, a replaced adapter).
  void release(void* held);
  // The device's address of a range inside a mapped file, the whole file registered (pinned,
  // mapped, read-only) once; nullptr when the range is in no mapped file.
  const uint8_t* mapped(const void* host, size_t bytes);
  // Bytes the resident weights may take (default: 85% of the free memory at creation).
  void set_budget(size_t bytes) { budget_ = bytes; }
  struct Stats {
    size_t budget = 0, resident_bytes = 0;
    uint64_t uploads = 0, hits = 0, per_call_copies = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  void release();  // everything held so far (also when the constructor fails partway)
  struct Buf {
    void* p = nullptr;
    size_t size = 0;
  };
  struct Out {
    void* host;
    const void* dev;
    size_t bytes;
  };
  struct Resident {
    uint64_t mapping = 0;
    void* dev = nullptr;
    size_t bytes = 0;
    uint64_t last_call = 0;
  };
  using Key = std::pair<const void*, size_t>;

  void* upload(const void* host, size_t bytes);
  const uint8_t* make_resident(const void* host, size_t bytes, uint64_t mapping);
  const uint8_t* registered(const void* host, size_t bytes);
  void staged_copy(void* dev, const void* host, size_t bytes);
  bool evict_for(size_t bytes);

  cudaStream_t stream_ = nullptr;
  std::vector<Buf> pool_;
  size_t used_ = 0;
  std::vector<Out> outs_;
  void* pinned_[2] = {nullptr, nullptr};
  cudaEvent_t staged_[2] = {nullptr, nullptr};
  std::map<Key, Resident> resident_;
  std::vector<void*> kept_;
  std::map<uint64_t, std::tuple<const uint8_t*, const uint8_t*>> registered_;  // mapping → (host, device) base
  uint64_t call_ = 0;
  size_t budget_ = 0;
  Stats stats_;
};

}  // namespace bs::BS_CUDA_NS
