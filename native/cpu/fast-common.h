// The ISA-neutral parts of the fast CPU kernel sets (cpu-avx2, cpu-avx512, cpu-neon*):
// RoPE angle tables, runs of expert ids, and per-thread scratch that grows once and is then reused, so a warm decode
// step allocates nothing. Compiled without ISA flags: the ISA files must not instantiate library templates (std::vector
// growth, ...) whose out-of-line copies the linker could share with plain code.
#pragma once
#include <cstdint>
#include <vector>

#include "common/backend.h"

namespace bs::fast {

// Per-thread scratch buffers, one per slot: at least `bytes` bytes, 16-byte aligned, valid
// until the same thread asks for the same slot again; allocates only when a slot grows.
// Decode kernels on pool workers use only the stack (what a worker would allocate must not
// depend on which ranges it happened to claim); Act, Act2 and their Ints hold laid-out
// activations (a fused gather's two code layouts, each as floats and as integers where its
// runs want both), Gemm is the prefill's per-thread tile, Lora the caller's A·x of a LoRA delta.
enum class Slot : int { Act, Act2, ActInts, Act2Ints, Runs, Gemm, Lora, Count };
void* scratch(Slot slot, size_t bytes);
template <class T>
T* scratch_of(Slot slot, size_t n) {
  return static_cast<T*>(scratch(slot, n * sizeof(T)));
}

// cos/sin of position * theta^(-2i/rot) for i < rot/2 (cos at [0, rot/2), sin after), angles
// in double (positions reach 10^5, where a float angle would be off by ~10^-2 rad). The last
// table is kept per thread: q and k of every layer of a decode step share one (32 pow + cos +
// sin in double were ~10 µs a layer).
const float* rope_table(int32_t position, const RopeParams& p);

// Runs of equal ids in ids[0..m): starts[s], ids of each run; returns the number of runs.
int64_t id_runs(const int32_t* ids, int64_t m, int64_t* starts, int32_t* run_ids);

}  // namespace bs::fast
