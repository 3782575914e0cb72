// The passes the sampler makes over a vocabulary of logits (~150k floats per token) once per
// token: in JavaScript the argmax took ~0.6 ms and the exponentials ~4 ms (a moe-small token is
// ~25 ms); here ~40 µs and ~0.6 ms.
#pragma once
#include <cstdint>

namespace bs {

// Index of the largest of x[0, n) (the lowest index among equal maxima); NaN never wins; -1
// when no entry is above -infinity.
int64_t argmax_f32(const float* x, int64_t n);

// out[i] = exp((x[i] - max) / temperature) in double (0 for -inf and NaN); returns their sum,
// added in index order.
double exp_shifted(const float* x, int64_t n, double max, double temperature, double* out);

}  // namespace bs
