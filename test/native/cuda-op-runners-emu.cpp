// cuda-op-runners.h over the CPU emulation of cuda-emu.h (every build).
#define BS_CUDA_EMULATION 1
#include "cuda-op-runners-body.h"

namespace bt {

LinearOps cuda_emu_linear_ops() { return bs::cuda_emu::op_runners::linear("cuda-emu"); }

CudaDecoderOps cuda_emu_decoder_ops() { return bs::cuda_emu::op_runners::decoder("cuda-emu", true); }

}  // namespace bt
