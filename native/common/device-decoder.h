// A session's whole forward pass on an accelerator (metal/metal-decoder.h): the KV cache lives in
// device memory, one command list per chunk. The session hands over to the op-by-op path by
// reading the cache back (read_kv) when a call needs what the decoder lacks or the device fails.
#pragma once
#include <cstdint>
#include <memory>

#include "common/error.h"
#include "common/multimodal.h"

namespace bs {

class LoraAdapter;
struct SessionStats;

// An append that failed on its input, not on the device: a streamed expert's read, a weight file
// that shrank. The decoder stays usable at the position before the append; the session passes
// the error on and stays on the device (as the host path does for the same error).
struct DecoderInputError : Error {
  using Error::Error;
};

// What one append runs with besides its tokens.
struct DeviceStep {
  int top_k = 1;                               // experts per token (ignored by dense models)
  std::shared_ptr<const LoraAdapter> adapter;  // unmerged LoRA deltas beside the base linears (null: none)
  int64_t greedy_vocab = 0;                    // append_greedy: ids below this only (0: the whole vocabulary)
  // The chunk's image rows and their 3-D positions (nullptr: text only); without 3-D positions
  // token t's RoPE position is its cache row plus rope_shift (past an earlier image's positions).
  const MultimodalChunk* mm = nullptr;
  int64_t rope_shift = 0;
};

class DeviceDecoder {
 public:
  virtual ~DeviceDecoder() = default;
  // Runs tokens[0..n) (n ≤ the model's prefill chunk) at the next positions; writes the last
  // token's logits [vocab] when `logits` is not null. Throws bs::Error when the device fails
  // (DecoderInputError when the input did); cache rows before the chunk are left as they were.
  virtual void append(const int32_t* tokens, int64_t n, const DeviceStep& step, float* logits) = 0;
  // As append, but only the greedy token (the largest logit among ids below step.greedy_vocab,
  // ties to the lower id; −1 when none is above −∞) comes back.
  virtual int32_t append_greedy(const int32_t* tokens, int64_t n, const DeviceStep& step) = 0;
  // Keeps the first n ≤ position() rows (later appends overwrite the rest).
  virtual void truncate(int64_t n) = 0;
  virtual int64_t position() const = 0;
  // Copies rows [0, n) of layer l's key and value caches into k and v, in the model's KV type.
  virtual void read_kv(int64_t layer, int64_t n, void* k, void* v) const = 0;
  // Hybrid models' recurrent state (every linear layer's conv history then S, in the session's
  // layout): save_state copies it into snapshot `slot` (0, 1, …) on the device, load_state back
  // (slot −1: the zero state), read_state copies the current state (slot −1) or a snapshot to
  // the host. Only a decoder that runs linear-attention layers is asked.
  virtual void save_state(int slot) { fail("this device decoder keeps no recurrent state"); }
  virtual void load_state(int slot) { fail("this device decoder keeps no recurrent state"); }
  virtual void read_state(int slot, float* rec) const { fail("this device decoder keeps no recurrent state"); }
  // Device bytes held for this session (KV cache and activations).
  virtual uint64_t state_bytes() const = 0;
  // Adds the decoder's counters since the last take (expert slots' hits, misses and loads into
  // `stream`, predicted layers) to a session's.
  virtual void take_stats(SessionStats& into) {}
};

}  // namespace bs
