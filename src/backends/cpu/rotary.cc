#include "backends/cpu/rotary.h"

#include <cmath>

namespace mcinfer::cpu {

// One head's d values: (x_c, x_{c+half}) → (x_c·cos − x_{c+half}·sin, x_{c+half}·cos + x_c·sin).
void rotate_row(const float* x, float* out, const float* cos, const float* sin, std::int64_t half) {
  for (std::int64_t c = 0; c < half; ++c) {
    const float a = x[c], b = x[c + half];
    out[c] = a * cos[c] - b * sin[c];
    out[c + half] = b * cos[c] + a * sin[c];
  }
}

RotaryTable RotaryTable::build(double theta, std::int64_t head_dim, std::int64_t positions) {
  RotaryTable t;
  t.theta_ = theta;
  t.positions_ = positions;
  t.half_ = head_dim / 2;
  const auto n = static_cast<std::size_t>(positions * t.half_);
  t.cos_.resize(n);
  t.sin_.resize(n);
  // torch: inv_freq = 1.0 / (base ** (arange(0, d, 2).float() / d)), all float32.
  AlignedBuffer<float> inverse(static_cast<std::size_t>(t.half_));
  const auto base = static_cast<float>(theta);
  for (std::int64_t c = 0; c < t.half_; ++c) {
    const float exponent = static_cast<float>(2 * c) / static_cast<float>(head_dim);
    inverse.data()[c] = 1.0f / std::pow(base, exponent);
  }
  for (std::int64_t p = 0; p < positions; ++p) {
    for (std::int64_t c = 0; c < t.half_; ++c) {
      const float angle = static_cast<float>(p) * inverse.data()[c];
      t.cos_.data()[p * t.half_ + c] = std::cos(angle);
      t.sin_.data()[p * t.half_ + c] = std::sin(angle);
    }
  }
  return t;
}

}  // namespace mcinfer::cpu
