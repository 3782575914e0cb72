// Host side of the CUDA kernel set: the only file that talks to the CUDA runtime.
// Operands live in host memory (backend.h), so each call copies the matrices and activations
// it needs into grow-only device buffers, runs one kernel and copies the result back. This is
// a correctness port checked op by op against the reference, not yet a fast path: the engine
// does not pick it automatically. A CUDA failure never escapes: the call is finished by the
// reference kernel and the backend reports itself unusable from then on.
#include "cuda/cuda-backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "cuda/add.cuh"
#include "cuda/device-math.cuh"
#include "cuda/qmatmul.cuh"
#include "cuda/rmsnorm.cuh"
#include "cuda/silu-mul.cuh"

namespace bs {

namespace {

std::atomic<bool> g_failed{false};

bool device_present() {
  static const bool present = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return present;
}

bool usable() { return device_present() && !g_failed.load(); }

// A device allocation that only grows; one per operand slot.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t size = 0;
  cudaError_t reserve(size_t bytes) {
    if (bytes <= size) return cudaSuccess;
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    size = 0;
    const cudaError_t e = cudaMalloc(&ptr, bytes);
    if (e == cudaSuccess) size = bytes;
    return e;
  }
};

struct DeviceState {
  std::mutex mu;  // sessions may call from several threads; one call at a time uses the buffers
  cudaStream_t stream = nullptr;
  DeviceBuffer codes, scales, biases, mats, x, y, w;
};

DeviceState& state() {
  static DeviceState s;
  return s;
}

#define BS_CUDA_TRY(expr)             \
  do {                                \
    const cudaError_t e_ = (expr);    \
    if (e_ != cudaSuccess) return e_; \
  } while (0)

int scale_type(DType t) { return t == DType::F32 ? cuda::kF32 : t == DType::F16 ? cuda::kF16 : cuda::kBF16; }

// Copies the listed matrices of a stack, packed in order, and runs y[i] = W[slot_i] · x[i].
cudaError_t run_qmatmul(DeviceState& s, const WeightMatrix& w, const std::vector<int64_t>& mats,
                        const std::vector<int32_t>& slot_of_row, const float* x, int64_t m, float* y) {
  const size_t code_bytes = static_cast<size_t>(w.rows) * w.row_bytes();
  const size_t sb_bytes = static_cast<size_t>(w.rows * w.groups_per_row()) * dtype_size(w.dtype);
  const size_t n = mats.size();
  BS_CUDA_TRY(s.codes.reserve(n * code_bytes));
  BS_CUDA_TRY(s.scales.reserve(n * sb_bytes));
  BS_CUDA_TRY(s.biases.reserve(n * sb_bytes));
  for (size_t j = 0; j < n; ++j) {
    const int64_t mat = mats[j];
    auto* dc = static_cast<uint8_t*>(s.codes.ptr) + j * code_bytes;
    auto* ds = static_cast<uint8_t*>(s.scales.ptr) + j * sb_bytes;
    auto* db = static_cast<uint8_t*>(s.biases.ptr) + j * sb_bytes;
    const size_t sb_off = w.sb_index(mat, 0) * dtype_size(w.dtype);
    BS_CUDA_TRY(cudaMemcpyAsync(dc, w.w_row(mat, 0), code_bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(ds, w.scales + sb_off, sb_bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(db, w.biases + sb_off, sb_bytes, cudaMemcpyHostToDevice, s.stream));
  }
  const size_t x_bytes = static_cast<size_t>(m * w.cols) * sizeof(float);
  const size_t y_bytes = static_cast<size_t>(m * w.rows) * sizeof(float);
  BS_CUDA_TRY(s.x.reserve(x_bytes));
  BS_CUDA_TRY(s.y.reserve(y_bytes));
  BS_CUDA_TRY(s.mats.reserve(slot_of_row.size() * sizeof(int32_t)));
  BS_CUDA_TRY(cudaMemcpyAsync(s.x.ptr, x, x_bytes, cudaMemcpyHostToDevice, s.stream));
  BS_CUDA_TRY(cudaMemcpyAsync(s.mats.ptr, slot_of_row.data(), slot_of_row.size() * sizeof(int32_t),
                              cudaMemcpyHostToDevice, s.stream));
  cuda::QMatArgs a{static_cast<const uint8_t*>(s.codes.ptr),
                   static_cast<const uint8_t*>(s.scales.ptr),
                   static_cast<const uint8_t*>(s.biases.ptr),
                   scale_type(w.dtype),
                   w.bits,
                   w.group,
                   w.rows,
                   w.cols,
                   static_cast<const int32_t*>(s.mats.ptr)};
  BS_CUDA_TRY(cuda::launch_qmatmul(a, static_cast<const float*>(s.x.ptr), m, static_cast<float*>(s.y.ptr), s.stream));
  BS_CUDA_TRY(cudaMemcpyAsync(y, s.y.ptr, y_bytes, cudaMemcpyDeviceToHost, s.stream));
  return cudaStreamSynchronize(s.stream);
}

cudaError_t ensure_stream(DeviceState& s) {
  if (s.stream) return cudaSuccess;
  return cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
}

// Runs `body` under the device lock; on any CUDA error marks the backend failed and returns false
// so the caller finishes the call with the reference kernel.
template <class F>
bool on_device(F&& body) {
  if (!usable()) return false;
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (ensure_stream(s) != cudaSuccess || body(s) != cudaSuccess) {
    g_failed.store(true);
    return false;
  }
  return true;
}

void qmatmul(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, int64_t n, float* y) {
  const std::vector<int32_t> slots(static_cast<size_t>(n), 0);
  if (on_device([&](DeviceState& s) { return run_qmatmul(s, w, {mat}, slots, x, n, y); })) return;
  reference_backend().k.qmatmul(ctx, w, mat, x, n, y);
}

void qmatvec(const ExecCtx& ctx, const WeightMatrix& w, int64_t mat, const float* x, float* y) {
  qmatmul(ctx, w, mat, x, 1, y);
}

void gather_matmul(const ExecCtx& ctx, const WeightMatrix& w, const int32_t* ids, const float* x, int64_t m, float* y) {
  std::vector<int64_t> mats;
  std::vector<int32_t> slots(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    auto it = std::find(mats.begin(), mats.end(), ids[i]);
    if (it == mats.end()) it = mats.insert(mats.end(), ids[i]);
    slots[i] = static_cast<int32_t>(it - mats.begin());
  }
  if (on_device([&](DeviceState& s) { return run_qmatmul(s, w, mats, slots, x, m, y); })) return;
  reference_backend().k.gather_matmul(ctx, w, ids, x, m, y);
}

void rmsnorm(const ExecCtx& ctx, const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
  const bool ok = on_device([&](DeviceState& s) {
    const size_t bytes = static_cast<size_t>(n_rows * d) * sizeof(float);
    BS_CUDA_TRY(s.x.reserve(bytes));
    BS_CUDA_TRY(s.y.reserve(bytes));
    BS_CUDA_TRY(s.w.reserve(static_cast<size_t>(d) * sizeof(float)));
    BS_CUDA_TRY(cudaMemcpyAsync(s.x.ptr, x, bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(s.w.ptr, w, d * sizeof(float), cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cuda::launch_rmsnorm(static_cast<const float*>(s.x.ptr), static_cast<const float*>(s.w.ptr), n_rows, d,
                                     eps, static_cast<float*>(s.y.ptr), s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(y, s.y.ptr, bytes, cudaMemcpyDeviceToHost, s.stream));
    return cudaStreamSynchronize(s.stream);
  });
  if (!ok) reference_backend().k.rmsnorm(ctx, x, w, n_rows, d, eps, y);
}

void silu_mul(const ExecCtx& ctx, const float* gate, const float* up, int64_t n, float* out) {
  const bool ok = on_device([&](DeviceState& s) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    BS_CUDA_TRY(s.x.reserve(bytes));
    BS_CUDA_TRY(s.w.reserve(bytes));
    BS_CUDA_TRY(cudaMemcpyAsync(s.x.ptr, gate, bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(s.w.ptr, up, bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cuda::launch_silu_mul(static_cast<const float*>(s.x.ptr), static_cast<const float*>(s.w.ptr), n,
                                      static_cast<float*>(s.x.ptr), s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(out, s.x.ptr, bytes, cudaMemcpyDeviceToHost, s.stream));
    return cudaStreamSynchronize(s.stream);
  });
  if (!ok) reference_backend().k.silu_mul(ctx, gate, up, n, out);
}

void add(const ExecCtx& ctx, const float* x, float sc, int64_t n, float* y) {
  const bool ok = on_device([&](DeviceState& s) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    BS_CUDA_TRY(s.x.reserve(bytes));
    BS_CUDA_TRY(s.y.reserve(bytes));
    BS_CUDA_TRY(cudaMemcpyAsync(s.x.ptr, x, bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(s.y.ptr, y, bytes, cudaMemcpyHostToDevice, s.stream));
    BS_CUDA_TRY(cuda::launch_add(static_cast<const float*>(s.x.ptr), sc, n, static_cast<float*>(s.y.ptr), s.stream));
    BS_CUDA_TRY(cudaMemcpyAsync(y, s.y.ptr, bytes, cudaMemcpyDeviceToHost, s.stream));
    return cudaStreamSynchronize(s.stream);
  });
  if (!ok) reference_backend().k.add(ctx, x, sc, n, y);
}

bool accepts(Op op, const WeightMatrix* w) {
  switch (op) {
    case Op::QMatVec:
    case Op::QMatMul:
    case Op::GatherMatMul:
      return w && w->quantised() && (w->bits == 4 || w->bits == 8) &&
             (w->group == 32 || w->group == 64 || w->group == 128) && is_float_weight(w->dtype);
    default: return true;
  }
}

}  // namespace

// The ops it ports; the engine takes every other op from the reference.
const Backend& cuda_backend() {
  static const Backend b = {
      .name = "cuda",
      .detail = "CUDA correctness port (qmatmul, gather, rmsnorm, silu_mul, add); copies operands per call",
      .usable = usable,
      .accepts = accepts,
      .k = {.qmatvec = qmatvec,
            .qmatmul = qmatmul,
            .gather_matmul = gather_matmul,
            .rmsnorm = rmsnorm,
            .silu_mul = silu_mul,
            .add = add},
  };
  return b;
}

}  // namespace bs
