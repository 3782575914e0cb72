// Image (or video) input spliced into a session's append, shared by the host path
// (common/multimodal.cpp) and the device decoders (common/decoder-walk.h).
#pragma once
#include <algorithm>
#include <cstdint>

namespace bs {

// Image embeddings spliced into one append: token rows[r] (ascending indices into the append)
// takes embeds[r] instead of its token's embedding, and after decoder layer l < n_deep adds
// deepstack[l][r]. positions [3][n]: each token's (time, height, width) RoPE position, for models
// with multimodal RoPE (nullptr: 1-D positions continuing the cache's).
struct MultimodalInput {
  const float* embeds = nullptr;  // [n_rows, hidden]
  const int64_t* rows = nullptr;  // [n_rows]
  int64_t n_rows = 0;
  const float* deepstack = nullptr;  // [n_deep, n_rows, hidden]
  int64_t n_deep = 0;
  const int32_t* positions = nullptr;  // [3, n]
};

// The part of an append one chunk runs: its tokens start..start+n of the append's total, and
// in's rows [r0, r1) (those that fall in the chunk).
struct MultimodalChunk {
  const MultimodalInput* in;
  int64_t start, total, r0, r1;
};

// Tokens [start, start + n) of an append of `total` tokens with `in`.
inline MultimodalChunk multimodal_chunk(const MultimodalInput& in, int64_t total, int64_t start, int64_t n) {
  const int64_t* end = in.rows + in.n_rows;
  return {&in, start, total, std::lower_bound(in.rows, end, start) - in.rows,
          std::lower_bound(in.rows, end, start + n) - in.rows};
}

}  // namespace bs
