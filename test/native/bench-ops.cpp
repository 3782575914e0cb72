// --bench: times every op of every compiled kernel set at decode-sized shapes of a
// Qwen3-30B-A3B layer (hidden 2048, expert 768, 32 q / 4 kv heads of 128).
#include <algorithm>
#include <memory>

#include "cpu/thread-pool.h"

#include "common/backend.h"
#include "common/mmap-file.h"
#include "fixtures.h"

namespace bt {

namespace {

// Weights that stay unchanged while the cases live, registered as such so a device set keeps
// them resident as it keeps a mapped model file's (and not copied per call).
std::shared_ptr<OwnedMatrix> weights(OwnedMatrix&& m) {
  auto each = [](OwnedMatrix* o, auto fn) {
    for (std::vector<uint8_t>* v : {&o->w, &o->scales, &o->biases}) {
      if (!v->empty()) fn(*v);
    }
  };
  auto* owned = new OwnedMatrix(std::move(m));
  each(owned, [](std::vector<uint8_t>& v) { bs::register_immutable(v.data(), v.size()); });
  return std::shared_ptr<OwnedMatrix>(owned, [each](OwnedMatrix* o) {
    each(o, [](std::vector<uint8_t>& v) { bs::unregister_immutable(v.data()); });
    delete o;
  });
}

}  // namespace

std::vector<BenchCase> bench_cases() {
  std::vector<BenchCase> out;
  Rng r(1);
  // Shared inputs live as long as the cases (captured by shared_ptr).
  auto q4 = weights(random_affine(r, 1, 2048, 2048, 4, 64, bs::DType::BF16));
  auto q8 = weights(random_affine(r, 1, 128, 2048, 8, 64, bs::DType::BF16));
  auto dense = weights(random_dense(r, 1, 128, 2048, bs::DType::BF16));
  auto experts = weights(random_affine(r, 16, 768, 2048, 4, 64, bs::DType::BF16));
  auto x = std::make_shared<std::vector<float>>(random_vec(r, 8 * 2048));
  auto y = std::make_shared<std::vector<float>>(262144);
  auto ids = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{0, 2, 3, 5, 8, 9, 12, 15});
  auto kv = std::make_shared<std::vector<float>>(random_vec(r, 1024 * 4 * 128));
  auto runs = std::make_shared<std::vector<int32_t>>(128);
  for (int i = 0; i < 128; ++i) (*runs)[i] = (i / 16) * 2;
  auto runs8 = std::make_shared<std::vector<int32_t>>(64);
  for (int i = 0; i < 64; ++i) (*runs8)[i] = (i / 8) * 2;
  auto q = std::make_shared<std::vector<float>>(random_vec(r, 32 * 128));
  auto kv16 = std::make_shared<std::vector<uint16_t>>(1024 * 4 * 128);
  for (size_t i = 0; i < kv16->size(); ++i) (*kv16)[i] = bs::f32_to_f16((*kv)[i]);
  auto logits = std::make_shared<std::vector<float>>(random_vec(r, 128));
  auto bias = std::make_shared<std::vector<float>>(128, 0.0f);
  auto pos = std::make_shared<std::vector<int32_t>>(1, 1000);
  auto sel = std::make_shared<std::vector<int32_t>>(8);
  auto wts = std::make_shared<std::vector<float>>(8);
  // A rank-16 bf16 LoRA on q_proj (2048 → 4096); the struct keeps A and B alive with the view.
  struct OwnedLora {
    OwnedMatrix a, b;
    bs::LoraWeights w;
  };
  auto lora = std::make_shared<OwnedLora>();
  lora->a = random_dense(r, 1, 16, 2048, bs::DType::BF16);
  lora->b = random_dense(r, 1, 4096, 16, bs::DType::BF16);
  lora->w = bs::LoraWeights{lora->a.m, lora->b.m, 2.0f};
  const double lora_bytes = double(lora->a.m.mat_bytes() + lora->b.m.mat_bytes());
  const std::string lora_shape = "rank 16 bf16 2048 -> 4096 (q_proj)";
  const bs::ExecCtx ctx{};
  // Streaming from DRAM: a head-sized 4-bit matrix (256 MiB of codes, past any L3) on one
  // thread and on two (the pool lives as long as the cases).
  auto big = weights(random_affine(r, 1, 262144, 2048, 4, 64, bs::DType::BF16));
  auto pool = std::make_shared<bs::ThreadPool>(2);
  auto kp = weights(random_affine(r, 1, 256, 1024, 4, 64, bs::DType::BF16));
  auto eg = weights(random_affine(r, 16, 512, 1024, 4, 64, bs::DType::BF16));
  auto ed = weights(random_affine(r, 16, 1024, 512, 4, 64, bs::DType::BF16));
  auto eg8 = weights(random_affine(r, 16, 512, 1024, 8, 64, bs::DType::BF16));
  // Experts from DRAM: 1024 gate-shaped experts (302 MB), each call 8 not used for 127 calls.
  auto eg_dram = weights(random_affine(r, 1024, 512, 1024, 4, 64, bs::DType::BF16));
  auto ed_dram = weights(random_affine(r, 1024, 1024, 512, 4, 64, bs::DType::BF16));
  auto dram_ids = std::make_shared<std::vector<int32_t>>(8);
  auto dram_call = std::make_shared<int64_t>(0);
  auto next_dram_ids = [dram_ids, dram_call] {
    const int64_t c = (*dram_call)++;
    for (int i = 0; i < 8; ++i) (*dram_ids)[i] = static_cast<int32_t>((c * 8 + i * 129) % 1024);
    return dram_ids->data();
  };
  // A 128-token prefill chunk's runs from DRAM: 16 tokens for each of 8 such experts per call.
  auto dram_runs = std::make_shared<std::vector<int32_t>>(128);
  auto next_dram_runs = [dram_runs, next_dram_ids] {
    const int32_t* e = next_dram_ids();
    for (int i = 0; i < 128; ++i) (*dram_runs)[i] = e[i / 16];
    return dram_runs->data();
  };
  // A 128-token chunk of a 35B-A3B-shaped model (256 experts of 512 x 2048, K = 8): 1024
  // (token, expert) pairs routed uniformly at random, sorted by expert, runs of ~4 tokens.
  auto e256 = weights(random_affine(r, 256, 512, 2048, 4, 64, bs::DType::BF16));
  auto pairs = std::make_shared<std::vector<int32_t>>();
  for (int t = 0; t < 128; ++t) {
    std::vector<int32_t> pick;
    while (pick.size() < 8) {
      const auto e = static_cast<int32_t>(r.below(256));
      if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
    }
    pairs->insert(pairs->end(), pick.begin(), pick.end());
  }
  std::sort(pairs->begin(), pairs->end());
  auto xp = std::make_shared<std::vector<float>>(random_vec(r, 1024 * 2048));
  auto yg = std::make_shared<std::vector<float>>(1024 * 512);
  for (const bs::Backend* b : bs::compiled_backends()) {
    if (!b->usable()) continue;
    const bs::Kernels& k = b->k;
    const std::string n = b->name;
    auto add = [&](bs::Op op, const bs::WeightMatrix* w, std::string shape, double bytes, std::function<void()> fn) {
      if (b->supports(op, w)) out.push_back({bs::op_name(op), n, std::move(shape), bytes, std::move(fn)});
    };
    add(bs::Op::QMatVec, &q4->m, "4-bit g64 2048x2048", double(q4->m.mat_bytes()),
        [=, &k] { k.qmatvec(ctx, q4->m, 0, x->data(), y->data()); });
    add(bs::Op::QMatVec, &big->m, "4-bit g64 262144x2048 from DRAM, 1 thread", double(big->m.mat_bytes()),
        [=, &k] { k.qmatvec(ctx, big->m, 0, x->data(), y->data()); });
    add(bs::Op::QMatVec, &big->m, "4-bit g64 262144x2048 from DRAM, 2 threads", double(big->m.mat_bytes()),
        [=, &k] { k.qmatvec(bs::ExecCtx{pool.get()}, big->m, 0, x->data(), y->data()); });
    // activationBits 24 (three bytes; the cases above use the default 16) on integer paths.
    add(bs::Op::QMatVec, &q4->m, "4-bit g64 2048x2048, 24-bit activations", double(q4->m.mat_bytes()), [=, &k] {
      k.qmatvec(bs::ExecCtx{nullptr, 24}, q4->m, 0, x->data(), y->data());
    });
    add(bs::Op::QMatVec, &big->m, "4-bit g64 262144x2048 from DRAM, 2 threads, 24-bit activations",
        double(big->m.mat_bytes()), [=, &k] {
          k.qmatvec(bs::ExecCtx{pool.get(), 24}, big->m, 0, x->data(), y->data());
        });
    add(bs::Op::QMatVec, &kp->m, "4-bit g64 256x1024 (k_proj), 2 threads", double(kp->m.mat_bytes()),
        [=, &k] { k.qmatvec(bs::ExecCtx{pool.get()}, kp->m, 0, x->data(), y->data()); });
    add(bs::Op::QMatVec, &kp->m, "4-bit g64 256x1024 (k_proj), 1 thread", double(kp->m.mat_bytes()),
        [=, &k] { k.qmatvec(ctx, kp->m, 0, x->data(), y->data()); });
    add(bs::Op::GatherMatMul, &eg->m, "4-bit 8 of 16 experts 512x1024 (moe-small gate), 2 threads",
        8.0 * eg->m.mat_bytes(),
        [=, &k] { k.gather_matmul(bs::ExecCtx{pool.get()}, eg->m, ids->data(), x->data(), 8, y->data()); });
    add(bs::Op::GatherMatMul, &ed->m, "4-bit 8 of 16 experts 1024x512 (moe-small down), 2 threads",
        8.0 * ed->m.mat_bytes(),
        [=, &k] { k.gather_matmul(bs::ExecCtx{pool.get()}, ed->m, ids->data(), x->data(), 8, y->data()); });
    add(bs::Op::GatherMatMul, &eg_dram->m, "4-bit 8 of 1024 experts 512x1024 from DRAM, 2 threads",
        8.0 * eg->m.mat_bytes(),
        [=, &k] { k.gather_matmul(bs::ExecCtx{pool.get()}, eg_dram->m, next_dram_ids(), x->data(), 8, y->data()); });
    add(bs::Op::GatherMatMul, &ed_dram->m, "4-bit 8 of 1024 experts 1024x512 from DRAM, 2 threads",
        8.0 * ed->m.mat_bytes(),
        [=, &k] { k.gather_matmul(bs::ExecCtx{pool.get()}, ed_dram->m, next_dram_ids(), x->data(), 8, y->data()); });
    add(bs::Op::GatherMatMul, &eg->m, "4-bit 8 of 16 experts 512x1024 (moe-small gate), 1 thread",
        8.0 * eg->m.mat_bytes(), [=, &k] { k.gather_matmul(ctx, eg->m, ids->data(), x->data(), 8, y->data()); });
    add(bs::Op::GatherMatMul, &ed->m, "4-bit 8 of 16 experts 1024x512 (moe-small down), 1 thread",
        8.0 * ed->m.mat_bytes(), [=, &k] { k.gather_matmul(ctx, ed->m, ids->data(), x->data(), 8, y->data()); });
    add(bs::Op::QMatVec, &q4->m, "4-bit g64 2048x2048, 2 threads", double(q4->m.mat_bytes()),
        [=, &k] { k.qmatvec(bs::ExecCtx{pool.get()}, q4->m, 0, x->data(), y->data()); });
    add(bs::Op::QMatMul, &q4->m, "4-bit g64 2048x2048, 8 tokens", double(q4->m.mat_bytes()),
        [=, &k] { k.qmatmul(ctx, q4->m, 0, x->data(), 8, y->data()); });
    // Prefill: 64 tokens against one matrix, and runs of 16 tokens per expert (a 128-token
    // chunk of moe-small at K = 8 over 64 experts), one-, two- and three-byte activations.
    for (int bits : {8, 16, 24}) {
      const std::string b = ", " + std::to_string(bits) + "-bit activations";
      add(bs::Op::QMatMul, &q4->m, "4-bit g64 2048x2048, 64 tokens" + b, double(q4->m.mat_bytes()), [=, &k] {
        k.qmatmul(bs::ExecCtx{nullptr, bits}, q4->m, 0, kv->data(), 64, y->data());
      });
      add(bs::Op::GatherMatMul, &eg->m, "4-bit 8 experts x 8 tokens 512x1024" + b, 8.0 * eg->m.mat_bytes(), [=, &k] {
        k.gather_matmul(bs::ExecCtx{nullptr, bits}, eg->m, runs8->data(), kv->data(), 64, y->data());
      });
      add(bs::Op::GatherMatMul, &eg->m, "4-bit 8 experts x 16 tokens 512x1024 (moe-small gate)" + b,
          8.0 * eg->m.mat_bytes(), [=, &k] {
            k.gather_matmul(bs::ExecCtx{nullptr, bits}, eg->m, runs->data(), kv->data(), 128, y->data());
          });
    }
    // 8-bit codes (an MLX 8-bit model's experts): decode and a prefill chunk's runs.
    for (int bits : {8, 16}) {
      const std::string b = ", " + std::to_string(bits) + "-bit activations";
      add(bs::Op::GatherMatMul, &eg8->m, "8-bit 8 of 16 experts 512x1024, 1 thread" + b, 8.0 * eg8->m.mat_bytes(),
          [=, &k] {
            k.gather_matmul(bs::ExecCtx{nullptr, bits}, eg8->m, ids->data(), x->data(), 8, y->data());
          });
      add(bs::Op::GatherMatMul, &eg8->m, "8-bit 8 experts x 16 tokens 512x1024" + b, 8.0 * eg8->m.mat_bytes(), [=, &k] {
        k.gather_matmul(bs::ExecCtx{nullptr, bits}, eg8->m, runs->data(), kv->data(), 128, y->data());
      });
    }
    add(bs::Op::GatherMatMul, &eg_dram->m, "4-bit 8 experts x 16 tokens 512x1024 from DRAM, 2 threads",
        8.0 * eg->m.mat_bytes(), [=, &k] {
          k.gather_matmul(bs::ExecCtx{pool.get()}, eg_dram->m, next_dram_runs(), kv->data(), 128, y->data());
        });
    if (n != "cpu-ref") {  // ~1.2 s a call there
      add(bs::Op::GatherMatMul, &e256->m, "4-bit 1024 pairs over 256 experts 512x2048 (a 128-token chunk, K=8)",
          double(e256->m.mat_bytes()) * 256,
          [=, &k] { k.gather_matmul(ctx, e256->m, pairs->data(), xp->data(), 1024, yg->data()); });
    }
    add(bs::Op::QMatVec, &q8->m, "8-bit g64 128x2048 (router)", double(q8->m.mat_bytes()),
        [=, &k] { k.qmatvec(ctx, q8->m, 0, x->data(), y->data()); });
    add(bs::Op::DenseMatMul, &dense->m, "bf16 128x2048 (router)", double(dense->m.mat_bytes()),
        [=, &k] { k.dense_matmul(ctx, dense->m, 0, x->data(), 1, y->data()); });
    add(bs::Op::GatherMatMul, &experts->m, "4-bit 8 of 16 experts 768x2048", 8.0 * experts->m.mat_bytes(),
        [=, &k] { k.gather_matmul(ctx, experts->m, ids->data(), x->data(), 8, y->data()); });
    add(bs::Op::Embed, &q4->m, "4-bit row of 2048", double(q4->m.mat_bytes()) / 2048,
        [=, &k] { k.embed(ctx, q4->m, ids->data(), 1, y->data()); });
    add(bs::Op::RmsNorm, nullptr, "2048", 2 * 2048 * 4.0,
        [=, &k] { k.rmsnorm(ctx, x->data(), x->data() + 2048, 1, 2048, 1e-6f, y->data()); });
    add(bs::Op::Rope, nullptr, "32 heads x 128", 32 * 128 * 4.0, [=, &k] {
      k.rope(ctx, q->data(), pos->data(), 1, bs::RopeParams{32, 128, 128, 1e6});
    });
    add(bs::Op::Attention, nullptr, "decode 32q/4kv x 128 over 1024 keys", 2.0 * kv->size() * 4, [=, &k] {
      k.attention(ctx, q->data(), kv->data(), kv->data(), 1023, 1, bs::AttentionParams{32, 4, 128, 0.088f}, y->data());
    });
    // F16 caches at the decode shapes of moe-small (16q/4kv × 64, ~300 keys) and 30B-A3B.
    add(bs::Op::Attention, nullptr, "decode 16q/4kv x 64 over 300 keys, f16, 2 threads", 2.0 * 300 * 4 * 64 * 2,
        [=, &k] {
          k.attention(bs::ExecCtx{pool.get()}, q->data(), kv16->data(), kv16->data(), 299, 1,
                      bs::AttentionParams{16, 4, 64, 0.125f, true}, y->data());
        });
    add(bs::Op::Attention, nullptr, "decode 32q/4kv x 128 over 1024 keys, f16, 2 threads", 2.0 * 1024 * 4 * 128 * 2,
        [=, &k] {
          k.attention(bs::ExecCtx{pool.get()}, q->data(), kv16->data(), kv16->data(), 1023, 1,
                      bs::AttentionParams{32, 4, 128, 0.088f, true}, y->data());
        });
    // Prefill: 512 tokens of moe-small over their own f16 cache (causal), one thread.
    auto qp = std::make_shared<std::vector<float>>(random_vec(r, 512 * 16 * 64));
    auto yp = std::make_shared<std::vector<float>>(512 * 16 * 64);
    add(bs::Op::Attention, nullptr, "prefill 512 tokens 16q/4kv x 64, f16", 2.0 * 512 * 4 * 64 * 2, [=, &k] {
      k.attention(ctx, qp->data(), kv16->data(), kv16->data(), 0, 512, bs::AttentionParams{16, 4, 64, 0.125f, true},
                  yp->data());
    });
    add(bs::Op::RouteSoftmaxTopK, nullptr, "128 experts top-8", 128 * 4.0, [=, &k] {
      k.route_softmax_topk(ctx, logits->data(), 1, bs::SoftmaxTopKParams{128, 8, true}, sel->data(), wts->data());
    });
    add(bs::Op::RouteSigmoidGroup, nullptr, "128 experts 8 groups keep 4 top-8", 128 * 4.0, [=, &k] {
      k.route_sigmoid_group(ctx, logits->data(), 1, bs::SigmoidGroupParams{128, 8, 8, 4, true, 2.5f, bias->data()},
                            sel->data(), wts->data());
    });
    add(bs::Op::SiluMul, nullptr, "768 x 8", 2 * 768 * 8 * 4.0,
        [=, &k] { k.silu_mul(ctx, x->data(), x->data() + 6144, 6144, y->data()); });
    add(bs::Op::Add, nullptr, "2048", 2 * 2048 * 4.0, [=, &k] { k.add(ctx, x->data(), 1.0f, 2048, y->data()); });
    add(bs::Op::LoraDelta, &lora->a.m, lora_shape, lora_bytes,
        [=, &k] { k.lora_delta(ctx, lora->w, x->data(), 1, y->data()); });
  }
  return out;
}

}  // namespace bt
