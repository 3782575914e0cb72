// `--cuda-decoder` on the real CUDA device (BRAINSTEM_TEST_CUDA=gpu): cuda-decoder-probe.h over
// bs::cuda::CudaDecoder, or why it cannot run in this build or on this machine.
#include <cstdio>

#include "decode-probe.h"
#ifdef BRAINSTEM_WITH_CUDA
#include "cuda-decoder-probe.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/device-context.cuh"
#endif

namespace bt {

int cuda_device_decoder_probe(const std::shared_ptr<const bs::Model>& model, int tokens, bool bench, int slots) {
#ifndef BRAINSTEM_WITH_CUDA
  std::fprintf(stderr, "cuda decoder probe: the CUDA set is not compiled into this build (no nvcc)\n");
  return 1;
#else
  const bs::cuda::DeviceInfo& d = bs::cuda::device_info();
  if (!d.usable) {
    std::fprintf(stderr, "cuda decoder probe: %s\n", d.why.c_str());
    return 1;
  }
  // The host waits the library counts (the emulation checks that count against its own).
  const auto waits = [] { return static_cast<int64_t>(bs::cuda::host_waits()); };
  return cuda_decoder_run<bs::cuda::CudaDecoder>(
      model, tokens, bench, slots, d.name,
      {waits, waits, [] { return bs::cuda::bytes_to_host(); }, [] { return bs::cuda::copies_to_device(); }});
#endif
}

}  // namespace bt
