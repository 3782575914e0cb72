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
      [] { return int64_t{bs::cuda_emu::emu::device().syncs}; },
      [] { return static_cast<int64_t>(bs::cuda_emu::host_waits()); }, [] { return bs::cuda_emu::bytes_to_host(); });
}

}  // namespace bt
