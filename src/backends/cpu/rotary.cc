#include "backends/cpu/rotary.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"

namespace mcinfer::cpu {
namespace {

// bf16 of x, rounded to nearest even (finite inputs: the rotated values of finite rows).
Bf16 round_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<Bf16>(bits >> 16);
}

// One head's d values: (x_c, x_{c+half}) → (x_c·cos − x_{c+half}·sin, x_{c+half}·cos + x_c·sin).
void rotate(float* x, const float* cos, const float* sin, std::int64_t half) {
  for (std::int64_t c = 0; c < half; ++c) {
    const float a = x[c], b = x[c + half];
    x[c] = a * cos[c] - b * sin[c];
    x[c + half] = b * cos[c] + a * sin[c];
  }
}

}  // namespace

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

void apply_rotary(void* qkv, bool bf16, std::int64_t tokens, int heads, std::int64_t hidden,
                  const std::int32_t* positions, const RotaryTable& table) {
  const std::int64_t d = hidden / heads, half = table.half(), ld = 3 * hidden;
  std::vector<float> row(static_cast<std::size_t>(bf16 ? d : 0));  // one bf16 head widened
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* cos = table.cos(positions[t]);
    const float* sin = table.sin(positions[t]);
    // The query block then the key block: 2 · heads heads of d columns each.
    for (std::int64_t head = 0; head < 2 * heads; ++head) {
      const std::int64_t column = t * ld + head * d;
      if (!bf16) {
        rotate(static_cast<float*>(qkv) + column, cos, sin, half);
        continue;
      }
      Bf16* x = static_cast<Bf16*>(qkv) + column;
      for (std::int64_t c = 0; c < d; ++c) row[c] = bf16_to_float(x[c]);
      rotate(row.data(), cos, sin, half);
      for (std::int64_t c = 0; c < d; ++c) x[c] = round_bf16(row[c]);
    }
  }
}

}  // namespace mcinfer::cpu
