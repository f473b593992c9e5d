#pragma once
// The parts of the encoder program (encoder_program.h) that ModernBERT's attention adds: rotary
// positions on the queries and keys, and the sliding-window layers as a band of blocks.
//
// The band: the length is padded to nb blocks of B = window / 2 rows; the queries of block n are
// scored against the keys of blocks n − 1, n and n + 1 only ([b, heads, nb, B, 3B] scores), which
// hold every key within ±window / 2 of them. Work and memory grow as L · 3B, not L²: no
// [L, L] tensor is written for a windowed layer. Query i's key j sits in column
// c = j − (n − 1)·B of its block's row r = i − n·B, so i − j = r − c + B does not depend on the
// block and the window's mask is one [B, 3B] pattern; keys at or beyond the sequence's length
// (and the zero padding before the first block) are masked too.

#include <cstdint>

#include "backends/pjrt/stablehlo.h"

namespace mcinfer::pjrt {

// cos and sin of every (token, frequency) angle [b, l, d / 2] f32 of a rotary base `theta`:
// inverse frequencies 1 / theta^(2c/d) computed on the host in float32 as transformers does (and
// the CPU backend's rotary table), position · frequency and its cos and sin in the program.
struct RotaryAngles {
  Value cos, sin;
};
RotaryAngles rotary_angles(Program& p, const Value& positions, double theta, std::int64_t head_dim);

// Each head of x [b, l, heads, d] f32 rotated by its token's angles: the pairs (c, c + d/2) as
// transformers' rotate_half.
Value apply_rotary(Program& p, const Value& x, const RotaryAngles& angles);

// Whether a layer with `window` runs as a band at `length`: a window that reaches every key of
// the longest row is full attention.
bool banded(std::int64_t window, std::int64_t length);
// The band's block rows B for a window (half of it, at least 1).
std::int64_t band_block(std::int64_t window);

// The additive mask of the band [b, nb, B, 3B] f32 for sequences of `lengths` [b] s32 padded to
// `length`: 0 where key j is within the window of query i and below the sequence's length, a
// large negative elsewhere.
Value band_mask(Program& p, const Value& lengths, std::int64_t length, std::int64_t window);

// softmax(q kᵀ · scale + mask) v over the band: q, k, v [b, heads, l, d] (f32 or bf16, scores and
// softmax in f32, the probabilities in q's type for the product with v), mask from band_mask;
// returns the context [b, heads, l, d] f32.
Value banded_attention(Program& p, const Value& q, const Value& k, const Value& v,
                       const Value& mask, std::int64_t window, float scale);

// softmax(scores) along the last axis [.., n] f32, as `product`'s type.
Value softmax_last(Program& p, const Value& scores, DType product);

}  // namespace mcinfer::pjrt
