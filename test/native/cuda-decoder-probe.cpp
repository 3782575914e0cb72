// `brainstem-native-tests --cuda-decoder DIR TOKENS [bench,f16,slotsK,zero]`: the whole-token CUDA decoder
// (native/cuda/cuda-decoder.cu) on a model folder, over the CPU emulation of cuda-emu.h here, or
// with BRAINSTEM_TEST_CUDA=gpu on the real device (cuda-decoder-device.cpp). The emulation runs
// captured graphs as a plain stream; zero: a zero-training prerouter (CPU and decoder route decode
// steps by its predictions; with slots, predicted experts are fetched first). test/native/cuda-decoder.test.ts runs it.
#define BS_CUDA_EMULATION 1
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/model.h"
#include "common/prerouter/heads.h"
#include "cuda-decoder-probe.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-decoder.cuh"
#include "cuda/device-context.cuh"
#include "decode-probe.h"

namespace bt {

int cuda_decoder_probe(const char* dir, int tokens, bool bench, bool kv_f16, int slots, bool prerouter) {
  bs::LoadOptions opts;
  opts.backend = "cpu-ref";
  opts.kv_f16 = kv_f16;
  std::shared_ptr<bs::Model> loaded = bs::load_model(dir, opts);
  if (prerouter) loaded->prerouter = bs::Prerouter::zero_training(*loaded);
  std::shared_ptr<const bs::Model> model = loaded;
  const char* env = std::getenv("BRAINSTEM_TEST_CUDA");
  if (env && std::string(env) == "gpu") return cuda_device_decoder_probe(model, tokens, bench, slots);
  bs::cuda_emu::device_info(true);
  return cuda_decoder_run<bs::cuda_emu::CudaDecoder>(
      model, tokens, bench, slots, bs::cuda_emu::device_info().name,
      {[] { return int64_t{bs::cuda_emu::emu::device().syncs}; },
       [] { return static_cast<int64_t>(bs::cuda_emu::host_waits()); }, [] { return bs::cuda_emu::bytes_to_host(); },
       [] { return static_cast<uint64_t>(bs::cuda_emu::emu::device().h2d_copies); }});
}

int cuda_decoder_sweep(const char* dir, int slots) {
  namespace emu = bs::cuda_emu::emu;
  bs::LoadOptions opts;
  opts.backend = "cpu-ref";
  const std::shared_ptr<bs::Model> model = bs::load_model(dir, opts);
  std::string leaks;
  int k = 0;
  for (bool built = false; !built; ++k) {
    bs::cuda_emu::reset();
    const size_t before = emu::device().allocations.size();
    emu::device().fail_after = k;
    try {
      bs::cuda_emu::CudaDecoder d(*model, 64, 8, true, slots);
      built = true;
    } catch (const bs::Error&) {
    }
    emu::device().fail_after = -1;
    const size_t after = emu::device().allocations.size();
    if (after != before)
      leaks += (leaks.empty() ? "" : ", ") + std::string("{\"fail_after\": ") + std::to_string(k) +
               ", \"allocations_left\": " + std::to_string(static_cast<long long>(after - before)) + "}";
  }
  bs::cuda_emu::reset();
  std::printf("{\"failure_points\": %d, \"leaks\": [%s]}\n", k - 1, leaks.c_str());
  return 0;
}

}  // namespace bt
