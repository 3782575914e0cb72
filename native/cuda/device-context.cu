#include "cuda/device-context.cuh"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/error.h"
#include "common/mmap-file.h"

namespace bs::BS_CUDA_NS {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("cuda: ", what, ": ", cudaGetErrorString(e));
}

namespace {
std::atomic<uint64_t> waits{0}, read_back{0}, uploads{0};
}  // namespace

cudaError_t wait_stream(cudaStream_t s) {
  waits.fetch_add(1, std::memory_order_relaxed);
  return cudaStreamSynchronize(s);
}

cudaError_t wait_event(cudaEvent_t e) {
  waits.fetch_add(1, std::memory_order_relaxed);
  return cudaEventSynchronize(e);
}

cudaError_t copy_to_host(void* host, const void* dev, size_t bytes, cudaStream_t s) {
  read_back.fetch_add(bytes, std::memory_order_relaxed);
  return cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s);
}

cudaError_t copy_to_device(void* dev, const void* host, size_t bytes, cudaStream_t s) {
  uploads.fetch_add(1, std::memory_order_relaxed);
  return cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
}

uint64_t host_waits() { return waits.load(std::memory_order_relaxed); }

uint64_t bytes_to_host() { return read_back.load(std::memory_order_relaxed); }

uint64_t copies_to_device() { return uploads.load(std::memory_order_relaxed); }

cudaError_t update_or_instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, bool* built) {
#if defined(CUDART_VERSION) && CUDART_VERSION < 12000
  cudaGraphNode_t failed = nullptr;
  cudaGraphExecUpdateResult result{};
  const bool updated = *exec && cudaGraphExecUpdate(*exec, graph, &failed, &result) == cudaSuccess;
#else
  cudaGraphExecUpdateResultInfo info{};
  const bool updated = *exec && cudaGraphExecUpdate(*exec, graph, &info) == cudaSuccess;
#endif
  *built = !updated;
  if (updated) return cudaSuccess;
  if (*exec) {
    cudaGetLastError();  // the refused update's error is not the caller's
    cudaGraphExecDestroy(*exec);
    *exec = nullptr;
  }
#if defined(CUDART_VERSION) && CUDART_VERSION < 12000
  return cudaGraphInstantiate(exec, graph, nullptr, nullptr, 0);
#else
  return cudaGraphInstantiate(exec, graph, 0);
#endif
}

namespace {

constexpr size_t kStaging = size_t{8} << 20;  // bytes of each of the two pinned staging buffers

DeviceInfo probe() {
  DeviceInfo d;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    d.why = e != cudaSuccess ? std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")"
                             : std::string("no CUDA device");
    return d;
  }
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    d.why = "cannot read the device's properties";
    return d;
  }
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.integrated = p.integrated != 0;
  d.total_bytes = p.totalGlobalMem;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.free_bytes = free_b;
  if (d.major * 10 + d.minor < 72) {
    d.why = d.name + " has compute capability " + std::to_string(d.major) + "." + std::to_string(d.minor) +
            ", below the 7.2 this build needs";
    return d;
  }
  d.usable = true;
  return d;
}

}  // namespace

const DeviceInfo& device_info(bool reprobe) {
  static DeviceInfo info = probe();
  if (reprobe) info = probe();
  return info;
}

Context::Context() {
  const DeviceInfo& d = device_info();
  if (!d.usable) fail("cuda: ", d.why);
  try {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    for (int i = 0; i < 2; ++i) {
      check(cudaHostAlloc(&pinned_[i], kStaging, cudaHostAllocDefault), "cudaHostAlloc (staging)");
      check(cudaEventCreateWithFlags(&staged_[i], cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
  budget_ = d.free_bytes / 100 * 85;
  stats_.budget = budget_;
}

Context::~Context() { release(); }

void Context::release() {
  if (stream_) wait_stream(stream_);
  for (auto& [key, r] : resident_) cudaFree(r.dev);
  for (void* p : kept_) cudaFree(p);
  for (auto& [id, bases] : registered_) cudaHostUnregister(const_cast<uint8_t*>(std::get<0>(bases)));
  for (Buf& b : pool_) cudaFree(b.p);
  for (int i = 0; i < 2; ++i) {
    if (pinned_[i]) cudaFreeHost(pinned_[i]);
    if (staged_[i]) cudaEventDestroy(staged_[i]);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

void Context::begin() {
  used_ = 0;
  outs_.clear();
  ++call_;
}

void* Context::scratch(size_t bytes) {
  bytes = std::max<size_t>(bytes, 16);
  if (used_ == pool_.size()) pool_.emplace_back();
  Buf& b = pool_[used_++];
  if (b.size < bytes) {
    if (b.p) check(cudaFree(b.p), "cudaFree");
    b = Buf{};
    check(cudaMalloc(&b.p, bytes + bytes / 4), "cudaMalloc (scratch)");
    b.size = bytes + bytes / 4;
  }
  return b.p;
}

void* Context::upload(const void* host, size_t bytes) {
  void* d = scratch(bytes);
  if (bytes) check(copy_to_device(d, host, bytes, stream_), "cudaMemcpyAsync (operand)");
  return d;
}

void Context::finish() {
  for (const Out& o : outs_) {
    check(copy_to_host(o.host, o.dev, o.bytes, stream_), "cudaMemcpyAsync (result)");
  }
  check(wait_stream(stream_), "kernel or copy on the stream");
  outs_.clear();
}

const uint8_t* Context::weight(const void* host, size_t bytes) {
  const MappedSpan span = find_mapping(host, bytes);
  if (span.id != 0 && device_info().integrated) return registered(host, bytes);
  if (span.id != 0) {
    if (const uint8_t* d = make_resident(host, bytes, span.id)) return d;
  }
  ++stats_.per_call_copies;
  return static_cast<const uint8_t*>(upload(host, bytes));
}

const uint8_t* Context::keep(const void* host, size_t bytes) {
  if (device_info().integrated && find_mapping(host, bytes).id != 0) return registered(host, bytes);
  auto* d = static_cast<uint8_t*>(hold(bytes));
  staged_copy(d, host, bytes);
  ++stats_.uploads;
  return d;
}

const uint8_t* Context::mapped(const void* host, size_t bytes) {
  return find_mapping(host, bytes).id != 0 ? registered(host, bytes) : nullptr;
}

void* Context::hold(size_t bytes) {
  void* d = nullptr;
  check(cudaMalloc(&d, std::max<size_t>(bytes, 16)), "cudaMalloc (kept on the device)");
  kept_.push_back(d);
  return d;
}

void Context::release(void* held) {
  const auto it = std::find(kept_.begin(), kept_.end(), held);
  if (it == kept_.end()) return;
  kept_.erase(it);
  check(cudaFree(held), "cudaFree (kept on the device)");
}

const uint8_t* Context::make_resident(const void* host, size_t bytes, uint64_t mapping) {
  const Key key{host, bytes};
  auto it = resident_.find(key);
  if (it != resident_.end() && it->second.mapping != mapping) {  // the file was closed and another mapped there
    stats_.resident_bytes -= it->second.bytes;
    check(cudaFree(it->second.dev), "cudaFree (weight)");
    resident_.erase(it);
    it = resident_.end();
  }
  if (it != resident_.end()) {
    ++stats_.hits;
    it->second.last_call = call_;
    return static_cast<const uint8_t*>(it->second.dev);
  }
  if (!evict_for(bytes)) return nullptr;
  Resident r{mapping, nullptr, bytes, call_};
  if (cudaMalloc(&r.dev, std::max<size_t>(bytes, 1)) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: fall back to a per-call copy
    return nullptr;
  }
  staged_copy(r.dev, host, bytes);
  resident_[key] = r;
  stats_.resident_bytes += bytes;
  ++stats_.uploads;
  return static_cast<const uint8_t*>(r.dev);
}

// Frees the least recently used weights no operand of this call holds until `bytes` more fit.
bool Context::evict_for(size_t bytes) {
  while (stats_.resident_bytes + bytes > budget_) {
    auto victim = resident_.end();
    for (auto it = resident_.begin(); it != resident_.end(); ++it) {
      if (it->second.last_call != call_ &&
          (victim == resident_.end() || it->second.last_call < victim->second.last_call)) {
        victim = it;
      }
    }
    if (victim == resident_.end()) return false;
    check(wait_stream(stream_), "wait before freeing a weight");
    check(cudaFree(victim->second.dev), "cudaFree (weight)");
    stats_.resident_bytes -= victim->second.bytes;
    resident_.erase(victim);
  }
  return true;
}

// Pageable file pages → one of two pinned buffers (the CPU fills one while the other's copy
// runs) → device.
void Context::staged_copy(void* dev, const void* host, size_t bytes) {
  for (size_t off = 0, i = 0; off < bytes; off += kStaging, i ^= 1) {
    const size_t len = std::min(kStaging, bytes - off);
    check(wait_event(staged_[i]), "cudaEventSynchronize (staging)");
    std::memcpy(pinned_[i], static_cast<const uint8_t*>(host) + off, len);
    check(copy_to_device(static_cast<uint8_t*>(dev) + off, pinned_[i], len, stream_), "cudaMemcpyAsync (weight)");
    check(cudaEventRecord(staged_[i], stream_), "cudaEventRecord (staging)");
  }
}

// Integrated memory: the whole mapped file registered once, read by the GPU in place.
const uint8_t* Context::registered(const void* host, size_t bytes) {
  const MappedSpan span = find_mapping(host, bytes);
  auto it = registered_.find(span.id);
  if (it == registered_.end()) {
    for (auto r = registered_.begin(); r != registered_.end();) {  // files closed since
      const uint8_t* base = std::get<0>(r->second);
      if (find_mapping(base, 1).id == r->first) {
        ++r;
        continue;
      }
      cudaHostUnregister(const_cast<uint8_t*>(base));
      cudaGetLastError();
      r = registered_.erase(r);
    }
    void* dev = nullptr;
    auto* base = const_cast<uint8_t*>(span.data);
    check(cudaHostRegister(base, span.size, cudaHostRegisterMapped | cudaHostRegisterReadOnly),
          "cudaHostRegister (mapped weights)");
    check(cudaHostGetDevicePointer(&dev, base, 0), "cudaHostGetDevicePointer");
    it = registered_.emplace(span.id, std::make_tuple(span.data, static_cast<const uint8_t*>(dev))).first;
    ++stats_.uploads;
  } else {
    ++stats_.hits;
  }
  return std::get<1>(it->second) + (static_cast<const uint8_t*>(host) - std::get<0>(it->second));
}

}  // namespace bs::BS_CUDA_NS
