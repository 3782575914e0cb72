// A bs::metal::Device that runs the embedded Metal kernels through native/metal/msl-shim.h on
// the CPU: what the native tests check the Metal kernel set with where there is no Mac.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "harness.h"
#include "metal/metal-backend.h"
#include "metal/metal-device.h"

namespace bt {

class ShimDevice : public bs::metal::Device {
 public:
  bool refuse_wraps = false;                   // exercise the copy path for weights
  uint64_t seed = 1;                           // shuffles the lanes' order in every phase
  int dispatches = 0, commits = 0, wraps = 0;  // commits: command lists run
  std::map<std::string, int> by_kernel;        // dispatches run, by kernel name

  std::string name() const override { return "msl-shim (CPU)"; }
  uint64_t working_set_budget() const override { return uint64_t{1} << 30; }
  std::unique_ptr<bs::metal::Buffer> alloc(size_t bytes) override;
  std::unique_ptr<bs::metal::Buffer> wrap(void* p, size_t bytes) override;
  std::unique_ptr<bs::metal::CommandList> begin() override;
};

// The device the op tests run on, installed as the table's device for one test: the shim, or
// with BRAINSTEM_TEST_METAL=gpu the system's GPU (test/device/metal-check.sh on a Mac).
struct MetalTestDevice {
  ShimDevice shim;
  bs::metal::Device* dev;
  MetalTestDevice() : dev(on_gpu() ? bs::metal::system_device() : &shim) { bs::metal::use_device(dev); }
  ~MetalTestDevice() { bs::metal::use_device(nullptr); }
  static bool on_gpu() {
    const char* e = std::getenv("BRAINSTEM_TEST_METAL");
    return e && std::string(e) == "gpu";
  }
  // False (with the reason in the test's failures) when the GPU was asked for and is missing.
  bool ready(bt::T& t) const {
    EXPECT(dev) << "BRAINSTEM_TEST_METAL=gpu but no Metal device: " << bs::metal::system_device_error();
    return dev != nullptr;
  }
};

// The kernel functions the shim can run (every kernel of the embedded sources).
std::vector<std::string> shim_kernel_names();

// Shim self-checks on tiny kernels written to break the rules; each returns the scheduler's
// error message ("" when it ran): lanes of a simdgroup at different calls, a barrier some
// threads returned before, and a 32-lane sum of lane ids (returned through `sum`).
std::string shim_divergent_simd();
std::string shim_barrier_after_return();
std::string shim_lane_sum(float& sum);
// Threads of 8 groups that read a neighbour simdgroup's threadgroup slot before it was written
// (with `barrier` false the kernel lacks its threadgroup_barrier: the shuffled order shows it).
int shim_stale_reads(bool barrier);

}  // namespace bt
