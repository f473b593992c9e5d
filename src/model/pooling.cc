#include "model/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace mcinfer::model {
namespace {

constexpr Pooling kAllModes[] = {Pooling::kCls,          Pooling::kMax,
                                 Pooling::kMean,         Pooling::kMeanSqrtLen,
                                 Pooling::kWeightedMean, Pooling::kLastToken};

}  // namespace

PoolingModes::PoolingModes(std::vector<Pooling> list) : modes(std::move(list)) {
  if (modes.empty()) fail("internal: no pooling mode");
  std::sort(modes.begin(), modes.end());
  if (std::adjacent_find(modes.begin(), modes.end()) != modes.end())
    fail("internal: a pooling mode given twice");
}

PoolingModes PoolingModes::in_given_order(std::vector<Pooling> list) {
  std::vector<Pooling> sorted = list;
  PoolingModes checked(std::move(sorted));  // the same checks
  checked.modes = std::move(list);
  return checked;
}

std::string PoolingModes::name() const {
  std::string out;
  for (Pooling mode : modes) {
    if (!out.empty()) out += '+';
    out += pooling_name(mode);
  }
  return out;
}

bool PoolingModes::has(Pooling mode) const {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

void pool_sequence(const PoolingModes& modes, const float* rows, std::int64_t length,
                   std::int64_t hidden, std::span<const std::int32_t> index, float* out) {
  if (length < 1) fail("internal: pooling a sequence without tokens");
  // Accumulate in double: long sequences must not lose the small tokens' contributions.
  std::vector<double> sum, weighted;
  if (modes.has(Pooling::kMean) || modes.has(Pooling::kMeanSqrtLen)) {
    sum.assign(static_cast<std::size_t>(hidden), 0.0);
    for (std::int64_t r = 0; r < length; ++r) {
      const float* row = rows + r * hidden;
      for (std::int64_t j = 0; j < hidden; ++j) sum[j] += row[j];
    }
  }
  double weight_total = 0;
  if (modes.has(Pooling::kWeightedMean)) {
    if (static_cast<std::int64_t>(index.size()) != length)
      fail("internal: weighted mean pooling without token positions");
    weighted.assign(static_cast<std::size_t>(hidden), 0.0);
    for (std::int64_t r = 0; r < length; ++r) {
      const double w = static_cast<double>(index[static_cast<std::size_t>(r)]) + 1.0;
      weight_total += w;
      const float* row = rows + r * hidden;
      for (std::int64_t j = 0; j < hidden; ++j) weighted[j] += w * row[j];
    }
  }
  const double count = static_cast<double>(length);
  for (Pooling mode : modes.modes) {
    switch (mode) {
      case Pooling::kCls:
        std::copy(rows, rows + hidden, out);
        break;
      case Pooling::kMax:
        for (std::int64_t j = 0; j < hidden; ++j) {
          float m = -std::numeric_limits<float>::infinity();
          for (std::int64_t r = 0; r < length; ++r) m = std::max(m, rows[r * hidden + j]);
          out[j] = m;
        }
        break;
      case Pooling::kMean:
        for (std::int64_t j = 0; j < hidden; ++j) out[j] = static_cast<float>(sum[j] / count);
        break;
      case Pooling::kMeanSqrtLen:
        for (std::int64_t j = 0; j < hidden; ++j)
          out[j] = static_cast<float>(sum[j] / std::sqrt(count));
        break;
      case Pooling::kWeightedMean:
        for (std::int64_t j = 0; j < hidden; ++j)
          out[j] = static_cast<float>(weighted[j] / weight_total);
        break;
      case Pooling::kLastToken:
        std::copy(rows + (length - 1) * hidden, rows + length * hidden, out);
        break;
    }
    out += hidden;
  }
}

void apply_dense(const DenseLayer& layer, const float* in, float* out) {
  const std::int64_t n = layer.in_features;
  for (std::int64_t o = 0; o < layer.out_features; ++o) {
    const float* w = layer.weight.data() + o * n;
    double acc = layer.bias.empty() ? 0.0 : layer.bias[static_cast<std::size_t>(o)];
    for (std::int64_t i = 0; i < n; ++i) acc += static_cast<double>(w[i]) * in[i];
    switch (layer.activation) {
      case DenseActivation::kIdentity:
        break;
      case DenseActivation::kTanh:
        acc = std::tanh(acc);
        break;
      case DenseActivation::kRelu:
        acc = std::max(acc, 0.0);
        break;
      case DenseActivation::kSigmoid:
        acc = 1.0 / (1.0 + std::exp(-acc));
        break;
      case DenseActivation::kGelu:  // torch.nn.GELU(): the exact (erf) form
        acc = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
        break;
    }
    out[o] = static_cast<float>(acc);
  }
}

void l2_normalize(float* values, std::int64_t n) {
  double norm = 0;
  for (std::int64_t j = 0; j < n; ++j) norm += static_cast<double>(values[j]) * values[j];
  const double scale = 1.0 / std::max(std::sqrt(norm), 1e-12);
  for (std::int64_t j = 0; j < n; ++j) values[j] = static_cast<float>(values[j] * scale);
}

}  // namespace mcinfer::model
