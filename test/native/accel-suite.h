// The op checks every accelerator kernel set (Metal through msl-shim.h, CUDA through
// cuda-emu.h, either on a real GPU) runs against the reference kernels on seeded random and
// edge shapes: one function per group of ops, given the set's table. Callbacks reach what lies
// beyond the table (gathered matmul through a slot table, a MoE block, a prerouter head).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/backend.h"
#include "fixtures.h"
#include "harness.h"

namespace bt {

// Elementwise |got - want| ≤ rel · (max|want| + |want|): float32 kernels against the reference's
// float64 accumulation.
void expect_close(T& t, const std::vector<float>& got, const std::vector<float>& want, double rel,
                  const std::string& what);
std::string describe(const bs::WeightMatrix& w);
OwnedMatrix random_quantised(Rng& r, int64_t n_mats);

// Called before each random case with its index (e.g. to switch a shim device's mode).
using CaseHook = std::function<void(int)>;
// gather through a slot table: row i reads matrix slots[ids[i]] of w.
using SlotGather = std::function<void(const bs::WeightMatrix& w, const int32_t* ids, const float* x, int64_t m,
                                      float* y, const int32_t* slots, int64_t n_experts)>;
using MoeBlock = std::function<void(const bs::WeightMatrix& router, const bs::WeightMatrix& gate,
                                    const bs::WeightMatrix& up, const bs::WeightMatrix& down,
                                    const bs::SoftmaxTopKParams& rp, const float* x, int64_t n, float* out)>;
using PrerouterHead =
    std::function<void(const bs::WeightMatrix& linear, const bs::WeightMatrix* fc1, const bs::WeightMatrix* fc2,
                       const float* hidden, const int32_t* cur, const int32_t* prev, int k, float* logits)>;

void check_qmatmul(T& t, const bs::Backend& b, const CaseHook& hook = {});
void check_gather(T& t, const bs::Backend& b, const SlotGather& via_slots);
void check_dense_and_lora(T& t, const bs::Backend& b);
void check_embed(T& t, const bs::Backend& b);
void check_norm_rope_elementwise(T& t, const bs::Backend& b);
void check_attention(T& t, const bs::Backend& b);
void check_routing(T& t, const bs::Backend& b);
// after(c): checks the case may add (e.g. how many dispatches one block took).
void check_moe_block(T& t, const MoeBlock& run, const std::function<void(const std::string&)>& after = {});
void check_prerouter(T& t, const PrerouterHead& run);

}  // namespace bt
