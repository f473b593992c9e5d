#pragma once
// Rotary position embeddings (ModernBERT): each head's query and key rows are rotated by an
// angle per dimension pair that grows with the token's position, so that their dot product
// depends on the distance between the two tokens only. Pairs are (c, c + d/2) as in transformers'
// rotate_half, with angle position · theta^(−2c/d).
//
// RotaryTable is immutable after build() and shared read-only by every replica.

#include <cstdint>

#include "backends/cpu/kernels.h"
#include "core/aligned_buffer.h"

namespace mcinfer::cpu {

class RotaryTable {
 public:
  // cos and sin of every angle a position below `positions` takes in a head of size `head_dim`
  // (even), computed in float32 step by step as transformers does (inverse frequencies
  // 1 / theta^(2c/d), position · frequency, then cos and sin).
  static RotaryTable build(double theta, std::int64_t head_dim, std::int64_t positions);

  double theta() const { return theta_; }
  std::int64_t positions() const { return positions_; }
  std::int64_t half() const { return half_; }
  const float* cos(std::int64_t position) const { return cos_.data() + position * half_; }
  const float* sin(std::int64_t position) const { return sin_.data() + position * half_; }
  std::size_t bytes() const { return (cos_.size() + sin_.size()) * sizeof(float); }

 private:
  double theta_ = 0;
  std::int64_t positions_ = 0;
  std::int64_t half_ = 0;
  AlignedBuffer<float> cos_, sin_;
};

// out[0:2·half] = x[0:2·half] rotated by one position's angles (cos, sin: half values each);
// out may be x.
void rotate_row(const float* x, float* out, const float* cos, const float* sin, std::int64_t half);

}  // namespace mcinfer::cpu
