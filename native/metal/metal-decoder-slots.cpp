// Streamed experts on the decoder's device (common/experts: the staged path). The slot slabs the
// I/O threads fill are wrapped once per model (metal-weights.cpp); a layer's gathered matmuls
// read them through its slot table (expert → slot, the zero slot for the rest). The host must
// know which experts a layer routes to before they can be loaded, so it waits for the command
// list so far where the routing was made on the GPU: at every MoE layer of a prefill chunk, and
// of a decode step not routed by the prerouter (without one: every MoE layer; with one: the
// first). A layer routed by a prediction reads the ids the host read after the last append and
// whose loads started then; it waits only for loads still in flight, after committing the list
// so far so the GPU runs the earlier layers meanwhile. A chunk with more experts than slots runs
// in waves (a wait after each but the last), each wave's rows added into rows_.
#include <algorithm>

#include "common/experts/streamer.h"
#include "metal/metal-decoder.h"
#include "metal/metal-encode.h"

namespace bs::metal {

namespace {

const int32_t* host_ints(Arg a) { return reinterpret_cast<const int32_t*>(a.buf->contents() + a.offset); }

}  // namespace

void MetalDecoder::init_slots() {
  slots_ = slot_experts(m_);
  if (!slots_) return;
  const int64_t E = m_.cfg.router.n_experts, k = std::max(1, m_.top_k);
  slot_table_.resize(m_.cfg.n_layers);
  for (int64_t l = 0; l < m_.cfg.n_layers; ++l)
    if (m_.layers[l].is_moe) slot_table_[l] = alloc(E * 4);
  rows_acc_ = alloc(max_chunk_ * k * m_.cfg.hidden * 4);
}

void MetalDecoder::sync() {
  c_->commit_and_wait();
  ++host_waits_;
  list_ = d_.begin();
  c_ = list_.get();
}

// After the parity flip: the last append's predictions are pred_[l].ids[1 - parity_].
void MetalDecoder::stream_begin(int64_t n) {
  try {
    m_.streamer->begin_forward();
  } catch (const Error& e) {
    throw DecoderInputError(e.what());  // a weight file shrank
  }
  if (n != 1) return;
  for (int64_t l = 0; l < m_.cfg.n_layers; ++l)
    if (has_pred_[l]) m_.streamer->reserve(l, host_ints(pred_[l].ids[1 - parity_]), top_k_);
}

// The list has run: this append's predictions are in shared memory, and their loads start now,
// a step ahead of the layers they route.
void MetalDecoder::stream_end() {
  m_.streamer->end_forward();
  for (int64_t l = 0; l < m_.cfg.n_layers; ++l)
    if (made_pred_[l]) m_.streamer->prefetch(l, host_ints(pred_[l].ids[parity_]), top_k_);
}

// A prefill chunk's rows sorted by expert first (bs_route_sort), for the grouped products.
void MetalDecoder::experts(const MoeWeights& w, int64_t rows, int64_t k) {
  struct Reset {
    bool& b;
    ~Reset() { b = false; }
  } reset{grouped_};
  grouped_ = n_ > 1 && sorted_.buf;  // a decode step's rows are one token's distinct experts
  if (grouped_) {
    const int64_t E = m_.cfg.router.n_experts;
    const RouteSortParams p{u32(rows), u32(E), route_tiles_max(rows, E)};
    c_->dispatch("bs_route_sort", {1}, BS_BLOCK, {routed_ids_, sorted_, {nullptr, 0, &p, sizeof p}});
  }
  if (!slots_) return DecoderWalk::experts(w, rows, k);
  const bool predicted = routed_ids_.buf != ids_.buf;
  const int32_t* ids = host_ints(routed_ids_);
  if (!predicted || !m_.streamer->staged_ready(layer_, ids, static_cast<int>(rows))) sync();
  // The distinct experts, sorted, with their row counts (the streamer's groups).
  std::vector<int32_t>& sorted = stage_.order_ids;
  sorted.assign(ids, ids + rows);
  std::sort(sorted.begin(), sorted.end());
  stage_.groups.clear();
  for (int64_t i = 0; i < rows; ++i) {
    if (i == 0 || sorted[i] != sorted[i - 1]) stage_.groups.push_back({sorted[i], i, i});
    ++stage_.groups.back().end;
  }
  int32_t* table = reinterpret_cast<int32_t*>(slot_table_[layer_].buf->contents());
  const int64_t E = m_.cfg.router.n_experts, H = m_.cfg.hidden;
  bool first = true, in_wave = false;
  try {
    m_.streamer->run_device(layer_, stage_, [&](const SlotCache& c, bool last) {
      in_wave = true;
      std::fill(table, table + E, static_cast<int32_t>(c.zero_slot()));
      for (size_t i = 0; i < stage_.group_which.size(); ++i)
        table[stage_.groups[stage_.group_which[i]].expert] = stage_.group_ids[i];
      // Rows of experts outside the wave read the zero slot: exactly 0, so the waves add up.
      expert_mlp(w, rows, k, first ? rows_ : rows_acc_);
      if (!first) add(rows_acc_, rows_, rows * H);
      first = false;
      if (!last) sync();  // the next wave reuses these slots
      in_wave = false;
    });
  } catch (const Error& e) {
    if (in_wave) throw;                 // the device failed
    throw DecoderInputError(e.what());  // an expert's read failed
  }
}

}  // namespace bs::metal
