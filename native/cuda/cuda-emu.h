// The CUDA the .cu sources see when the native tests compile them as C++ (BS_CUDA_EMULATION):
// kernels run on the lockstep fiber scheduler (common/lockstep.h: one fiber per thread, 32-lane
// warps whose shuffles resolve only when every live lane reaches them, __syncthreads as the
// group barrier, divergence an error), and the runtime API is a CPU stand-in: device memory is
// host memory with a guard band checked at every synchronisation, streams run in order at once.
// Counters and failure injection (emu::device()) let tests check host synchronisations, uploads
// and the fallback after a device error. Everything lives in namespace bs::cuda_emu so it never
// meets the real runtime linked into the same binary.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/lockstep.h"

namespace bs::cuda_emu {

enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorNoDevice = 100,
  cudaErrorLaunchFailure = 719,
  cudaErrorGraphExecUpdateFailure = 910,
};
enum cudaMemcpyKind : int {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
constexpr unsigned cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2, cudaHostAllocDefault = 0,
                   cudaHostAllocMapped = 2, cudaHostRegisterMapped = 2, cudaHostRegisterReadOnly = 8;

struct dim3 {
  uint32_t x = 1, y = 1, z = 1;
  constexpr dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The vector types the kernels load 16 bytes at a time with.
struct alignas(16) uint4 {
  uint32_t x, y, z, w;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount, integrated, canMapHostMemory;
  size_t totalGlobalMem;
};

struct EmuStream {};
using cudaStream_t = EmuStream*;
using cudaEvent_t = int*;

namespace emu {

// The emulated device, and what tests read and inject.
struct Device {
  bool present = true;          // cudaGetDeviceCount reports 1 (else 0)
  int major = 9, minor = 0;     // compute capability reported
  bool integrated = false;      // reports shared CPU/GPU memory (Jetson)
  int fail_after = -1;          // ≥ 0: that many more runtime calls succeed, then every call fails
  bool fail_launches = false;   // every kernel launch fails (copies still work: a non-sticky error)
  uint64_t seed = 1;            // shuffles the lanes' order in every launch
  int launches = 0, syncs = 0;  // syncs: host waits (stream or event)
  int graph_launches = 0;       // cudaGraphLaunch calls (each replays the graph's recorded work)
  uint64_t h2d_bytes = 0, d2h_bytes = 0;
  int h2d_copies = 0;                   // host → device copies (each a runtime call on a device)
  std::map<void*, size_t> allocations;  // live cudaMalloc pointers and sizes, each with a guard band
  std::string last_launch_error;
};

inline Device& device() {
  static Device d;
  return d;
}

// Counts a runtime call; false once injected failure has started.
inline bool ok() {
  Device& d = device();
  if (d.fail_after < 0) return true;
  if (d.fail_after == 0) return false;
  --d.fail_after;
  return true;
}

// Work a stream capture records instead of running it: 'k' a kernel launch, 'c' a copy, 's' a
// memset. A capture is a chain, so the kinds in order are the graph's topology.
struct Op {
  std::function<void()> run;
  char kind;
};
using Ops = std::vector<Op>;
inline thread_local Ops* capturing = nullptr;

// Runs op in stream order: at once, or into the capture under way.
inline cudaError_t enqueue(cudaStream_t, char kind, const std::function<void()>& op) {
  if (!ok()) return cudaErrorLaunchFailure;
  if (capturing) {
    capturing->push_back({op, kind});
  } else {
    op();
  }
  return cudaSuccess;
}

inline thread_local dim3 grid_dim;

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xa5;

// Whether every live allocation's guard band is intact (no kernel or copy wrote past its end).
inline bool guards_intact() {
  for (const auto& [p, n] : device().allocations) {
    for (size_t i = 0; i < kGuard; ++i) {
      if (static_cast<const uint8_t*>(p)[n + i] != kGuardByte) return false;
    }
  }
  return true;
}

}  // namespace emu

inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    default:
      return emu::device().last_launch_error.empty() ? "unspecified launch failure (emulated)"
                                                     : emu::device().last_launch_error.c_str();
  }
}

inline cudaError_t& last_error() {
  static cudaError_t e = cudaSuccess;
  return e;
}
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = last_error();
  last_error() = cudaSuccess;
  return e;
}

inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = emu::device().present ? 1 : 0;
  return emu::device().present ? cudaSuccess : cudaErrorNoDevice;
}
inline cudaError_t cudaSetDevice(int) { return emu::device().present ? cudaSuccess : cudaErrorNoDevice; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  if (!emu::device().present) return cudaErrorNoDevice;
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "cuda-emu (CPU lockstep emulation)");
  p->major = emu::device().major;
  p->minor = emu::device().minor;
  p->multiProcessorCount = 1;
  p->totalGlobalMem = size_t{1} << 30;
  p->canMapHostMemory = 1;
  p->integrated = emu::device().integrated ? 1 : 0;
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = size_t{1} << 30;
  *free_bytes = *total / 2;
  return cudaSuccess;
}

inline cudaError_t cudaMalloc(void** p, size_t n) {
  if (!emu::ok()) return cudaErrorMemoryAllocation;
  *p = std::aligned_alloc(256, (n + emu::kGuard + 255) / 256 * 256);
  if (!*p) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xff, n);  // NaN-ish garbage: a kernel reading unwritten memory shows
  std::memset(static_cast<uint8_t*>(*p) + n, emu::kGuardByte, emu::kGuard);
  emu::device().allocations[*p] = n;
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  if (p) {
    emu::device().allocations.erase(p);
    std::free(p);
  }
  return cudaSuccess;
}
inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { return cudaMalloc(p, n); }
inline cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
inline cudaError_t cudaHostRegister(void*, size_t, unsigned) { return emu::ok() ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) {
  *d = h;
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  if (kind == cudaMemcpyHostToDevice) emu::device().h2d_bytes += n, ++emu::device().h2d_copies;
  if (kind == cudaMemcpyDeviceToHost) emu::device().d2h_bytes += n;
  return emu::enqueue(s, 'c', [=] { std::memmove(dst, src, n); });
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t s) {
  return emu::enqueue(s, 's', [=] { std::memset(dst, value, n); });
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (!emu::ok()) return cudaErrorLaunchFailure;
  *s = new EmuStream();
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  ++emu::device().syncs;
  if (!emu::guards_intact()) {
    emu::device().last_launch_error = "a kernel or copy wrote past the end of a device buffer";
    return cudaErrorLaunchFailure;
  }
  return emu::ok() ? cudaSuccess : cudaErrorLaunchFailure;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  static int token;
  *e = &token;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventQuery(cudaEvent_t) { return emu::ok() ? cudaSuccess : cudaErrorLaunchFailure; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaStreamSynchronize(nullptr); }

// Graphs: a capture records the stream's work (thread-local mode: this thread's), an
// instantiated graph holds a copy, an update of the same topology replaces it, and each launch
// runs it in order, so a replayed graph reads device memory as of its launch, as on a device.
enum cudaStreamCaptureMode : int {
  cudaStreamCaptureModeGlobal,
  cudaStreamCaptureModeThreadLocal,
  cudaStreamCaptureModeRelaxed
};
struct EmuGraph {
  emu::Ops ops;
};
using cudaGraph_t = EmuGraph*;
using cudaGraphExec_t = EmuGraph*;
enum cudaGraphExecUpdateResult : int { cudaGraphExecUpdateSuccess = 0, cudaGraphExecUpdateErrorTopologyChanged = 2 };
struct cudaGraphExecUpdateResultInfo {
  int result;
};
inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (!emu::ok() || emu::capturing) return cudaErrorLaunchFailure;
  emu::capturing = new emu::Ops();
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  if (!emu::capturing) return cudaErrorLaunchFailure;
  *g = new EmuGraph{std::move(*emu::capturing)};
  delete emu::capturing;
  emu::capturing = nullptr;
  return emu::ok() ? cudaSuccess : cudaErrorLaunchFailure;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  if (!emu::ok()) return cudaErrorLaunchFailure;
  *e = new EmuGraph{g->ops};
  return cudaSuccess;
}
// As on a device, an update keeps the topology: another count or order of node kinds (a kernel
// added, a copy where a kernel was) fails it and the caller instantiates again.
inline cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo* info) {
  if (!emu::ok()) return cudaErrorLaunchFailure;
  const bool same =
      e->ops.size() == g->ops.size() && std::equal(e->ops.begin(), e->ops.end(), g->ops.begin(),
                                                   [](const emu::Op& a, const emu::Op& b) { return a.kind == b.kind; });
  if (!same) {
    if (info) info->result = cudaGraphExecUpdateErrorTopologyChanged;
    return cudaErrorGraphExecUpdateFailure;
  }
  e->ops = g->ops;
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  ++emu::device().graph_launches;
  for (const emu::Op& op : e->ops) {
    if (const cudaError_t r = emu::enqueue(s, op.kind, op.run); r != cudaSuccess) return r;
  }
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
  return cudaSuccess;
}

// kernel<<<grid, block, 0, stream>>>(args...) as BS_LAUNCH(kernel, grid, block, stream)(args...):
// 1-D blocks; a lockstep failure becomes the launch's error, as a faulting kernel would.
template <class... P>
struct Launch {
  dim3 grid, block;
  cudaStream_t stream;
  const char* name;
  void (*kernel)(P...);
  template <class... A>
  void operator()(A&&... args) const {
    const dim3 g = grid;
    const uint32_t threads = block.x;
    const char* n = name;
    auto* k = kernel;
    auto run = [=, params = std::tuple<P...>(std::forward<A>(args)...)] {
      ++emu::device().launches;
      emu::grid_dim = g;
      try {
        lockstep::dispatch(
            {g.x, g.y, g.z}, threads, [&](const lockstep::Thread&) { std::apply(k, params); }, emu::device().seed++);
      } catch (const std::runtime_error& e) {
        emu::device().last_launch_error = std::string(n) + ": " + e.what();
        last_error() = cudaErrorLaunchFailure;
      }
    };
    if (block.y != 1 || block.z != 1 || threads == 0 || threads > 1024 || g.x == 0 || g.y == 0 || g.z == 0) {
      last_error() = cudaErrorInvalidValue;
    } else if (emu::device().fail_launches) {
      emu::device().last_launch_error = std::string(n) + ": launch failed (injected)";
      last_error() = cudaErrorLaunchFailure;
    } else if (const cudaError_t e = emu::enqueue(stream, 'k', run); e != cudaSuccess) {
      last_error() = e;
    }
  }
};
template <class... P>
Launch<P...> make_launch(dim3 grid, dim3 block, cudaStream_t s, const char* name, void (*k)(P...)) {
  return {grid, block, s, name, k};
}

// Device-side names.
inline lockstep::Idx3 thread_idx() { return {lockstep::current().tid, 0, 0}; }
inline lockstep::Idx3 block_idx() { return lockstep::current().tgid; }
inline lockstep::Idx3 block_dim() { return {lockstep::current().threads, 1, 1}; }
inline lockstep::Idx3 grid_dim() { return {emu::grid_dim.x, emu::grid_dim.y, emu::grid_dim.z}; }
inline void __syncthreads() { lockstep::group_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { lockstep::simd_barrier(); }
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return lockstep::simd_shuffle(v, static_cast<uint32_t>(src) & 31u);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  return lockstep::simd_shuffle(v, lockstep::current().lane ^ static_cast<uint32_t>(mask));
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta) {
  const uint32_t lane = lockstep::current().lane;
  return lockstep::simd_shuffle(v, lane + delta < 32 ? lane + delta : lane);
}
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int __ffs(int v) { return __builtin_ffs(v); }
// Lanes run one at a time between scheduling points, so a plain read-modify-write is atomic.
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
// Round-to-nearest product and sum that nvcc never fuses into an FMA (as the C++ reference).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

}  // namespace bs::cuda_emu

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define threadIdx (::bs::cuda_emu::thread_idx())
#define blockIdx (::bs::cuda_emu::block_idx())
#define blockDim (::bs::cuda_emu::block_dim())
#define gridDim (::bs::cuda_emu::grid_dim())
