#pragma once
// The element-wise activations a checkpoint's layers use (config.json's hidden_act, the
// classification heads), as every backend implements them.

#include <optional>
#include <string_view>

#include "core/enum_names.h"

namespace mcinfer::model {

// kGeluErf is transformers' "gelu" (exact, erf-based); kGeluTanh its tanh approximation; kSilu
// x · sigmoid(x) ("silu", the gate of Qwen3's SwiGLU FFN).
enum class Activation { kNone, kGeluErf, kGeluTanh, kRelu, kTanh, kSilu };

inline constexpr EnumNames<Activation, 6> kActivationNames{{{
    {Activation::kNone, "none"},
    {Activation::kGeluErf, "gelu"},
    {Activation::kGeluTanh, "gelu_tanh"},
    {Activation::kRelu, "relu"},
    {Activation::kTanh, "tanh"},
    {Activation::kSilu, "silu"},
}}};
inline std::string_view activation_name(Activation a) { return kActivationNames.name(a); }

}  // namespace mcinfer::model
