// What the .cu sources compile against: nvcc and the CUDA runtime, or with BS_CUDA_EMULATION
// (the native tests compile every .cu file as C++) the CPU emulation of cuda-emu.h. Sources put
// their code in namespace bs::BS_CUDA_NS (bs::cuda, or bs::cuda_emu) and launch kernels with
// BS_LAUNCH(kernel, grid, block, stream)(args...), so one text serves both.
#pragma once
#include "cuda/cuda-ns.h"
#ifdef BS_CUDA_EMULATION
#include "cuda/cuda-emu.h"
#define BS_LAUNCH(kernel, grid, block, stream) ::bs::cuda_emu::make_launch(grid, block, stream, #kernel, kernel)
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define BS_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif
