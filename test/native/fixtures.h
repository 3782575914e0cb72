// Random weights, activations and tiny safetensors images for the native tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/quant.h"
#include "harness.h"

namespace bt {

// A WeightMatrix that owns its bytes.
struct OwnedMatrix {
  bs::WeightMatrix m;
  std::vector<uint8_t> w, scales, biases;
  OwnedMatrix() = default;
  OwnedMatrix(const OwnedMatrix&) = delete;
  OwnedMatrix(OwnedMatrix&&) = default;
  OwnedMatrix& operator=(OwnedMatrix&&) = default;  // vector moves keep the buffers, so m stays valid
};

void store_float(uint8_t* p, bs::DType t, size_t i, float v);
// Random codes; scales of both signs with |scale| in [0.005, 0.05]; biases in [-0.1, 0.1].
OwnedMatrix random_affine(Rng& r, int64_t n_mats, int64_t rows, int64_t cols, int bits, int group, bs::DType sdtype);
// Elements in [-0.1, 0.1], rounded to the dtype.
OwnedMatrix random_dense(Rng& r, int64_t n_mats, int64_t rows, int64_t cols, bs::DType dtype);
std::vector<float> random_vec(Rng& r, int64_t n, double scale = 1.0);

// Largest |a - b| / (atol + rtol·|b|) over two arrays, and where it occurs.
struct Diff {
  double worst = 0;
  int64_t at = -1;
};
Diff compare(const float* a, const float* b, int64_t n, double atol, double rtol);

// A safetensors image: 8-byte header length, `header` JSON verbatim, then `data`.
std::vector<uint8_t> safetensors_image(const std::string& header, const std::vector<uint8_t>& data);

}  // namespace bt
