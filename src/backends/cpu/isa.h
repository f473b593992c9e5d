#pragma once
// The instruction sets our own kernels are compiled for. One binary carries all of them and
// picks the widest the CPU supports at run time.

#include <optional>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace mcinfer::cpu {

enum class Isa { kGeneric, kAvx2, kAvx512 };
inline constexpr EnumNames<Isa, 3> kIsaNames{{{
    {Isa::kGeneric, "generic"},
    {Isa::kAvx2, "avx2"},
    {Isa::kAvx512, "avx512"},
}}};
inline std::string_view isa_name(Isa isa) { return kIsaNames.name(isa); }
inline std::optional<Isa> parse_isa(std::string_view name) { return kIsaNames.parse(name); }
Isa best_isa();                     // the widest this CPU runs
std::vector<Isa> supported_isas();  // every one this CPU runs
// Both honour MCINFER_MAX_ISA (generic, avx2, avx512), our own kernels' equivalent of
// oneDNN's ONEDNN_MAX_CPU_ISA, for testing every path on one machine.

}  // namespace mcinfer::cpu
