#pragma once
// From a sequence's last hidden states to its sentence embedding, the way sentence-transformers
// does it: pooling (one or more modes, concatenated), then Dense layers, then L2 normalisation.
// Plain float math on [tokens, hidden] rows, no GEMM library: a few vectors per sequence next to
// the encoder's millions of multiply-adds per token (`run --profile` on all-MiniLM-L6-v2 and
// examples/sentences.csv: pooling + Normalize take 0.02% of the time; a 768 -> 768 Dense adds
// 0.6 M multiply-adds per row, against ~85 M per token in BERT-base's layers).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace mcinfer::model {

// In sentence-transformers' concatenation order (Pooling.forward: cls, max, mean, mean_sqrt_len,
// weightedmean, lasttoken).
enum class Pooling { kCls, kMax, kMean, kMeanSqrtLen, kWeightedMean, kLastToken };
inline constexpr EnumNames<Pooling, 6> kPoolingNames{{{
    {Pooling::kCls, "cls"},
    {Pooling::kMax, "max"},
    {Pooling::kMean, "mean"},
    {Pooling::kMeanSqrtLen, "mean_sqrt_len"},
    {Pooling::kWeightedMean, "weightedmean"},
    {Pooling::kLastToken, "lasttoken"},
}}};
inline std::string_view pooling_name(Pooling mode) { return kPoolingNames.name(mode); }

// One pooling mode, or several whose vectors are concatenated (sentence-transformers' Pooling
// with more than one pooling_mode_* flag set).
struct PoolingModes {
  PoolingModes(Pooling mode) : modes{mode} {}  // NOLINT(google-explicit-constructor): a single mode
  // Sorted into the concatenation order; at least one mode, none twice.
  explicit PoolingModes(std::vector<Pooling> list);
  // Concatenated in the order given (sentence-transformers 6's pooling_mode list); at least one
  // mode, none twice.
  static PoolingModes in_given_order(std::vector<Pooling> list);

  std::vector<Pooling> modes;

  std::string name() const;  // "mean", "cls+max"
  std::int64_t width(std::int64_t hidden) const {
    return static_cast<std::int64_t>(modes.size()) * hidden;
  }
  bool has(Pooling mode) const;
  bool operator==(const PoolingModes& other) const = default;
};

// sentence-transformers' Dense module: activation(W x + b). Immutable after load; shared
// read-only by every replica.
enum class DenseActivation { kIdentity, kTanh, kRelu, kSigmoid, kGelu };
inline constexpr EnumNames<DenseActivation, 5> kDenseActivationNames{
    {{{DenseActivation::kIdentity, "identity"},
      {DenseActivation::kTanh, "tanh"},
      {DenseActivation::kRelu, "relu"},
      {DenseActivation::kSigmoid, "sigmoid"},
      {DenseActivation::kGelu, "gelu"}}}};
inline std::string_view dense_activation_name(DenseActivation activation) {
  return kDenseActivationNames.name(activation);
}

struct DenseLayer {
  std::string module;  // its folder in the model directory, e.g. "2_Dense"
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  std::vector<float> weight;  // [out, in]
  std::vector<float> bias;    // [out], empty without bias
  DenseActivation activation = DenseActivation::kTanh;
};

// Pools one sequence: `rows` holds its `length` kept tokens ([length, hidden], tokens with
// attention mask 0 already removed), `index` each kept token's position in the sequence as given
// (weighted mean weighs by position + 1, as sentence-transformers does on its right-padded
// batch). Writes modes.width(hidden) values. Masked tokens being absent, max and mean see only
// the tokens sentence-transformers counts (it sets masked positions to -1e9 for max and zeroes
// them for the means); CLS takes the first kept token.
void pool_sequence(const PoolingModes& modes, const float* rows, std::int64_t length,
                   std::int64_t hidden, std::span<const std::int32_t> index, float* out);

// out[layer.out_features] = activation(weight · in + bias).
void apply_dense(const DenseLayer& layer, const float* in, float* out);

// In place, like torch.nn.functional.normalize (norm clamped at 1e-12).
void l2_normalize(float* values, std::int64_t n);

}  // namespace mcinfer::model
