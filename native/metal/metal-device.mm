// The Metal device (macOS): the only file that talks to Metal. Compiled with ARC. The kernel
// library is compiled once from the embedded sources (newLibraryWithSource, safe math, precise
// functions), each pipeline on first use and cached; buffers are shared storage (unified
// memory), weights are wrapped in place with newBufferWithBytesNoCopy.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "metal/metal-device.h"

namespace bs::metal {

namespace {

std::string message(NSError* e) { return e ? std::string(e.localizedDescription.UTF8String) : "unknown error"; }

class MtlBuffer : public Buffer {
 public:
  explicit MtlBuffer(id<MTLBuffer> b) : b_(b) {}
  uint8_t* contents() override { return static_cast<uint8_t*>(b_.contents); }
  size_t size() const override { return b_.length; }
  id<MTLBuffer> get() const { return b_; }

 private:
  id<MTLBuffer> b_;
};

class MtlDevice;

class MtlList : public CommandList {
 public:
  MtlList(MtlDevice& d, id<MTLCommandBuffer> cb) : d_(d), cb_(cb) {
    @autoreleasepool {
      enc_ = [cb_ computeCommandEncoder];
    }
  }
  ~MtlList() override {
    if (!ended_) [enc_ endEncoding];  // a list dropped unrun (an error while staging)
  }
  void dispatch(const char* kernel, Grid g, uint32_t threads, const std::vector<Arg>& args) override;
  void commit_and_wait() override {
    @autoreleasepool {
      [enc_ endEncoding];
      ended_ = true;
      [cb_ commit];
      [cb_ waitUntilCompleted];
      if (cb_.status == MTLCommandBufferStatusError) fail("metal: command buffer failed: ", message(cb_.error));
    }
  }

 private:
  MtlDevice& d_;
  id<MTLCommandBuffer> cb_;
  id<MTLComputeCommandEncoder> enc_;
  bool ended_ = false;
};

class MtlDevice : public Device {
 public:
  explicit MtlDevice(id<MTLDevice> dev) : dev_(dev) {
    @autoreleasepool {
      queue_ = [dev_ newCommandQueue];
      if (!queue_) fail("metal: cannot create a command queue");
      MTLCompileOptions* opts = [MTLCompileOptions new];
#if defined(__MAC_15_0) && __MAC_OS_X_VERSION_MAX_ALLOWED >= __MAC_15_0
      if (@available(macOS 15.0, *)) {
        // Both halves of what fastMathEnabled = NO meant: the functions default to the fast set.
        opts.mathMode = MTLMathModeSafe;
        opts.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;
      } else {
        opts.fastMathEnabled = NO;
      }
#else
      opts.fastMathEnabled = NO;
#endif
      NSError* err = nil;
      const std::string src = library_source();
      lib_ = [dev_ newLibraryWithSource:[NSString stringWithUTF8String:src.c_str()] options:opts error:&err];
      if (!lib_) fail("metal: the kernel sources do not compile: ", message(err));
    }
  }

  std::string name() const override { return dev_.name.UTF8String; }
  uint64_t working_set_budget() const override { return dev_.recommendedMaxWorkingSetSize; }

  std::unique_ptr<Buffer> alloc(size_t bytes) override {
    id<MTLBuffer> b = [dev_ newBufferWithLength:bytes options:MTLResourceStorageModeShared];
    return b ? std::make_unique<MtlBuffer>(b) : nullptr;
  }

  std::unique_ptr<Buffer> wrap(void* p, size_t bytes) override {
    id<MTLBuffer> b = [dev_ newBufferWithBytesNoCopy:p
                                              length:bytes
                                             options:MTLResourceStorageModeShared
                                         deallocator:nil];
    return b ? std::make_unique<MtlBuffer>(b) : nullptr;
  }

  std::unique_ptr<CommandList> begin() override {
    @autoreleasepool {
      id<MTLCommandBuffer> cb = [queue_ commandBuffer];
      if (!cb) fail("metal: cannot create a command buffer");
      return std::make_unique<MtlList>(*this, cb);
    }
  }

  // The pipeline of a kernel function, compiled on first use. The kernels assume 32-lane
  // simdgroups (every Apple GPU's execution width).
  id<MTLComputePipelineState> pipeline(const char* kernel, uint32_t threads) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pipelines_.find(kernel);
    if (it == pipelines_.end()) {
      @autoreleasepool {
        id<MTLFunction> fn = [lib_ newFunctionWithName:[NSString stringWithUTF8String:kernel]];
        if (!fn) fail("metal: no kernel function ", kernel, " in the embedded sources");
        NSError* err = nil;
        id<MTLComputePipelineState> p = [dev_ newComputePipelineStateWithFunction:fn error:&err];
        if (!p) fail("metal: pipeline ", kernel, ": ", message(err));
        if (p.threadExecutionWidth != 32)
          fail("metal: ", kernel, " runs ", p.threadExecutionWidth, "-wide simdgroups, not 32");
        it = pipelines_.emplace(kernel, p).first;
      }
    }
    if (threads > it->second.maxTotalThreadsPerThreadgroup) {
      fail("metal: ", kernel, " takes at most ", it->second.maxTotalThreadsPerThreadgroup,
           " threads per threadgroup, asked ", threads);
    }
    return it->second;
  }

 private:
  id<MTLDevice> dev_;
  id<MTLCommandQueue> queue_;
  id<MTLLibrary> lib_;
  std::mutex mu_;
  std::unordered_map<std::string, id<MTLComputePipelineState>> pipelines_;
};

void MtlList::dispatch(const char* kernel, Grid g, uint32_t threads, const std::vector<Arg>& args) {
  [enc_ setComputePipelineState:d_.pipeline(kernel, threads)];
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.buf) {
      [enc_ setBuffer:static_cast<MtlBuffer*>(a.buf)->get() offset:a.offset atIndex:i];
    } else {
      [enc_ setBytes:a.bytes length:a.len atIndex:i];
    }
  }
  [enc_ dispatchThreadgroups:MTLSizeMake(g.x, g.y, g.z) threadsPerThreadgroup:MTLSizeMake(threads, 1, 1)];
}

std::string& device_error() {
  static std::string e;
  return e;
}

}  // namespace

Device* system_device() {
  static Device* dev = []() -> Device* {
    @autoreleasepool {
      id<MTLDevice> d = MTLCreateSystemDefaultDevice();
      if (!d) {
        device_error() = "no Metal device";
        return nullptr;
      }
      try {
        return new MtlDevice(d);  // lives as long as the process
      } catch (const Error& e) {
        device_error() = e.what();
        return nullptr;
      }
    }
  }();
  return dev;
}

const std::string& system_device_error() { return device_error(); }

}  // namespace bs::metal
