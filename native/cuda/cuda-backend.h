// The CUDA kernel set. Compiled only when CMake finds nvcc (BRAINSTEM_WITH_CUDA); usable only
// when a device of compute capability ≥ 7.2 answers at run time, so a binary built with it
// still loads and runs without a GPU or driver. The native tests also compile it as C++ over
// the CPU emulation (namespace bs::cuda_emu, cuda-emu.h). Plain C++: no CUDA header needed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "common/backend.h"
#include "cuda/cuda-ns.h"

namespace bs::BS_CUDA_NS {

const Backend& backend();
// One line for info() and doctor: the device, its capability and memory, resident weights,
// or why the set is not usable.
std::string describe();
// Whether backend "auto" may choose this set: a usable device, and the smoke subset of the op
// test (a few ops on small seeded inputs against the reference) passing, run once at the first
// ask; else false with the reason in *why.
bool auto_ready(std::string* why);
// A whole-forward decoder for a session of `m` (cuda-decoder.cuh; nullptr, with the reason on
// stderr, when the model or the device cannot take it: the session runs the table op by op).
// Its KV cache starts at 256 rows (initial_rows) and doubles on demand.
std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length);
std::unique_ptr<DeviceDecoder> session_decoder(const Model& m, int64_t context_length, int64_t initial_rows);
// Forgets the device state, a failure and the smoke result (tests: the emulated device changes).
void reset();

}  // namespace bs::BS_CUDA_NS
