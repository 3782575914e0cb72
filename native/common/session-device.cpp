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
  if (mm || recorder_) {
    hand_over();
    return false;
  }
  const int64_t n_past = n_past_, chunk = model_->prefill_chunk;
  const DeviceStep step{top_k_, adapter_, greedy_vocab};
  ExpertStreamer* streamer = model_->streamer.get();  // a decoder on streamed slots drives it too
  const StreamCounters before = streamer ? streamer->counters() : StreamCounters{};
  try {
    for (int64_t i = 0; i < n; i += chunk) {
      const int64_t m = std::min(chunk, n - i);
      const bool last = i + m == n;
      if (last && greedy) {
        *greedy = decoder_->append_greedy(tokens + i, m, step);
      } else {
        decoder_->append(tokens + i, m, step, last ? logits : nullptr);
      }
      n_past_ += m;
    }
  } catch (const DecoderInputError&) {
    n_past_ = n_past;
    decoder_->truncate(n_past);
    throw;
  } catch (const Error& e) {
    // Rows before the failed chunk are intact: the host path takes them and runs this call again.
    std::fprintf(stderr, "brainstem: session: the device decoder failed (%s); continuing on the CPU\n", e.what());
    n_past_ = n_past;
    decoder_->truncate(n_past);
    hand_over();
    return false;
  }
  stats_.tokens += n;
  decoder_->take_stats(stats_);
  if (streamer) stats_.stream += streamer->counters() - before;
  return true;
}

void Session::hand_over() {
  const int64_t n = decoder_->position();
  reserve(n);
  try {
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      if (rec_offset_[l] < 0) decoder_->read_kv(static_cast<int64_t>(l), n, k_cache_[l].data(), v_cache_[l].data());
    }
  } catch (const Error& e) {
    // A device that no longer copies (a sticky error) keeps the cache: the session starts empty on
    // the host rather than failing every later call.
    decoder_.reset();
    n_past_ = 0;
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
