// The device-session probes' shared half (session-probe.h).
#include "session-probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/lora.h"
#include "common/prerouter/heads.h"
#include "decoder-compare.h"
#include "fixtures.h"

namespace bt {

namespace {

// A rank-3 BF16 LoRA (scale 2) on every layer's q, v and o projections (a Gated DeltaNet layer's
// q/k/v (or q/k/v/z) and out projections; bailing's fused query_key_value, dense and g_proj) and on its dense MLP or
// shared experts (gate, down), written next to the model and loaded for it.
std::shared_ptr<const bs::LoraAdapter> write_adapter(const bs::Model& m, const std::string& dir) {
  constexpr int64_t kRank = 3;
  bt::Rng r(21);
  bs::LoraSpec spec{"probe", dir + "/probe-adapter.safetensors", {}};
  std::string header = "{";
  std::vector<uint8_t> data;
  auto tensor = [&](const std::string& name, int64_t rows, int64_t cols) {
    const size_t at = data.size();
    data.resize(at + static_cast<size_t>(rows * cols) * 2);
    for (int64_t i = 0; i < rows * cols; ++i)
      bt::store_float(data.data() + at, bs::DType::BF16, i, static_cast<float>(r.uniform(-0.2, 0.2)));
    header += std::string(header.size() > 1 ? "," : "") + "\"" + name + "\": {\"dtype\": \"BF16\", \"shape\": [" +
              std::to_string(rows) + ", " + std::to_string(cols) + "], \"data_offsets\": [" + std::to_string(at) +
              ", " + std::to_string(data.size()) + "]}";
  };
  auto module = [&](const std::string& path, const bs::Linear& l) {
    tensor(path + ".lora_a", kRank, l.w.cols);
    tensor(path + ".lora_b", l.w.rows, kRank);
    spec.modules.push_back({path, path + ".lora_a", path + ".lora_b", false, 2.0});
  };
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const bs::LayerWeights& lw = m.layers[l];
    const std::string at = "model.layers." + std::to_string(l) + ".";
    if (m.cfg.linear.lightning) {
      // bailing_moe_linear: attention.* in both kinds of layer, g_proj in the linear ones.
      module(at + "attention.query_key_value", lw.is_linear ? lw.linear.qkv : lw.attn.q);
      module(at + "attention.dense", lw.is_linear ? lw.linear.out : lw.attn.o);
      if (lw.is_linear) module(at + "attention.g_proj", lw.linear.z);
    } else if (lw.is_linear) {
      const bs::LinearAttnWeights& a = lw.linear;
      if (a.fused) module(at + "linear_attn.in_proj_qkvz", a.qkvz);
      else module(at + "linear_attn.in_proj_qkv", a.qkv);
      module(at + "linear_attn.out_proj", a.out);
    } else {
      module(at + "self_attn.q_proj", lw.attn.q);
      module(at + "self_attn.v_proj", lw.attn.v);
      module(at + "self_attn.o_proj", lw.attn.o);
    }
    if (!lw.is_moe || lw.moe.has_shared) {
      const bs::MlpWeights& w = lw.is_moe ? lw.moe.shared : lw.mlp;
      const std::string mlp = at + (!lw.is_moe            ? "mlp."
                                    : lw.moe.shared_gated ? "mlp.shared_expert."
                                                          : "mlp.shared_experts.");
      module(mlp + "gate_proj", w.gate);
      module(mlp + "down_proj", w.down);
    }
  }
  const std::vector<uint8_t> file = bt::safetensors_image(header + "}", data);
  FILE* f = std::fopen(spec.file.c_str(), "wb");
  if (!f || std::fwrite(file.data(), 1, file.size(), f) != file.size()) bs::fail("cannot write ", spec.file);
  std::fclose(f);
  return bs::load_lora(m, spec);
}

// Random prerouter heads for every possible owner; the first has no MLP (fc2 zero).
std::unique_ptr<bs::Prerouter> random_heads(const bs::Model& m) {
  bt::Rng r(31);
  const int64_t E = m.cfg.router.n_experts, F = m.cfg.hidden + 2 * E, units = 24;
  std::vector<bs::HeadFloats> heads;
  for (const int64_t owner : bs::possible_owners(m)) {
    bs::HeadFloats h{owner, units, {}, {}, {}};
    auto fill = [&](std::vector<float>& v, int64_t n, double a) {
      for (int64_t i = 0; i < n; ++i) v.push_back(heads.empty() && &v == &h.fc2 ? 0.0f : r.uniform(-a, a));
    };
    fill(h.fc1, units * F, 3.0 / std::sqrt(F));
    fill(h.fc2, E * units, 2.5 / std::sqrt(units));
    fill(h.linear, E * F, 2.5 / std::sqrt(F));
    heads.push_back(std::move(h));
  }
  return bs::Prerouter::from_floats(m, std::move(heads), "probe");
}

}  // namespace

std::shared_ptr<bs::Model> session_probe_model(const char* dir, const std::string& mode) {
  bs::LoadOptions opts;
  opts.backend = "cpu-ref";
  // Whole comma-separated words: "slots3" is not "slots".
  auto has = [&](const std::string& m) { return ("," + mode + ",").find("," + m + ",") != std::string::npos; };
  opts.kv_f16 = has("f16");
  opts.prefill_chunk = 4;  // the 8-token prompt runs as two chunks
  if (has("staged")) {
    // Streamed experts: staged decode in fewer slots than the 16 experts (prefill stays exact on the CPU).
    opts.stream.decode_path = bs::ExpertPath::Staged;
    opts.stream.slots = has("slots3") ? 3 : 6;
    opts.stream.io_threads = 2;
    if (has("direct")) opts.stream.io_mode = bs::IoMode::Direct;
  }
  if (has("hot")) opts.stream.decode_path = bs::ExpertPath::Hot;
  auto model = bs::load_model(dir, opts);
  if (has("zero")) model->prerouter = bs::Prerouter::zero_training(*model);
  if (has("heads")) model->prerouter = random_heads(*model);
  if (has("slots")) {
    const auto moe = std::count_if(model->layers.begin(), model->layers.end(), [](auto& l) { return l.is_moe; });
    model->stream.device_expert_bytes = 3 * static_cast<uint64_t>(moe) * model->expert_bytes;
  }
  return model;
}

std::vector<DeviceCounts> greedy_step_counts(bs::Session& s, const std::vector<std::function<DeviceCounts()>>& readers,
                                             int32_t* next) {
  const int32_t prompt[2] = {3, 5};
  *next = s.append_greedy(prompt, 2);
  std::vector<DeviceCounts> before;
  for (const auto& read : readers) before.push_back(read());
  s.append_greedy(next, 1);
  std::vector<DeviceCounts> step;
  for (size_t i = 0; i < readers.size(); ++i) {
    const DeviceCounts now = readers[i]();
    step.push_back({now.waits - before[i].waits, now.bytes - before[i].bytes});
  }
  return step;
}

std::string counts_json(const DeviceCounts& c) {
  return "{\"syncs\": " + std::to_string(c.waits) + ", \"d2h_bytes\": " + std::to_string(c.bytes) + "}";
}

std::string slot_counters_json(const bs::Model& m, int k_slots, const bs::Session& dev) {
  const bs::SessionStats& st = dev.stats();
  const bs::StreamCounters& c = st.stream;
  char out[400];
  std::snprintf(out, sizeof out,
                "\"expert_slots\": {\"k\": %d, \"experts\": %d, \"hits\": %llu, \"misses\": %llu, \"loads\": %llu, "
                "\"prefetch_loads\": %llu, \"io_bytes\": %llu, \"predicted_layers\": %llu}",
                k_slots, m.cfg.router.n_experts, static_cast<unsigned long long>(c.slot_hits),
                static_cast<unsigned long long>(c.slot_misses), static_cast<unsigned long long>(c.loads),
                static_cast<unsigned long long>(c.prefetch_loads), static_cast<unsigned long long>(c.io_bytes),
                static_cast<unsigned long long>(st.predicted_layers));
  return out;
}

SessionPhases run_session_phases(const std::shared_ptr<bs::Model>& model, const std::string& dir, bs::Session& cpu,
                                 bs::Session& dev, int tokens, const std::string& label,
                                 bs::FunctionRef<void()> break_device) {
  const int32_t V = static_cast<int32_t>(model->cfg.vocab);
  std::vector<float> a(V), b(V);
  double worst = 0.0;
  int64_t greedy_steps = 0;
  auto compare = [&] { worst = std::max(worst, rel_diff(a, b)); };

  std::string json = "\"phases\": {";
  // Prefills `prompt` on both, then greedy steps: every other device step brings back only the
  // token (the argmax on the device), the rest the logits, compared with the CPU's.
  auto phase = [&](const char* name, std::vector<int32_t> prompt, int steps = 0,
                   const bs::MultimodalInput* mm = nullptr) {
    const int count = steps > 0 ? steps : tokens;
    for (int32_t& t : prompt) t %= V;
    const int64_t P = static_cast<int64_t>(prompt.size());
    cpu.append(prompt.data(), P, a.data(), mm);
    dev.append(prompt.data(), P, b.data(), mm);
    compare();
    std::vector<int32_t> out_cpu, out_dev;
    int32_t pending = -1;  // the token a greedy device step brought back (-1: read b)
    for (int i = 0; i < count; ++i) {
      out_cpu.push_back(argmax_of(a));
      out_dev.push_back(pending >= 0 ? pending : argmax_of(b));
      if (out_cpu.back() != out_dev.back()) break;
      cpu.append(&out_cpu.back(), 1, a.data());
      if (i % 2 == 0) {
        pending = dev.append_greedy(&out_dev.back(), 1);
        ++greedy_steps;
      } else {
        pending = -1;
        dev.append(&out_dev.back(), 1, b.data());
        compare();
      }
    }
    json += std::string(json.back() == '{' ? "" : ", ") + "\"" + name + "\": {\"cpu\": " + json_list(out_cpu) + ", \"" +
            label + "\": " + json_list(out_dev) + ", \"n_past\": [" + std::to_string(cpu.n_past()) + ", " +
            std::to_string(dev.n_past()) + "], \"on_device\": " + (dev.on_device() ? "true" : "false") + "}";
    return out_dev;
  };
  const std::vector<int32_t> prompt = {11, 48, 85, 122, 159, 196, 233, 270};
  phase("prompt", prompt);
  const uint64_t device_bytes = dev.state_bytes();
  // A greedy step over the ids below a limit (a tokenizer smaller than the padded vocabulary).
  const int32_t limit = V / 3, step = 5;
  const int32_t limited_cpu = cpu.append_greedy(&step, 1, limit), limited_dev = dev.append_greedy(&step, 1, limit);
  // A prompt sharing 5 tokens with the cache: truncate to them, prefill the rest.
  cpu.truncate(5);
  dev.truncate(5);
  const std::vector<int32_t> first = phase("truncated", {307, 344, 381});
  // That prompt again: the cache keeps all but its last token, which is prefilled.
  cpu.truncate(7);
  dev.truncate(7);
  const std::vector<int32_t> again = phase("prefix_hit", {381});
  const bool repeat = again == first;
  if (model->top_k > 1) {
    cpu.set_top_k(model->top_k - 1);
    dev.set_top_k(model->top_k - 1);
    cpu.truncate(8);
    dev.truncate(8);
    phase("top_k", {401});
  }
  // An unmerged LoRA: its deltas run beside the base linears in the decoder's launches.
  const auto adapter = write_adapter(*model, dir);
  cpu.set_adapter(adapter);
  dev.set_adapter(adapter);
  cpu.truncate(8);
  dev.truncate(8);
  phase("adapter", {499});
  // Hybrid models: 36 decode steps take a decode snapshot of the recurrent state (every 32
  // tokens); truncating into them restores it and runs the tokens after it again.
  const auto& linear = model->cfg.linear_layer;
  if (std::count(linear.begin(), linear.end(), true) > 0) {
    phase("long_decode", {17}, 36);
    cpu.truncate(cpu.n_past() - 3);
    dev.truncate(dev.n_past() - 3);
    phase("into_decode", {23});
  }
  // The device fails: the session reads the cache back and the CPU runs this call and the rest.
  // (A hybrid model's recurrent state is rebuilt from a snapshot by a replay, whose tokens the
  // router routes where the decode steps took the prerouter's predictions: with a prerouter,
  // logits after the failure may differ by more than rounding.)
  // Vision models (multimodal RoPE): an append with image rows (embeddings, deepstack features
  // for the first two layers, 3-D positions; split across the two prefill chunks) runs on the
  // device too; decode after it continues past the image's positions (the rows minus 2), as does
  // text appended after a truncation into the image (hybrids, without DeepStack: a replay of the
  // image rows from the snapshot before them).
  if (!model->cfg.mrope_section.empty()) {
    constexpr int64_t kImg = 4, kN = 6;
    const int64_t kDeep = std::count(linear.begin(), linear.end(), true) > 0 ? 0 : 2;
    const int64_t H = model->cfg.hidden;
    bt::Rng r(31);
    std::vector<float> embeds(kImg * H), deep(kDeep * kImg * H);
    for (float& x : embeds) x = static_cast<float>(r.uniform(-1.0, 1.0));
    for (float& x : deep) x = static_cast<float>(r.uniform(-0.5, 0.5));
    const int64_t rows[kImg] = {1, 2, 3, 4};
    // [3][kN] (time, height, width): text at p0 and p0 + 3, the image a 2 × 2 grid from p0 + 1.
    const auto p0 = static_cast<int32_t>(cpu.n_past());
    const int32_t positions[3 * kN] = {p0, p0 + 1, p0 + 1, p0 + 1, p0 + 1, p0 + 3,  // time
                                       p0, p0 + 1, p0 + 1, p0 + 2, p0 + 2, p0 + 3,  // height
                                       p0, p0 + 1, p0 + 2, p0 + 1, p0 + 2, p0 + 3};
    const bs::MultimodalInput mm{embeds.data(), rows, kImg, deep.data(), kDeep, positions};
    phase("image", {5, 900, 901, 902, 903, 7}, 0, &mm);
    cpu.truncate(p0 + 3);
    dev.truncate(p0 + 3);
    phase("after_image", {9, 10, 11});
  }
  const double worst_on_device = worst;
  break_device();
  phase("handover", {433, 466});
  char tail[400];
  std::snprintf(tail, sizeof tail,
                "}, \"prefix_hit_repeats_prompt\": %s, \"greedy_steps\": %lld, \"device_state_bytes\": %llu, "
                "\"cpu_predicted_layers\": %llu, \"max_rel_logit_diff\": %.3e, \"max_rel_logit_diff_on_device\": %.3e, "
                "\"greedy_limit\": [%d, %d, %d]",
                repeat ? "true" : "false", static_cast<long long>(greedy_steps),
                static_cast<unsigned long long>(device_bytes),
                static_cast<unsigned long long>(cpu.stats().predicted_layers), worst, worst_on_device, limit,
                limited_cpu, limited_dev);
  return {json + tail, device_bytes};
}

}  // namespace bt
