#pragma once
// The arithmetic of a model's dense layers, as a request and as a result. Which precisions a
// device can run, and why one is chosen, is the backend's to say (backend::Backend).

#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace mcinfer::model {

// fp32 reproduces transformers to ~1e-5; bf16 rounds GEMM inputs to bfloat16 (f32 accumulation,
// LayerNorm/softmax/GELU/residuals in f32); int8 quantizes the four dense GEMMs of each layer
// (weights per output channel, activations per token row, s32 accumulation). kAuto appears only
// in requests: a backend resolves it to fp32 or bf16, never int8.
enum class Precision { kAuto, kFp32, kBf16, kInt8 };

inline constexpr EnumNames<Precision, 4> kPrecisionNames{{{
    {Precision::kAuto, "auto"},
    {Precision::kFp32, "fp32"},
    {Precision::kBf16, "bf16"},
    {Precision::kInt8, "int8"},
}}};
inline std::string_view precision_name(Precision p) { return kPrecisionNames.name(p); }
inline std::optional<Precision> parse_precision(std::string_view name) {
  return kPrecisionNames.parse(name);
}

// What a backend chose for a request.
struct PrecisionChoice {
  Precision precision = Precision::kFp32;  // never kAuto
  std::string native_isa;  // the instructions that run it ("amx_bf16", "amx_int8", ...; CPU)
  std::string reason;      // one line for the run's first line and the report
};

}  // namespace mcinfer::model
