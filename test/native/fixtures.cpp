#include "fixtures.h"

#include <cmath>
#include <cstring>

namespace bt {

void store_float(uint8_t* p, bs::DType t, size_t i, float v) {
  if (t == bs::DType::F32) {
    std::memcpy(p + 4 * i, &v, 4);
  } else {
    const uint16_t h = t == bs::DType::BF16 ? bs::f32_to_bf16(v) : bs::f32_to_f16(v);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

OwnedMatrix random_affine(Rng& r, int64_t n_mats, int64_t rows, int64_t cols, int bits, int group, bs::DType sdtype) {
  OwnedMatrix o;
  bs::WeightMatrix& m = o.m;
  m = {bs::WFormat::Affine, sdtype, bits, group, n_mats, rows, cols};
  o.w.resize(n_mats * rows * m.row_bytes());
  for (uint8_t& b : o.w) b = static_cast<uint8_t>(r.next());
  const size_t ng = static_cast<size_t>(n_mats * rows * m.groups_per_row());
  o.scales.resize(ng * bs::dtype_size(sdtype));
  o.biases.resize(ng * bs::dtype_size(sdtype));
  for (size_t g = 0; g < ng; ++g) {
    const double mag = r.uniform(0.005, 0.05);
    store_float(o.scales.data(), sdtype, g, static_cast<float>(r.next() & 1 ? mag : -mag));
    store_float(o.biases.data(), sdtype, g, static_cast<float>(r.uniform(-0.1, 0.1)));
  }
  m.w = o.w.data();
  m.scales = o.scales.data();
  m.biases = o.biases.data();
  return o;
}

OwnedMatrix random_dense(Rng& r, int64_t n_mats, int64_t rows, int64_t cols, bs::DType dtype) {
  OwnedMatrix o;
  bs::WeightMatrix& m = o.m;
  m = {bs::WFormat::Dense, dtype, 0, 0, n_mats, rows, cols};
  const size_t n = static_cast<size_t>(n_mats * rows * cols);
  o.w.resize(n * bs::dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) store_float(o.w.data(), dtype, i, static_cast<float>(r.uniform(-0.1, 0.1)));
  m.w = o.w.data();
  return o;
}

std::vector<float> random_vec(Rng& r, int64_t n, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(r.normal() * scale);
  return v;
}

Diff compare(const float* a, const float* b, int64_t n, double atol, double rtol) {
  Diff d;
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::fabs(b[i]));
    if (!(e <= d.worst)) {  // NaN counts as worst
      d.worst = std::isnan(e) ? INFINITY : e;
      d.at = i;
    }
  }
  return d;
}

std::vector<uint8_t> safetensors_image(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace bt
