// The namespace the CUDA sources' code lives in: bs::cuda, or bs::cuda_emu when the native tests
// compile the same sources as C++ against the CPU emulation (BS_CUDA_EMULATION).
#pragma once
#ifdef BS_CUDA_EMULATION
#define BS_CUDA_NS cuda_emu
#else
#define BS_CUDA_NS cuda
#endif
