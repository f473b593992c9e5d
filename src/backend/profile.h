#pragma once
// Where a replica's time goes, by kind of op, for `run --profile` and `bench --profile`. A
// backend that cannot time its ops (a compiled accelerator graph) leaves the profile empty.

#include <array>
#include <cstddef>
#include <string_view>

#include "core/enum_names.h"

namespace mcinfer::backend {

enum class OpKind {
  kGemm,
  kAttention,
  kLayerNorm,
  kActivation,
  kEmbedding,
  kPooling,
  kConvert,
  kCount
};
inline constexpr EnumNames<OpKind, 7> kOpKindNames{{{
    {OpKind::kGemm, "gemm"},
    {OpKind::kAttention, "attention"},
    {OpKind::kLayerNorm, "layernorm"},
    {OpKind::kActivation, "activation"},
    {OpKind::kEmbedding, "embedding"},
    {OpKind::kPooling, "pooling+head"},
    {OpKind::kConvert, "convert"},
}}};
inline std::string_view op_kind_name(OpKind kind) { return kOpKindNames.name(kind); }

// Seconds and FLOPs per op kind; one per replica (not shared between threads).
struct OpProfile {
  std::array<double, static_cast<std::size_t>(OpKind::kCount)> seconds{};
  std::array<double, static_cast<std::size_t>(OpKind::kCount)> flops{};
  void clear() {
    seconds.fill(0);
    flops.fill(0);
  }
  void add(const OpProfile& other) {
    for (std::size_t i = 0; i < seconds.size(); ++i) {
      seconds[i] += other.seconds[i];
      flops[i] += other.flops[i];
    }
  }
};

}  // namespace mcinfer::backend
