// The two kernels only the whole-token CUDA decoder uses, over the CPU emulation: argmax (greedy
// sampling on the device: the first largest wins as std::max_element, NaNs never) and the f16
// conversion of KV rows (bit-exact with the reference's f32_to_f16). The decoder itself is
// checked against the CPU engine by cuda-decoder.test.ts.
#define BS_CUDA_EMULATION 1
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/dtype.h"
#include "cuda/argmax.cuh"
#include "cuda/cuda-api.h"
#include "cuda/to-half.cuh"
#include "harness.h"

namespace {

// -2 when the launch fails.
int32_t device_argmax(const std::vector<float>& x) {
  int32_t out = -1;
  if (bs::cuda_emu::launch_argmax(x.data(), static_cast<int64_t>(x.size()), &out, nullptr) != bs::cuda_emu::cudaSuccess)
    return -2;
  return out;
}

}  // namespace

TEST(cuda_emu_argmax_takes_the_first_largest_and_skips_nans) {
  bt::Rng rng(5);
  std::vector<float> x(1000);
  for (float& v : x) v = static_cast<float>(rng.uniform(-4.0, 4.0));
  x[700] = x[300] = 9.0f;  // a tie across threads: the lower index
  EXPECT(device_argmax(x) == 300) << device_argmax(x);
  x[10] = std::numeric_limits<float>::quiet_NaN();
  EXPECT(device_argmax(x) == 300) << "a NaN never wins";
  std::vector<float> small = {1.0f, 3.0f, 3.0f};
  EXPECT(device_argmax(small) == 1);
  std::vector<float> nans(40, std::numeric_limits<float>::quiet_NaN());
  EXPECT(device_argmax(nans) == 0) << "nothing compares: 0";
  // Seeded lengths, every offset (16-byte aligned or not) and every lane of a float4 holding the
  // first largest, a tie after it, a tail past the float4 loads: the first largest, as
  // std::max_element.
  for (int c = 0; c < 16; ++c) {
    bt::Rng r(500 + c);
    const size_t n = 8 + r.below(9000), off = c % 4;
    std::vector<float> buf(n + off);
    for (float& v : buf) v = static_cast<float>(r.below(50));
    const size_t pos = std::min<size_t>(n - 2, 4 * r.below(n / 4) + c / 4);
    buf[off + pos] = 99.0f;
    buf[off + pos + 1 + static_cast<size_t>(r.below(n - pos - 1))] = 99.0f;
    const auto want = static_cast<int32_t>(pos);
    int32_t got = -1;
    EXPECT(bs::cuda_emu::launch_argmax(buf.data() + off, static_cast<int64_t>(n), &got, nullptr) ==
           bs::cuda_emu::cudaSuccess);
    EXPECT(got == want) << "seed " << 500 + c << " n " << n << " offset " << off << ": got " << got << " want " << want;
  }
}

TEST(cuda_emu_to_half_matches_the_reference_bit_for_bit) {
  bt::Rng rng(6);
  std::vector<float> x(777);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(rng.uniform(-1.0, 1.0)) * std::ldexp(1.0f, static_cast<int>(i % 40) - 24);
  x[0] = 65504.0f, x[1] = 1e6f, x[2] = -0.0f, x[3] = std::numeric_limits<float>::infinity();
  std::vector<uint16_t> out(x.size());
  EXPECT(bs::cuda_emu::launch_to_half(x.data(), static_cast<int64_t>(x.size()), out.data(), nullptr) ==
         bs::cuda_emu::cudaSuccess);
  for (size_t i = 0; i < x.size(); ++i) EXPECT(out[i] == bs::f32_to_f16(x[i])) << "element " << i << ": " << x[i];
}
