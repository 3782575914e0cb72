// Launch shapes and limits of the CUDA kernels and the element type codes they take, plain
// C++ (the host code and tests see them without CUDA headers): threads of row-parallel and
// elementwise kernels; warps (rows) per matmul block; tokens one matmul pass shares each weight
// load across; the largest head and expert count the attention and routing kernels hold in
// registers.
#pragma once
#include "cuda/cuda-ns.h"

namespace bs::BS_CUDA_NS {

constexpr int kBlock = 256;
constexpr int kMatWarps = 4;
constexpr int kMatTokens = 8;
constexpr int kMatSet = 3;       // matrices one qmatmul launch takes over the same x (q, k, v)
constexpr int kMatRowGroup = 4;  // output rows a lane group computes together in decode (x read once)
constexpr int kMaxHeadDim = 256;
constexpr int kAttnSplits = 32;     // key ranges a decode head's attention is split over, at most
constexpr int kAttnSplitKeys = 32;  // keys per range when splitting
constexpr int kMaxExperts = 512;

// Element type codes passed to kernels.
enum ScaleType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

}  // namespace bs::BS_CUDA_NS
