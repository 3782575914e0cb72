// Sessions whose forward pass runs on a device decoder (common/device-decoder.h): the KV cache
// lives on the device, one command list per chunk; a call the decoder cannot take hands the
// cache over to the host path (session.h, use_decoder).
#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/logits.h"
#include "common/session.h"

namespace bs {

void Session::use_decoder(std::unique_ptr<DeviceDecoder> d) {
  if (n_past_ != 0) fail("use_decoder: the session already holds ", n_past_, " tokens; call it on an empty session");
  decoder_ = std::move(d);
}

bool Session::device_append(const int32_t* tokens, int64_t n, float* logits, int32_t* greedy, const MultimodalInput* mm,
                            int64_t greedy_vocab) {
  if (!decoder_) return false;
  std::lock_guard<std::mutex> lock(model_->forward_mu);
  if (recorder_) {
    hand_over(true);
    return false;
  }
  model_->check_files();  // device decoders read mapped weights too (uploads, streamed experts)
  const int64_t n_past = n_past_, chunk = model_->prefill_chunk;
  DeviceStep step{top_k_, adapter_, greedy_vocab};
  ExpertStreamer* streamer = model_->streamer.get();  // a decoder on streamed slots drives it too
  const StreamCounters before = streamer ? streamer->counters() : StreamCounters{};
  try {
    for (int64_t i = 0; i < n; i += chunk) {
      const int64_t m = std::min(chunk, n - i);
      const bool last = i + m == n;
      const MultimodalChunk part = mm ? multimodal_chunk(*mm, n, i, m) : MultimodalChunk{};
      step.mm = mm ? &part : nullptr;
      step.rope_shift = rope_shift(n_past_);
      if (last && greedy) {
        *greedy = decoder_->append_greedy(tokens + i, m, step);
      } else {
        decoder_->append(tokens + i, m, step, last ? logits : nullptr);
      }
      mm_ = step.mm;
      record_positions(m);
      keep_inputs(m);
      mm_ = nullptr;
      n_past_ += m;
      if (!rec_.empty()) tokens_.insert(tokens_.end(), tokens + i, tokens + i + m);
    }
  } catch (const DecoderInputError&) {
    // A hybrid model's completed chunks advanced its recurrent state: rebuilt at n_past.
    if (rec_.empty()) {
      n_past_ = n_past;
      decoder_->truncate(n_past);
    } else {
      restore_recurrent(n_past);
    }
    throw;
  } catch (const Error& e) {
    // Rows before the failed chunk are intact: the host path takes them and runs this call again.
    std::fprintf(stderr, "brainstem: session: the device decoder failed (%s); continuing on the CPU\n", e.what());
    n_past_ = n_past;
    decoder_->truncate(n_past);
    hand_over(false);
    if (!rec_.empty()) restore_recurrent(n_past);
    return false;
  }
  stats_.tokens += n;
  decoder_->take_stats(stats_);
  if (streamer) stats_.stream += streamer->counters() - before;
  snapshot_after(n);
  return true;
}

void Session::restore_on_device(int64_t n) {
  // The latest snapshot at or before n (none: the zero state at position 0), as on the host.
  int best = -1;
  for (size_t i = 0; i < snapshots_.size(); ++i) {
    const int64_t p = snapshots_[i].pos;
    if (p >= 0 && p <= n && (best < 0 || p > snapshots_[best].pos)) best = static_cast<int>(i);
  }
  const int64_t from = best >= 0 ? snapshots_[best].pos : 0;
  replay_.assign(tokens_.begin() + from, tokens_.begin() + n);
  for (Snapshot& snap : snapshots_) {
    if (snap.pos > n) snap.pos = -1;
  }
  drop_kept(n);
  const MultimodalInput* in = replay_input(from, n);
  const int64_t len = n - from;
  DeviceStep step{top_k_, adapter_, 0};
  int64_t done = 0;
  try {
    decoder_->load_state(best);
    decoder_->truncate(from);
    n_past_ = from;
    tokens_.resize(from);
    for (; done < len; done += model_->prefill_chunk) {
      const int64_t m = std::min<int64_t>(model_->prefill_chunk, len - done);
      const MultimodalChunk part = in ? multimodal_chunk(*in, len, done, m) : MultimodalChunk{};
      step.mm = in ? &part : nullptr;
      step.rope_shift = rope_shift(n_past_);
      // Each replayed chunk, as each host forward: a shrunk file fails it, the state back at the snapshot.
      try {
        model_->check_files();
      } catch (const Error& e) {
        throw DecoderInputError(e.what());
      }
      decoder_->append(replay_.data() + done, m, step, nullptr);
      n_past_ += m;
      tokens_.insert(tokens_.end(), replay_.data() + done, replay_.data() + done + m);
    }
  } catch (const DecoderInputError&) {
    // The failed chunk may have advanced the state partway: back to the snapshot, the session
    // consistent at that shorter prefix (as a failed replay leaves it on the host).
    decoder_->load_state(best);
    decoder_->truncate(from);
    n_past_ = from;
    tokens_.resize(from);
    throw;
  } catch (const Error& e) {
    // The host takes the cache and the snapshots and replays the rest itself.
    std::fprintf(stderr, "brainstem: session: the device decoder failed (%s); continuing on the CPU\n", e.what());
    tokens_.insert(tokens_.end(), replay_.begin() + done, replay_.end());
    decoder_->truncate(n_past_);
    hand_over(false);
    restore_recurrent(n);
  }
}

void Session::hand_over(bool state_valid) {
  const int64_t n = decoder_->position();
  reserve(n);
  try {
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      if (rec_offset_[l] < 0) decoder_->read_kv(static_cast<int64_t>(l), n, k_cache_[l].data(), v_cache_[l].data());
    }
    // Hybrid models: the snapshots come back too (a half-advanced state is rebuilt from them).
    for (size_t i = 0; i < snapshots_.size() && !rec_.empty(); ++i) {
      if (snapshots_[i].pos < 0) continue;
      snapshots_[i].state.resize(rec_.size());
      decoder_->read_state(static_cast<int>(i), snapshots_[i].state.data());
    }
    if (!rec_.empty() && state_valid) decoder_->read_state(-1, rec_.data());
  } catch (const Error& e) {
    // A device that no longer copies (a sticky error) keeps the cache: the session starts empty on
    // the host rather than failing every later call.
    decoder_.reset();
    n_past_ = 0;
    tokens_.clear();
    drop_kept(0);
    for (Snapshot& snap : snapshots_) snap.pos = -1;
    std::fill(rec_.begin(), rec_.end(), 0.0f);
    fail("the device failed and its KV cache could not be read back (", e.what(), "); the session's ", n,
         " cached tokens were dropped: append the context again");
  }
  decoder_.reset();
}

int32_t Session::append_greedy(const int32_t* tokens, int64_t n, int64_t vocab) {
  check_append(tokens, n);
  const int64_t V = model_->cfg.vocab, limit = vocab > 0 ? std::min(vocab, V) : V;
  int32_t token = 0;
  if (device_append(tokens, n, nullptr, &token, nullptr, limit)) return token;
  greedy_logits_.resize(V);
  append(tokens, n, greedy_logits_.data());
  return static_cast<int32_t>(argmax_f32(greedy_logits_.data(), limit));
}

}  // namespace bs
