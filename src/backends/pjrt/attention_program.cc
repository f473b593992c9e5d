#include "backends/pjrt/attention_program.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace mcinfer::pjrt {
namespace {

// Added to masked scores: a large finite negative, as transformers adds finfo.min, so that exp
// underflows to exactly 0 and a row with no key left (a padding query) stays finite.
constexpr float kMasked = -1e30f;

Value s32(Program& p, std::int64_t value, const Dims& dims) {
  return p.splat(static_cast<float>(value), dims, DType::kS32);
}

}  // namespace

RotaryAngles rotary_angles(Program& p, const Value& positions, double theta,
                           std::int64_t head_dim) {
  const std::int64_t half = head_dim / 2;
  // torch: inv_freq = 1.0 / (base ** (arange(0, d, 2).float() / d)), every step in float32; on
  // the host so that it is the CPU backend's table bit for bit (a position times a frequency is
  // exact to reproduce, a pow in the program need not be).
  std::vector<float> inverse(static_cast<std::size_t>(half));
  const auto base = static_cast<float>(theta);
  for (std::int64_t c = 0; c < half; ++c) {
    const float exponent = static_cast<float>(2 * c) / static_cast<float>(head_dim);
    inverse[static_cast<std::size_t>(c)] = 1.0f / std::pow(base, exponent);
  }
  Dims dims = positions.dims;
  dims.push_back(half);
  const Value at = p.broadcast(p.convert(positions, DType::kF32), dims, {0, 1});
  const Value angle = p.binary("multiply", at, p.broadcast(p.constant(inverse, {half}), dims, {2}));
  return {p.unary("cosine", angle), p.unary("sine", angle)};
}

Value apply_rotary(Program& p, const Value& x, const RotaryAngles& angles) {
  const std::int64_t b = x.dims[0], l = x.dims[1], heads = x.dims[2], d = x.dims[3], half = d / 2;
  const Dims halves{b, l, heads, half};
  const Value first = p.slice(x, {0, 0, 0, 0}, halves);
  const Value second = p.slice(x, {0, 0, 0, half}, {b, l, heads, d});
  const Value cos = p.broadcast(angles.cos, halves, {0, 1, 3});
  const Value sin = p.broadcast(angles.sin, halves, {0, 1, 3});
  auto times = [&](const Value& a, const Value& c) { return p.binary("multiply", a, c); };
  const Value rotated_first = p.binary("subtract", times(first, cos), times(second, sin));
  const Value rotated_second = p.binary("add", times(second, cos), times(first, sin));
  return p.concatenate({rotated_first, rotated_second}, 3);
}

bool banded(std::int64_t window, std::int64_t length) {
  return window > 0 && length - 1 > window / 2;
}

std::int64_t band_block(std::int64_t window) { return std::max<std::int64_t>(1, window / 2); }

Value band_mask(Program& p, const Value& lengths, std::int64_t length, std::int64_t window) {
  const std::int64_t b = lengths.dims.at(0), block = band_block(window), half = window / 2;
  const std::int64_t blocks = (length + block - 1) / block;
  const Dims dims{b, blocks, block, 3 * block};
  const Value n = p.iota(dims, 1), r = p.iota(dims, 2), c = p.iota(dims, 3);
  // i − j = r − c + B, the same in every block.
  const Value distance = p.binary("add", p.binary("subtract", r, c), s32(p, block, dims));
  const Value near = p.binary("and", p.compare("LE", distance, s32(p, half, dims)),
                              p.compare("GE", distance, s32(p, -half, dims)));
  // j = n·B + c − B: negative in the first block's left neighbour (padding).
  const Value key = p.binary("add", p.binary("multiply", n, s32(p, block, dims)),
                             p.binary("subtract", c, s32(p, block, dims)));
  const Value real = p.binary("and", p.compare("GE", key, s32(p, 0, dims)),
                              p.compare("LT", key, p.broadcast(lengths, dims, {0})));
  return p.select(p.binary("and", near, real), p.splat(0.0f, dims), p.splat(kMasked, dims));
}

Value banded_attention(Program& p, const Value& q, const Value& k, const Value& v,
                       const Value& mask, std::int64_t window, float scale) {
  const std::int64_t b = q.dims[0], heads = q.dims[1], l = q.dims[2], d = q.dims[3];
  const std::int64_t block = band_block(window), blocks = (l + block - 1) / block;
  const std::int64_t padded = blocks * block;
  const Value queries =
      p.reshape(p.pad(q, 0.0f, {0, 0, 0, 0}, {0, 0, padded - l, 0}), {b, heads, blocks, block, d});
  // Each block's keys (values): its left neighbour, itself and its right neighbour, side by side
  // [b, heads, nb, 3B, d], from the rows with one zero block added at either end.
  auto neighbours = [&](const Value& x) {
    const Value rows = p.reshape(p.pad(x, 0.0f, {0, 0, block, 0}, {0, 0, padded - l + block, 0}),
                                 {b, heads, blocks + 2, block, d});
    std::vector<Value> sides;
    for (std::int64_t s = 0; s < 3; ++s)
      sides.push_back(p.slice(rows, {0, 0, s, 0, 0}, {b, heads, s + blocks, block, d}));
    return p.concatenate(sides, 3);
  };
  const Value keys = neighbours(k), values = neighbours(v);
  const Dims score_dims{b, heads, blocks, block, 3 * block};
  if (mask.dims != Dims{b, blocks, block, 3 * block})
    fail("internal: a band mask {} for {} blocks of {}", mask.tensor_type(), blocks, block);
  Value scores = p.dot(queries, keys, {0, 1, 2}, {0, 1, 2}, {4}, {4}, DType::kF32);
  scores = p.binary("add", p.binary("multiply", scores, p.splat(scale, score_dims)),
                    p.broadcast(mask, score_dims, {0, 2, 3, 4}));
  const Value probs = softmax_last(p, scores, q.type);
  const Value context = p.dot(probs, values, {0, 1, 2}, {0, 1, 2}, {4}, {3}, DType::kF32);
  const Value rows = p.reshape(context, {b, heads, padded, d});
  return padded == l ? rows : p.slice(rows, {0, 0, 0, 0}, {b, heads, l, d});
}

Value softmax_last(Program& p, const Value& scores, DType product) {
  const auto last = static_cast<std::int64_t>(scores.dims.size()) - 1;
  Dims keep;
  for (std::int64_t i = 0; i < last; ++i) keep.push_back(i);
  const Value row_max = p.broadcast(p.reduce(scores, "maximum", {last}), scores.dims, keep);
  const Value e = p.unary("exponential", p.binary("subtract", scores, row_max));
  const Value sum = p.broadcast(p.reduce(e, "add", {last}), scores.dims, keep);
  return p.convert(p.binary("divide", e, sum), product);
}

}  // namespace mcinfer::pjrt
